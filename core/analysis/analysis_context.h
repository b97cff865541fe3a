#pragma once
// What every analysis receives besides its inputs: progress reporting and cooperative cancellation,
// checked between forward passes. Throwing Cancelled unwinds without leaving state behind.
#include <functional>
#include <string>

#include "util/cancelled.h"

namespace hs {

struct AnalysisContext {
  std::function<void(double fraction, const std::string& message)> progress;  // fraction in [0, 1]
  std::function<bool()> cancelled;
  // Optional: a training curve while it is made (curve id, step, value), e.g. "site.loss" per Adam step,
  // so a viewer can draw it live. Training code calls reportPoint after each step.
  std::function<void(const std::string& curve, int step, double value)> point;

  void report(double fraction, const std::string& message) const {
    if (progress) progress(fraction, message);
  }
  void reportPoint(const std::string& curve, int step, double value) const {
    if (point) point(curve, step, value);
  }
  // Call between forward passes.
  void checkCancelled() const {
    if (cancelled && cancelled()) throw Cancelled();
  }
};

// A context that reports into [from, to) of the parent's progress, messages prefixed with `what`;
// cancellation passes through. The parent's callbacks are copied, so the child may outlive `ctx`.
inline AnalysisContext subContext(const AnalysisContext& ctx, double from, double to,
                                  const std::string& what) {
  AnalysisContext s;
  s.cancelled = ctx.cancelled;
  s.point = ctx.point;
  if (ctx.progress) {
    auto progress = ctx.progress;
    s.progress = [progress, from, to, what](double f, const std::string& m) {
      progress(from + (to - from) * f, what + (m.empty() ? "" : ": " + m));
    };
  }
  return s;
}

}  // namespace hs
