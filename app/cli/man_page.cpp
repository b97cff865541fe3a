#include "man_page.h"

#include <sstream>

#include "analysis/framework/registry.h"
#include "cli_common.h"
#include "util/error.h"

namespace hs::cli {
namespace {

constexpr const char* kPlaceholder = "@METHOD_COMMANDS@";

// Text as roff: backslashes and hyphens escaped, no line starting with a control character.
std::string roff(const std::string& text) {
  std::string out;
  bool lineStart = true;
  for (char c : text) {
    if (lineStart && (c == '.' || c == '\'')) out += "\\&";
    lineStart = c == '\n';
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  return out;
}

// The placeholder of a value in the option's line: --help's, a Choice's choices spelled out.
std::string valueName(const OptionSpec& o) {
  if (o.type != OptionType::Choice) return optionTypeName(o.type);
  std::string c;
  for (const std::string& s : o.check.choices)
    c += (c.empty() ? "" : "|") + s;
  return c;
}

void writeOption(std::ostringstream& s, const OptionSpec& o) {
  s << ".TP\n";
  std::string flags = roff(o.cliFlag());
  if (!o.cliAlias().empty()) flags += ", " + roff(o.cliAlias());
  const bool negatable = o.type == OptionType::Bool && o.default_value == true;
  if (negatable) flags += ", " + roff("--no-" + o.cliFlag().substr(2));
  if (o.type == OptionType::Bool)
    s << ".B " << flags << "\n";
  else
    s << ".BI \"" << flags << "\" \" " << roff(valueName(o)) << "\"\n";
  const std::string def = o.defaultText();
  const std::string help = helpOf(o) + " (default " + (def.empty() ? std::string("none") : def) + ")";
  s << roff(help) << "\n";
}

void writeMethod(std::ostringstream& s, const MethodInfo& m) {
  s << ".SS \"" << m.name << " \\fIMODEL\\fR" << (m.takesTask() ? " [\\fItask options\\fR]" : "")
    << " [\\fIoptions\\fR] \\-\\-out \\fIRUN.hscope\\fR\"\n";
  s << ".B " << roff(m.title) << "\n";
  s << ".PP\n" << roff(m.description) << "\n";
  if (!m.paper.empty()) s << ".PP\nPaper: " << roff(m.paper) << ".\n";
  for (const OptionSpec& o : m.options)
    writeOption(s, o);
}

}  // namespace

std::string methodManSections() {
  std::ostringstream s;
  for (const MethodInfo& m : methods())
    if (!m.imported) writeMethod(s, m);
  return s.str();
}

std::string renderManPage(const std::string& templateText) {
  const std::string line = std::string(kPlaceholder) + "\n";
  const size_t at = templateText.find(line);
  if (at == std::string::npos) fail("the man page template has no line ", kPlaceholder);
  return templateText.substr(0, at) + methodManSections() + templateText.substr(at + line.size());
}

}  // namespace hs::cli
