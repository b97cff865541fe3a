#pragma once
// The stages the induction and dual-route records (induction_run.h) share: the model-dependent setup of the
// dual-route prompts, the classic induction scores, the dual-route grids, the ablation tasks, the head
// orderings' grids (computed or read from earlier runs), the options' common entries and the run's record.
#include <string>
#include <vector>

#include "analysis/methods/dual_route.h"
#include "analysis/methods/induction_run.h"
#include "analysis/toolkit/ablation_curves.h"
#include "analysis/toolkit/induction_scores.h"
#include "tasks/toy/world.h"

namespace hs {

// A record's resolved model-dependent defaults and its vocabulary.
struct DualRouteSetup {
  DualRouteVocab vocab;
  DualRouteOptions options;
  nlohmann::json notes = nlohmann::json::array();
};

// Refuses bad counts and a words file that is not a regular file, before any work.
void checkInductionOptions(const InductionRunOptions& o, const std::string& method);
// The dual-route vocabulary (separator, fillers, concept words) and the resolved defaults on this model.
DualRouteSetup dualRouteSetup(const Transformer& model, const Tokenizer* tok, bool toyModel,
                              const InductionRunOptions& o, const std::string& method);
// The random-token vocabulary alone (BOS and random tokens as dualRouteSetup has them; no corpus, words or
// separator), for the records that draw only random tokens.
DualRouteSetup randomTokenSetup(const Transformer& model, const Tokenizer* tok, bool toyModel,
                                const InductionRunOptions& o);

// Classic induction and previous-token scores on repeated random tokens (toy world: its syllables, which
// induction prompts copy; otherwise the middle half of the vocabulary), setup.options.n_prompts sequences;
// the scored sequences are recorded as prompt set "induction".
InductionScores classicInductionScores(AnalysisOutput& out, const Transformer& model, const Tokenizer* tok,
                                       const DualRouteSetup& setup, const InductionRunOptions& o,
                                       const AnalysisContext& ctx);

// Token copying and (needs concept words) concept copying scores, each recorded with its prompts.
HeadGrid tokenCopyingGrid(AnalysisOutput& out, const Transformer& model, const DualRouteSetup& setup,
                          const AnalysisContext& ctx);
HeadGrid conceptCopyingGrid(AnalysisOutput& out, const Transformer& model, const DualRouteSetup& setup,
                            const AnalysisContext& ctx);
// Next-token (random-token entity) or last-token (concept word) matching, recorded with its prompts.
HeadGrid matchingGrid(AnalysisOutput& out, const Transformer& model, const DualRouteSetup& setup,
                      bool conceptRoute, const AnalysisContext& ctx);

// The grids of `files` (comma-separated run JSON files, or single grid JSON files) of the ids given, each
// checked against the model's layers × heads and named by its file in provenance.derived["grids_from"];
// the last file holding an id wins.
std::vector<HeadGrid> gridsFrom(const std::string& files, const ModelConfig& c,
                                const std::vector<std::string>& ids);

// The grids that order heads (list-tasks, concept-patching): read from o.grids_from where it holds them,
// else computed as `induction` and `dual-route` compute them, their prompts recorded.
// induction.prefix_matching only with `prefixMatching`; concept copying empty (no id) without concept words
// unless read. `sources`: {grid id: "computed" or the file it came from}.
struct OrderingGrids {
  HeadGrid prefix_matching;
  HeadGrid token_copying;
  HeadGrid concept_copying;
  nlohmann::json sources = nlohmann::json::object();
};
OrderingGrids orderingGrids(AnalysisOutput& out, const Transformer& model, const Tokenizer* tok,
                            const DualRouteSetup& setup, const InductionRunOptions& o, bool prefixMatching,
                            const AnalysisContext& ctx);

// The tasks of the ablations: the toy world's list tasks, or random-token copying (plus, for the curves,
// the list tasks of list_tasks.h) on other models. One of them is "copy_random", the induction task.
std::vector<NextTokenTask> ablationTasks(const Tokenizer* tok, bool toyModel, bool withListTasks,
                                         const DualRouteVocab& vocab, const InductionRunOptions& o,
                                         nlohmann::json& notes);
// Records a task's prompts as "ablation.<id>" with its one-token answers.
void recordAblationTask(AnalysisOutput& out, const NextTokenTask& task);

// The summary entries every record has: toy_model, vocab, n, filler, sep, notes.
nlohmann::json setupSummary(const DualRouteSetup& setup, bool toyModel);
// {grid id: its top k heads}.
nlohmann::json topHeadsOf(const std::vector<HeadGrid>& grids, int k);

// Options shared by several records, added to `t` with their common help: the dual-route prompts (n,
// n_matching when `matching`, seed, filler_len, entity_min, entity_max, sep, and with `fillers` filler,
// filler_corpus and words_file).
void addDualRoutePromptOptions(OptionTable<InductionRunOptions>& t, const std::string& nHelp, bool matching,
                               bool fillers);
// grids_from, with the grids it may hold named in `help`.
void addGridsFromOption(OptionTable<InductionRunOptions>& t, const std::string& help);

// The run's id, method and options; every result's method, every grid's model.
void finishRun(AnalysisOutput& out, const std::string& method, const OptionTable<InductionRunOptions>& table,
               const InductionRunOptions& o, const AnalysisContext& ctx);

}  // namespace hs
