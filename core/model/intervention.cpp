#include "model/intervention.h"

#include "util/error.h"

namespace hs {

namespace {
struct OpName {
  InterventionOp op;
  const char* name;
};
constexpr OpName kOpNames[] = {
    {InterventionOp::Zero, "zero"},
    {InterventionOp::Mean, "mean"},
    {InterventionOp::Replace, "replace"},
    {InterventionOp::Add, "add"},
    {InterventionOp::Interpolate, "interpolate"},
    {InterventionOp::Scale, "scale"},
};
}  // namespace

const char* toString(InterventionOp op) {
  for (const OpName& o : kOpNames)
    if (o.op == op) return o.name;
  return "unknown";
}

InterventionOp parseInterventionOp(const std::string& s) {
  for (const OpName& o : kOpNames)
    if (s == o.name) return o.op;
  fail("unknown intervention op \"", s, "\" (expected zero, mean, replace, add, interpolate or scale)");
}

}  // namespace hs
