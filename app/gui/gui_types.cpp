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
      return "mean-ablate";
    case InterventionKind::PatchClean:
      return "patch from clean";
    case InterventionKind::Steer:
      return "steer";
  }
  return "?";
}

QString interventionLabel(const InterventionEntry& e) {
  QString label = QString("%1  L%2.H%3").arg(kindLabel(e.kind)).arg(e.head.layer).arg(e.head.head);
  if (e.kind == InterventionKind::Steer && e.scale != 1.0) label += QString("  ×%1").arg(e.scale);
  if (!e.positions.empty()) {
    QStringList p;
    for (int i : e.positions)
      p << QString::number(i);
    label += "  @ " + p.join(",");
  }
  return label;
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
