#pragma once
// The man page headscope-cli.1, its method commands generated from the registry: the hand-written
// template (packaging/man/headscope-cli.1.in) describes the tools and holds the line @METHOD_COMMANDS@,
// which becomes one section per method (its title, description, paper and every option with its flag,
// default, range and help), so the page documents exactly the flags the CLI has.
#include <string>

namespace hs::cli {

// The roff sections of every registered method that runs (imported ones have no command), in menu order.
std::string methodManSections();
// `templateText` with its @METHOD_COMMANDS@ line replaced by methodManSections(); fails when the line is
// missing.
std::string renderManPage(const std::string& templateText);

}  // namespace hs::cli
