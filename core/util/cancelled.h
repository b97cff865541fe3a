#pragma once
// Cooperative cancellation: what AnalysisContext::checkCancelled (analysis/framework/analysis_context.h)
// throws when the user cancels a job. It lives in util so that withContext (error.h) can let it through
// unchanged: a cancelled job is not a failure and must not arrive as an hs::Error with a context prefix.
#include <stdexcept>

namespace hs {

struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("cancelled") {}
};

}  // namespace hs
