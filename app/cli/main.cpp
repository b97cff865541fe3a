// headscope-cli: JSON on stdout, messages on stderr; exit 0 on success, 1 with "error: ..." otherwise.
#include <iostream>

#include "../common/data_roots.h"
#include "cli_common.h"
#include "model/blas_buffers.h"
#include "model/io/mapped_file.h"
#include "model/thread_policy.h"
#include "util/allocator.h"
#include "util/user_message.h"

int main(int argc, char** argv) {
  hs::tuneAllocator();
  hs::applyThreadPolicy();  // model/thread_policy.h
  try {
    hs::reserveBlasBuffers();  // before memory can run short (model/blas_buffers.h)
  } catch (const std::exception& e) {
    std::cerr << "error: " << hs::userMessage(e) << std::endl;
    return 1;
  }
  // A model file truncated on disk while mapped: one line naming it and exit 1, not a SIGBUS.
  hs::installMappedFileFaultHandler(hs::MappedFileFaultMode::Exit);
  hs::useAppDataRoots();  // where empty shared-data options look (common/data_roots.h)
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
  } catch (const std::exception& e) {  // torch errors (wrapped or not) and allocation failures: one line
    std::cerr << "error: " << hs::userMessage(e) << std::endl;
    return 1;
  }
  return 0;
}
