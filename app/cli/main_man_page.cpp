// headscope-man-page TEMPLATE OUT: writes headscope-cli.1 from its template with the method commands
// generated from the registry (man_page.h). Run by the build; not installed.
#include <fstream>
#include <iostream>
#include <sstream>

#include "man_page.h"
#include "util/file_text.h"
#include "util/user_message.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: headscope-man-page TEMPLATE OUT\n";
    return 2;
  }
  try {
    const std::string page = hs::cli::renderManPage(hs::readTextFile(argv[1], "man page template"));
    std::ofstream out(argv[2], std::ios::binary);
    out << page;
    out.close();
    if (!out) {
      std::cerr << argv[2] << ": cannot write the man page\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "headscope-man-page: " << hs::userMessage(e) << "\n";
    return 1;
  }
  return 0;
}
