#pragma once
// What every analysis receives besides its inputs: progress reporting and cooperative cancellation,
// checked between forward passes, and what its provenance records about the run (its id in the session,
// the model it ran on). Throwing Cancelled unwinds without leaving state behind.
#include <functional>
#include <string>

#include "model/thread_policy.h"
#include "util/cancelled.h"

namespace hs {

struct AnalysisContext {
  std::function<void(double fraction, const std::string& message)> progress;  // fraction in [0, 1]
  std::function<bool()> cancelled;
  // Optional: a training curve while it is made (curve id, step, value), e.g. "site.loss" per Adam step,
  // so a viewer can draw it live. Training code calls reportPoint after each step.
  std::function<void(const std::string& curve, int step, double value)> point;
  // The id the run gets in its session (unique there; registry.h uniqueRunId); "" = "<method>-1".
  std::string run_id;
  // The model as the user named it (path, hub id or "toy"), recorded in every provenance.
  std::string model_path;

  std::string runId(const std::string& method) const { return run_id.empty() ? method + "-1" : run_id; }

  void report(double fraction, const std::string& message) const {
    if (progress) progress(fraction, message);
  }
  void reportPoint(const std::string& curve, int step, double value) const {
    if (point) point(curve, step, value);
  }
  // Call between forward passes, on the computing thread: honours cancellation, and the thread policy
  // follows the machine's load (model/thread_policy.h; a no-op where HEADSCOPE_THREADS fixes the count).
  void checkCancelled() const {
    followLoad();
    if (cancelled && cancelled()) throw Cancelled();
  }
};

// A context that reports into [from, to) of the parent's progress, messages prefixed with `what` once: a
// message that already starts with it (the stage's own code naming what it does) keeps its wording, so a
// nested stage never reads "last-token matching: last-token matching: prompt 33/200". Cancellation passes
// through. The parent's callbacks are copied, so the child may outlive `ctx`.
inline AnalysisContext subContext(const AnalysisContext& ctx, double from, double to,
                                  const std::string& what) {
  AnalysisContext s;
  s.cancelled = ctx.cancelled;
  s.point = ctx.point;
  s.run_id = ctx.run_id;
  s.model_path = ctx.model_path;
  if (ctx.progress) {
    auto progress = ctx.progress;
    s.progress = [progress, from, to, what](double f, const std::string& m) {
      const bool named = m == what || m.rfind(what + ": ", 0) == 0;
      progress(from + (to - from) * f, named ? m : what + (m.empty() ? "" : ": " + m));
    };
  }
  return s;
}

}  // namespace hs
