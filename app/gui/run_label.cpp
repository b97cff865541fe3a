#include "run_label.h"

#include "analysis/framework/registry.h"
#include "gui_types.h"

namespace hs::gui {

namespace {

// One option's value as a label shows it: the form's text, a path by its file name, long values elided.
QString shortValue(const OptionSpec* spec, const nlohmann::json& value) {
  std::string text;
  try {
    text = spec ? optionText(*spec, value) : value.dump();
  } catch (const std::exception&) {
    text = value.dump();
  }
  QString t = QString::fromStdString(value.is_string() ? shortName(text) : text);
  return t.size() > 28 ? t.left(27) + "…" : t;
}

// The option is at its default: equal to it, or a shared-data folder the data roots filled in.
bool atDefault(const OptionSpec& o, const nlohmann::json& value) {
  if (value == o.default_value) return true;
  if (!o.check.data_folder.empty() && value.is_string()) {
    const std::string v = value.get<std::string>();
    const std::string& rel = o.check.data_folder;
    return v.size() >= rel.size() && v.compare(v.size() - rel.size(), rel.size(), rel) == 0;
  }
  // 1 and 1.0 are the same value.
  return value.is_number() && o.default_value.is_number() &&
         value.get<double>() == o.default_value.get<double>();
}

// Breaks a long unbroken value (a path, a list of heads) after its separators, so rich text can wrap it.
QString breakable(const QString& text) {
  QString out = text.toHtmlEscaped();
  for (const char* sep : {"/", ",", "_", ":"})
    out.replace(sep, QString(sep) + QChar(0x200B));  // zero-width space: a line may break there
  return out;
}

}  // namespace

QStringList nonDefaultOptions(const AnalysisRun& run) {
  QStringList out;
  const MethodInfo* m = findMethod(run.method);
  if (!m || !run.options.is_object()) return out;
  for (const OptionSpec& o : m->options) {
    const auto it = run.options.find(o.key);
    if (it == run.options.end() || atDefault(o, *it)) continue;
    out << QString::fromStdString(o.key) + "=" + shortValue(&o, *it);
  }
  return out;
}

QString runDisplayLabel(const AnalysisRun& run) {
  const QString label = QString::fromStdString(runLabel(run));
  const QStringList options = nonDefaultOptions(run);
  return options.isEmpty() ? label : label + " · " + options.join(", ");
}

QString runToolTip(const AnalysisRun& run) {
  QString tip = QString("<p><b>%1</b><br>run %2")
                    .arg(breakable(runDisplayLabel(run)), QString::fromStdString(run.id).toHtmlEscaped());
  const Provenance& p = run.provenance;
  if (!p.created.empty()) tip += " · created " + QString::fromStdString(p.created).toHtmlEscaped();
  tip += QString("<br>%1 grids, %2 curves, %3 tables")
             .arg(run.grids.size())
             .arg(run.curves.size())
             .arg(run.tables.size());
  if (!p.model.empty()) tip += "<br>model: " + breakable(QString::fromStdString(p.model));
  if (!p.task.empty())
    tip += "<br>task: " + breakable(QString::fromStdString(p.task)) +
           (p.n_prompts > 0 ? QString(" · %1 prompts").arg(p.n_prompts) : QString());
  tip += "</p>";
  const MethodInfo* m = findMethod(run.method);
  if (run.options.is_object() && !run.options.empty()) {
    tip += "<p><b>options</b> (bold: not the default)<br>";
    QStringList lines;
    for (auto it = run.options.begin(); it != run.options.end(); ++it) {
      if (it.key() == "task") continue;  // shown above
      const OptionSpec* spec = m ? m->option(it.key()) : nullptr;
      QString value;
      try {
        value = QString::fromStdString(spec ? optionText(*spec, *it) : it->dump());
      } catch (const std::exception&) {
        value = QString::fromStdString(it->dump());
      }
      if (value.size() > 160) value = value.left(159) + "…";
      QString line = QString::fromStdString(it.key()).toHtmlEscaped() + " = " + breakable(value);
      if (spec && !atDefault(*spec, *it)) line = "<b>" + line + "</b>";
      lines << line;
    }
    tip += lines.join("<br>") + "</p>";
  }
  const QStringList numbers = summaryNumbers(run.summary);
  if (!numbers.isEmpty()) {
    QStringList escaped;
    for (const QString& n : numbers.mid(0, 24))
      escaped << breakable(n);
    tip += "<p><b>summary</b><br>" + escaped.join("<br>") + (numbers.size() > 24 ? "<br>…" : "") + "</p>";
  }
  return tip;
}

}  // namespace hs::gui
