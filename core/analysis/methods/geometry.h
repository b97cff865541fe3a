#pragma once
// The geometry views (docs/methods.md, "Geometry"): how the last-position hidden state of ICL prompts
// moves into the label subspace layer by layer, and where the prompts lie inside that subspace.
//  - curves geometry.alignment (‖P h‖/‖h‖) and geometry.logit_diff (⟨h, W_U[y*] − mean W_U[y']⟩) over
//    layers (the same computation as TSLA's, tsla.h subspaceCurves; series "baseline");
//  - at one layer (default: the one of maximal alignment) the 2-D projection of P h onto its top-2
//    principal directions over prompts (centred, Eigen SVD): table geometry.projection with columns
//    x, y, gold_label (index into the label words), gold_word, prompt (index); tensors "coordinates"
//    [prompts, 2] and "directions" [2, d_model].
// By default h is the raw residual and P, W_U the raw unembedding rows: the TSLA paper's formulas read
// literally, and the same as TSLA's own curves (TslaOptions::final_norm, off by default). With final_norm
// every h is first put through the model's final norm (finalNormed), so the curves measure what the
// unembedding reads: at the last layer the logit difference is the model's own.
// Prompts: "icl", with the label set.
#include <string>

#include "analysis/framework/analysis_context.h"
#include "analysis/framework/analysis_output.h"
#include "analysis/framework/registry.h"
#include "model/transformer.h"
#include "tasks/icl_task.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct GeometryOptions {
  int layer = -1;  // layer whose residual (after the layer) is projected; -1 = the layer of max alignment
  bool final_norm = false;  // measure the final-normed residual (what the unembedding reads); off: raw
};
const OptionTable<GeometryOptions>& geometryOptionTable();
MethodInfo geometryMethod();  // the registry record

// Top-2 principal coordinates of the rows of x [n, d] after centring: [n, 2] (a missing direction,
// when the rows span fewer than two, gives zeros). Each direction's sign is fixed so that its largest
// |component| is positive, so results are deterministic. `directions` receives [2, d] when not null,
// `explained` the share of variance of each direction.
Eigen::MatrixXd principalCoordinates(const Eigen::MatrixXd& x, Eigen::MatrixXd* directions = nullptr,
                                     Eigen::Vector2d* explained = nullptr);

AnalysisOutput runGeometry(const Transformer& model, const Tokenizer& tok, const IclTask& task,
                           const GeometryOptions& opts = {}, const AnalysisContext& ctx = {});

}  // namespace hs
