// headscope-cli: JSON on stdout, messages on stderr; exit 0 on success, 1 with "error: ..." otherwise.
#include <c10/util/Exception.h>

#include <iostream>

#include "cli_common.h"
#include "model/thread_policy.h"
#include "util/allocator.h"
#include "util/error_text.h"

int main(int argc, char** argv) {
  hs::tuneAllocator();
  hs::applyThreadPolicy();  // model/thread_policy.h
  CLI::App app{"HeadScope command line: load checkpoints, tokenize, run and intervene on transformer heads",
               "headscope-cli"};
  app.set_version_flag("--version", std::string("headscope-cli ") + HEADSCOPE_VERSION);
  app.require_subcommand(1);
  hs::cli::buildCli(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help / --version exit 0 through here; real parse errors print usage and exit non-zero.
    return app.exit(e);
  } catch (const c10::Error& e) {  // torch's message without its C++ stack trace
    std::cerr << "error: " << e.what_without_backtrace() << std::endl;
    return 1;
  } catch (const std::exception& e) {  // also wrapped torch errors and allocation failures: one line
    std::cerr << "error: " << hs::errorText(e) << std::endl;
    return 1;
  }
  return 0;
}
