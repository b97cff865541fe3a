#pragma once
// The analyses the GUI can run, by method name. A job is a plain function of the loaded model, the
// current task and the job's options; it reports progress and checks cancellation through the
// AnalysisContext, and returns the AnalysisOutput the session stores. An analysis that lands in
// core/analysis plugs in with one line in analysisJobs() (analysis_jobs.cpp).
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/analysis_context.h"
#include "analysis/analysis_output.h"
#include "analysis/icl_task.h"
#include "model/load/model_loader.h"

namespace hs::gui {

using AnalysisJob = std::function<AnalysisOutput(const LoadedModel& model, const TaskSpec& task,
                                                 const nlohmann::json& options, const AnalysisContext& ctx)>;

// Method name ("induction", "tsla", "fv", "site", "ltv", "geometry") → job. Only the analyses built into
// this binary are listed.
const std::map<std::string, AnalysisJob>& analysisJobs();

// Induction / previous-token scores on repeated random tokens (the task is not used). Options:
// span (20), n_sequences (16), seed (1), chunk (16: sequences per forward; cancellation is checked
// between chunks, and the scores are the exact mean over all sequences).
AnalysisOutput runInductionJob(const LoadedModel& model, const TaskSpec& task, const nlohmann::json& options,
                               const AnalysisContext& ctx);

}  // namespace hs::gui
