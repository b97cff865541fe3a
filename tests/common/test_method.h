#pragma once
// A small analysis method that tests register at run time (registry.h registerMethod), to check that a
// method declared once appears everywhere: the CLI's commands and --help, the GUI's Run menu and options
// form and its views, runs, and saved sessions. It needs no task: the grid is each head's mean |z| at the
// last position of `k` seeded random-token prompts, times `scale`; the curve is the per-layer mean of the
// grid (a panel of the Task vectors tab), the table the largest head of each layer.
#include <ATen/ATen.h>

#include "analysis/framework/registry.h"
#include "analysis/toolkit/head_toolkit.h"

namespace hs::test {

struct EchoOptions {
  int k = 3;
  double scale = 0.5;
  std::string mode = "plain";
  bool absolute = true;
  std::vector<HeadRef> heads;  // heads zeroed in the grid
  uint64_t seed = 7;
};

inline const OptionTable<EchoOptions>& echoOptionTable() {
  static const OptionTable<EchoOptions> t =
      OptionTable<EchoOptions>()
          .add("k", &EchoOptions::k, "random prompts averaged", OptionCheck::range(1, 10))
          .add("scale", &EchoOptions::scale, "factor on every value", OptionCheck::positive())
          .add("mode", &EchoOptions::mode, "plain or doubled values",
               OptionCheck::oneOf({"plain", "doubled"}))
          .add("absolute", &EchoOptions::absolute, "mean of |z| (else of z)")
          .add("heads", &EchoOptions::heads, "heads set to zero in the grid")
          .add("seed", &EchoOptions::seed, "seed of the random prompts");
  return t;
}

inline AnalysisOutput runEcho(const Transformer& model, const EchoOptions& o, const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  at::manual_seed(static_cast<int64_t>(o.seed));
  TokenSeqs prompts;
  for (int i = 0; i < o.k; ++i) {
    const at::Tensor r = at::randint(c.vocab_size, {6}, at::kLong);  // [pos]
    prompts.emplace_back(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + 6);
  }
  const at::Tensor z = captureAtLast(model, prompts, attnZ, {}, ctx);  // [k, layers, heads, d_head]
  const at::Tensor v = (o.absolute ? z.abs() : z).mean(at::IntArrayRef{0, 3}).to(at::kDouble);  // [L, H]
  AnalysisOutput out;
  out.run.id = ctx.runId("echo");
  out.run.method = "echo";
  HeadGrid g;
  g.id = "echo.mean_z";
  g.name = "Mean |z| at the last position";
  g.unit = "z";
  g.values.resize(c.n_layers, c.n_heads);
  const double factor = o.scale * (o.mode == "doubled" ? 2.0 : 1.0);
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_heads; ++h)
      g.values(l, h) = factor * v[l][h].item<double>();
  for (const HeadRef& h : o.heads)
    g.values(h.layer, h.head) = 0;
  out.run.grids.push_back(g);
  Curve curve{"echo.per_layer", "Mean |z| per layer", "layer", "z", {}, {{"mean", {}}}, {}};
  Table table{"echo.top_heads", "The largest head of each layer", {"layer", "head", "value"}, {}, {}};
  for (int l = 0; l < c.n_layers; ++l) {
    curve.x.push_back(l);
    curve.series[0].second.push_back(g.values.row(l).mean());
    int h = 0;
    g.values.row(l).maxCoeff(&h);
    table.rows.push_back({l, h, g.values(l, h)});
  }
  out.run.curves.push_back(curve);
  out.run.tables.push_back(table);
  out.run.summary = {{"max", g.values.maxCoeff()}};
  out.addTensor("values", v);
  return out;
}

inline MethodInfo echoMethod() {
  MethodInfo m;
  m.name = "echo";
  m.title = "Echo: mean head output (test method)";
  m.description = "Each head's mean output size at the last position of random prompts.";
  m.options = echoOptionTable().specs();
  m.outputs = {{OutputSpec::Kind::Grid, "echo.mean_z", "z", "mean head output"},
               {OutputSpec::Kind::Curve, "echo.per_layer", "layer → z", "mean head output per layer",
                "Task vectors", "Echo per layer"},
               {OutputSpec::Kind::Table, "echo.top_heads", "z", "the largest head of each layer"}};
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    return runEcho(in.model, echoOptionTable().read(options), ctx);
  };
  return m;
}

// Registers echo once per process.
inline void registerEchoMethod() {
  if (!findMethod("echo")) registerMethod(echoMethod());
}

}  // namespace hs::test
