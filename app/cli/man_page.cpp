#include "man_page.h"

#include <sstream>

#include "analysis/registry.h"
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

// The placeholder of a value in the option's line (what --help shows as its type).
std::string valueName(const OptionSpec& o) {
  switch (o.type) {
    case OptionType::Int:
      return "N";
    case OptionType::Real:
      return "X";
    case OptionType::Text:
      return "TEXT";
    case OptionType::Choice: {
      std::string c;
      for (const std::string& s : o.check.choices)
        c += (c.empty() ? "" : "|") + s;
      return c;
    }
    case OptionType::File:
      return "FILE";
    case OptionType::IntList:
      return "N,N,...";
    case OptionType::HeadList:
      return "L.H,...";
    case OptionType::Bool:
      return "";
  }
  return "";
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
  std::string help = o.help;
  const std::string def = o.defaultText();
  help += " (default " + (def.empty() ? std::string("none") : def);
  if (!o.rangeText().empty() && o.type != OptionType::Choice) help += "; range " + o.rangeText();
  help += ")";
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
