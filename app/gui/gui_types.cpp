#include "gui_types.h"

#include "head_grid_view.h"

namespace hs::gui {

QString interventionLabel(const InterventionEntry& e) {
  const QString kind = e.kind == "zero_ablate"   ? "zero-ablate"
                       : e.kind == "mean_ablate" ? "mean-ablate"
                       : e.kind == "patch_clean" ? "patch from clean"
                       : e.kind == "steer"       ? "steer"
                                                 : e.kind;
  return QString("%1  L%2.H%3").arg(kind).arg(e.head.layer).arg(e.head.head);
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
