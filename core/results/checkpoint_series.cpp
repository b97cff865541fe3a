#include "results/checkpoint_series.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

namespace hs {

std::vector<HeadRef> CheckpointSeries::topAtLast(int k) const {
  std::vector<int> rows(static_cast<size_t>(values.rows()));
  std::iota(rows.begin(), rows.end(), 0);
  if (values.cols() == 0 || heads == 0) return {};
  const Eigen::Index last = values.cols() - 1;
  // NaN (a head a checkpoint lacks) after every number, so the order stays a strict weak ordering.
  std::stable_sort(rows.begin(), rows.end(), [&](int a, int b) {
    const double va = values(a, last), vb = values(b, last);
    if (std::isnan(va) || std::isnan(vb)) return !std::isnan(va) && std::isnan(vb);
    return va > vb;
  });
  std::vector<HeadRef> out;
  for (int i = 0; i < k && i < static_cast<int>(rows.size()); ++i)
    out.push_back({rows[static_cast<size_t>(i)] / heads, rows[static_cast<size_t>(i)] % heads});
  return out;
}

double runStep(const AnalysisRun& run) {
  const nlohmann::json& o = run.provenance.options;
  if (o.is_object() && o.contains("step") && o["step"].is_number()) return o["step"].get<double>();
  return -1;
}

std::vector<CheckpointSeries> checkpointSeries(const std::vector<AnalysisRun>& runs) {
  struct Column {
    double step;
    std::string checkpoint, run;
    const HeadGrid* grid;
  };
  std::map<std::pair<std::string, std::string>, std::vector<Column>> groups;  // (model, grid id) → columns
  for (const AnalysisRun& r : runs) {
    const double step = runStep(r);
    if (step < 0) continue;
    const std::string& m = r.provenance.model;
    const std::string model = m.substr(0, m.find('@'));
    const nlohmann::json& o = r.provenance.options;
    const std::string ckpt = o.contains("checkpoint") && o["checkpoint"].is_string()
                                 ? o["checkpoint"].get<std::string>()
                                 : "step " + std::to_string(static_cast<long long>(step));
    for (const HeadGrid& g : r.grids)
      groups[{model, g.id}].push_back({step, ckpt, r.id, &g});
  }
  std::vector<CheckpointSeries> out;
  for (auto& [key, cols] : groups) {
    std::stable_sort(cols.begin(), cols.end(),
                     [](const Column& a, const Column& b) { return a.step < b.step; });
    const HeadGrid& first = *cols.front().grid;
    std::vector<const Column*> kept;
    for (const Column& c : cols)
      if (c.grid->layers() == first.layers() && c.grid->heads() == first.heads()) kept.push_back(&c);
    if (kept.size() < 2) continue;
    CheckpointSeries s;
    s.model = key.first;
    s.grid_id = key.second;
    s.name = first.name;
    s.unit = first.unit;
    s.layers = first.layers();
    s.heads = first.heads();
    s.values.resize(static_cast<Eigen::Index>(s.layers) * s.heads, static_cast<Eigen::Index>(kept.size()));
    for (size_t j = 0; j < kept.size(); ++j) {
      s.steps.push_back(kept[j]->step);
      s.checkpoints.push_back(kept[j]->checkpoint);
      s.run_ids.push_back(kept[j]->run);
      for (int l = 0; l < s.layers; ++l)
        for (int h = 0; h < s.heads; ++h)
          s.values(l * s.heads + h, static_cast<Eigen::Index>(j)) = kept[j]->grid->values(l, h);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace hs
