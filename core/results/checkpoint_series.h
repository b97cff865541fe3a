#pragma once
// Learning dynamics: one head grid across the training checkpoints of a model. Runs whose provenance
// options carry a training "step" (the published dual-route runs of OLMo-2 and Pythia checkpoints, or any
// run that records one) are grouped by model (the run's model up to an "@checkpoint" suffix) and grid id;
// every group with at least two checkpoints is a series: each head's value at each step.
#include <Eigen/Core>

#include <string>
#include <vector>

#include "results/results.h"

namespace hs {

struct CheckpointSeries {
  std::string model;    // e.g. "OLMo-2-1124-7B"
  std::string grid_id;  // e.g. "dual_route.concept_copying"
  std::string name, unit;
  std::vector<double> steps;             // ascending training steps
  std::vector<std::string> checkpoints;  // [steps] labels ("stage1-step1000-tokens5B", "step1000")
  std::vector<std::string> run_ids;      // [steps] the run each column comes from
  int layers = 0, heads = 0;
  Eigen::MatrixXd values;  // [layers * heads, steps]; row l * heads + h

  std::string label() const { return model + " · " + (name.empty() ? grid_id : name); }
  // The heads whose value at the last checkpoint is highest, best first (ties: layer-major order; NaN last).
  std::vector<HeadRef> topAtLast(int k) const;
};

// The training step a run records (provenance.options["step"]), or -1.
double runStep(const AnalysisRun& run);
// Every series of `runs`, sorted by model then grid id. Grids of differing shapes within one model are
// not mixed (the first shape seen wins; the others are left out).
std::vector<CheckpointSeries> checkpointSeries(const std::vector<AnalysisRun>& runs);

}  // namespace hs
