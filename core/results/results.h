#pragma once
// Plain value types every analysis returns and every view shows. No torch, no Qt: widgets and the
// session format read them directly. Stable ids (e.g. "tsla.tr"), never display names, go into files.
#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hs {

// Where a result came from: enough to reproduce it.
struct Provenance {
  std::string method;  // "tsla", "induction", "fv", "site", "ltv", "geometry", "patch"
  std::string model;   // model path as loaded
  std::string task;    // dataset / task id
  uint64_t seed = 0;
  int n_prompts = 0;
  nlohmann::json options = nlohmann::json::object();  // every option with its value, defaults included
  std::string created;                                // ISO-8601 UTC time
  // What the run derived from its options and inputs, for a reader (the mean ablation's source in words,
  // the prompts evaluated): not options, so a rerun never passes them back.
  nlohmann::json derived = nlohmann::json::object();
};

// A layer × head matrix: values(l, h). Rows are layers (0 = first), columns are query heads.
struct HeadGrid {
  std::string id;          // stable, e.g. "tsla.tr"
  std::string name;        // for display, e.g. "Task recognition ‖P a‖"
  std::string unit;        // e.g. "logit", "ΔP", "score"
  Eigen::MatrixXd values;  // [layers, heads]
  Provenance provenance;
  // The standard error of each head's value ([layers, heads]; NaN where unknown), for a value that is a
  // mean over prompts: sd / √n (results/intervals.h). Empty: the grid has none (a learned weight, an
  // older session).
  Eigen::MatrixXd se = Eigen::MatrixXd();

  bool hasSe() const { return se.rows() == values.rows() && se.cols() == values.cols() && se.size() > 0; }
  int layers() const { return static_cast<int>(values.rows()); }
  int heads() const { return static_cast<int>(values.cols()); }
};

// The 95 % interval of every point of one series of a curve (NaN where unknown).
struct SeriesInterval {
  std::string series;          // the series id it belongs to
  std::vector<double> lo, hi;  // [x.size()]
};

// One or more named series over a shared x axis (accuracy vs layer, ablation curves over k, ...).
struct Curve {
  std::string id, name, x_label, y_label;
  std::vector<double> x;
  std::vector<std::pair<std::string, std::vector<double>>> series;  // (series id/label, y values [x.size()])
  Provenance provenance;
  // Per-point 95 % intervals of some series (results/intervals.h: Wilson for a proportion, a bootstrap
  // over prompts for a mean, the t interval over random draws). Series without one have none.
  std::vector<SeriesInterval> intervals = {};

  // The interval of series `id`, or nullptr.
  const SeriesInterval* intervalOf(const std::string& id) const {
    for (const SeriesInterval& i : intervals)
      if (i.series == id) return &i;
    return nullptr;
  }
};

// A small table of named columns (metrics under interventions, top heads, ...).
struct Table {
  std::string id, name;
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;  // each row has columns.size() cells (numbers or strings)
  Provenance provenance;
};

// One prompt a run used, exactly as the model saw it: enough to recompute the run's numbers from the
// session alone. `set` says what the prompt was for ("icl", "zero_shot", "clean", "corrupt", "eval",
// "train", "mean", ...; each method documents its sets).
struct PromptRecord {
  std::string set;
  std::vector<int64_t> ids;         // [pos] the token ids, BOS included
  int query_pos = -1;               // the position whose logits are read (N; -1 when none)
  std::vector<int64_t> answer_ids;  // the answer's tokens (the first is what accuracy reads)
  std::vector<int64_t> label_ids;   // the label set the prompt was scored against (empty: none)
};

// Everything one analysis run produced. Large tensors (task embeddings, learned vectors) live beside
// it in the session file under tensor names listed in `tensors`.
struct AnalysisRun {
  std::string id;      // unique within a session, e.g. "tsla-1" (registry.h uniqueRunId)
  std::string method;  // as in Provenance::method
  nlohmann::json options = nlohmann::json::object();
  Provenance provenance;  // the run's own: method, model, task, seed, prompts, options, created
  std::vector<HeadGrid> grids;
  std::vector<Curve> curves;
  std::vector<Table> tables;
  std::vector<PromptRecord> prompts;                  // the prompts it ran on, by set
  std::vector<std::string> tensors;                   // names of the session tensors this run owns
  nlohmann::json summary = nlohmann::json::object();  // headline numbers (accuracies, ratios)
};

// A (layer, head) pair, ordered layer-major.
struct HeadRef {
  int layer = 0, head = 0;
  bool operator<(const HeadRef& o) const { return layer != o.layer ? layer < o.layer : head < o.head; }
  bool operator==(const HeadRef& o) const { return layer == o.layer && head == o.head; }
};

// Heads as text, "layer.head" joined by `sep`: "2.7,2.2,2.5" (the form tables, summaries and
// `--ablate` use).
std::string headsText(const std::vector<HeadRef>& heads, const std::string& sep = ",");

}  // namespace hs
