#pragma once
// Files HeadScope ships beside its programs (the toy model, a neutral text corpus), found relative to the
// running executable as in an installed prefix (<prefix>/bin + <prefix>/share/headscope), then under
// /usr/share/headscope. The build tree has the same layout (build/share/headscope links to resources/),
// so no path of the build machine is baked into a program.
#include <string>
#include <vector>

namespace hs {

// The folder of the running executable ("" when /proc/self/exe cannot be read).
std::string executableDir();
// Where share/headscope/<rel> is looked for, in order.
std::vector<std::string> resourceCandidates(const std::string& rel);
// The first candidate that exists, or "" when none does.
std::string findResource(const std::string& rel);

}  // namespace hs
