#include "gui_types.h"

#include "head_grid_view.h"

namespace hs::gui {

void registerMetaTypes() {
  qRegisterMetaType<ModelInfo>();
  qRegisterMetaType<PromptView>();
  qRegisterMetaType<PatternView>();
  qRegisterMetaType<HeadGrid>();
  qRegisterMetaType<std::vector<HeadGrid>>();
  qRegisterMetaType<std::vector<HeadRef>>();
  qRegisterMetaType<HeadRef>();
}

}  // namespace hs::gui
