#include "gui_types.h"

#include "head_grid_view.h"
#include "util/error.h"

namespace hs::gui {

const char* kindKey(InterventionKind k) {
  switch (k) {
    case InterventionKind::ZeroAblate:
      return "zero_ablate";
    case InterventionKind::MeanAblate:
      return "mean_ablate";
    case InterventionKind::PatchClean:
      return "patch_clean";
    case InterventionKind::Steer:
      return "steer";
  }
  return "?";
}

InterventionKind parseInterventionKind(const std::string& key) {
  for (InterventionKind k : kInterventionKinds)
    if (key == kindKey(k)) return k;
  fail("unknown intervention kind \"", key, "\" (kinds: zero_ablate, mean_ablate, patch_clean, steer)");
}

QString kindLabel(InterventionKind k) {
  switch (k) {
    case InterventionKind::ZeroAblate:
      return "zero-ablate";
    case InterventionKind::MeanAblate:
      return "mean-ablate (corpus mean)";
    case InterventionKind::PatchClean:
      return "patch from clean";
    case InterventionKind::Steer:
      return "steer";
  }
  return "?";
}

const char* sourceKey(VectorSource s) {
  switch (s) {
    case VectorSource::CleanMean:
      return "clean_mean";
    case VectorSource::Mean:
      return "mean";
    case VectorSource::Prompt:
      return "prompt";
    case VectorSource::Text:
      return "text";
  }
  return "?";
}

VectorSource parseVectorSource(const std::string& key) {
  for (VectorSource s :
       {VectorSource::CleanMean, VectorSource::Mean, VectorSource::Prompt, VectorSource::Text})
    if (key == sourceKey(s)) return s;
  fail("unknown vector source \"", key, "\" (sources: clean_mean, mean, prompt, text)");
}

QString sourceLabel(VectorSource s) {
  switch (s) {
    case VectorSource::CleanMean:
      return "clean ICL mean";
    case VectorSource::Mean:
      return "corpus mean";
    case VectorSource::Prompt:
      return "ICL prompt";
    case VectorSource::Text:
      return "text";
  }
  return "?";
}

QString interventionLabel(const InterventionEntry& e) {
  QString label = QString("%1  L%2.H%3").arg(kindLabel(e.kind)).arg(e.head.layer).arg(e.head.head);
  if (e.kind == InterventionKind::Steer && e.scale != 1.0) label += QString("  ×%1").arg(e.scale);
  if (e.hasSource()) {
    if (e.source == VectorSource::Mean) label += "  from corpus mean";
    if (e.source == VectorSource::Prompt) label += QString("  from ICL prompt %1").arg(e.sourcePrompt);
    if (e.source == VectorSource::Text) {
      const QString t = e.sourceText.simplified();
      label += QString("  from “%1”").arg(t.size() > 18 ? t.left(17) + "…" : t);
    }
  }
  if (e.kind == InterventionKind::Steer && e.layer >= 0) label += QString("  → resid_pre L%1").arg(e.layer);
  if (!e.positions.empty()) {
    QStringList p;
    for (int i : e.positions)
      p << QString::number(i);
    label += "  @ " + p.join(",");
  }
  return label;
}

QStringList summaryNumbers(const nlohmann::json& summary) {
  QStringList out;
  if (!summary.is_object()) return out;
  auto number = [](const QString& key, const nlohmann::json& v) {
    return QString("%1 %2").arg(key).arg(v.get<double>(), 0, 'g', 4);
  };
  for (auto it = summary.begin(); it != summary.end(); ++it) {
    const QString key = QString::fromStdString(it.key());
    if (it->is_number()) {
      out << number(key, *it);
    } else if (it->is_object()) {
      for (auto in = it->begin(); in != it->end(); ++in)
        if (in->is_number()) out << number(key + "." + QString::fromStdString(in.key()), *in);
    }
  }
  return out;
}

void registerMetaTypes() {
  qRegisterMetaType<ModelInfo>();
  qRegisterMetaType<PromptView>();
  qRegisterMetaType<PatternView>();
  qRegisterMetaType<TaskPreview>();
  qRegisterMetaType<EvalResult>();
  qRegisterMetaType<InterventionEntry>();
  qRegisterMetaType<std::vector<InterventionEntry>>();
  qRegisterMetaType<AnalysisOutputPtr>();
  qRegisterMetaType<HeadGrid>();
  qRegisterMetaType<std::vector<HeadGrid>>();
  qRegisterMetaType<std::vector<HeadRef>>();
  qRegisterMetaType<HeadRef>();
}

}  // namespace hs::gui
