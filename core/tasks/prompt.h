#pragma once
// A tokenized ICL prompt that knows where everything is: every demonstration's input, label and
// separator, the query input, the position N that predicts the answer, and the answer's tokens.
// Analyses address positions through it, never by hand-counted offsets (docs/architecture.md, "Tasks and
// prompts").
//
// Exact positions by construction: the prompt is tokenized segment by segment (prefix, each template
// piece, each input, each label, each separator), each segment on its own without BOS, and the ids are
// the concatenation; BOS is prepended once when the tokenizer adds one (or PromptOptions says so). So a
// segment's span is exactly the tokens that encode its text, and `ids` is exactly what the model sees.
// Segments continue the text before them: a tokenizer with a SentencePiece dummy prefix ("▁" before the
// text) gets it only on the first segment, as whole-text encoding would; later segments are encoded as
// continuations (see SegmentEncoder). Whole-text tokenization may still merge across a segment boundary
// (e.g. "\n\n" + "Q" in some BPEs); tokenizationMismatches() reports that, as a diagnostic only.
//
// Space convention (prompt_template.h): a template piece's trailing space goes to the input/label that
// follows it, so the answer segment is " " + answer when the template puts a space there, and
// answer_token is the first token of that segment, as whole-text tokenization of "A: y" would give.
#include <optional>
#include <string>
#include <vector>

#include "tasks/dataset.h"
#include "tasks/prompt_template.h"
#include "tokenizer/tokenizer.h"

namespace hs {

// Token positions [begin, end), end exclusive.
struct Span {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
  bool empty() const { return end <= begin; }
  bool contains(int pos) const { return pos >= begin && pos < end; }
  Span shifted(int by) const { return {begin + by, end + by}; }
  bool operator==(const Span& o) const { return begin == o.begin && end == o.end; }
  bool operator!=(const Span& o) const { return !(*this == o); }
};

// One tokenized piece of the prompt, for previews (token boundaries with their role).
struct PromptSegment {
  std::string role;  // "bos", "prefix", "input_prefix", "input", "input_suffix", "output_prefix", "label",
                     // "separator"
  int demo = -1;     // demonstration index, -1 for the prefix, BOS and the query
  std::string text;  // the exact text that was encoded ("" for BOS)
  Span span;
};

struct Prompt {
  std::vector<int> ids;             // [pos]
  std::vector<std::string> pieces;  // [pos] tokenizer.piece(ids[i]) for display
  struct Demo {
    Span input, label, separator;
    Span block;  // the whole demonstration, from its input_prefix to the end of its separator
  };
  std::vector<Demo> demos;
  Span query_input;
  int last = -1;                   // N: the final prompt position, the one whose logits predict the answer
  int answer_token = -1;           // first token of the answer segment (" " + answer per the template)
  std::vector<int> answer_tokens;  // all tokens of the answer segment
  std::string answer;              // the canonical answer text (query.outputs[0])
  std::string text;                // the prompt text without BOS (concatenated segment texts)
  int n_bos = 0;
  std::vector<PromptSegment> segments;

  int length() const { return static_cast<int>(ids.size()); }
  // ids[span] as a vector.
  std::vector<int> idsOf(const Span& s) const;
};

struct PromptOptions {
  std::optional<bool> add_bos;  // nullopt: prepend BOS iff the tokenizer does (Tokenizer::addsBos())
};

// Encodes text segments so that their concatenation reproduces whole-text encoding where the tokenizer
// allows it. A tokenizer whose encode() starts every text with a dummy-prefix space (SentencePiece,
// llama2.c) is detected once, by probing; its non-initial segments are encoded after an anchor ("\n")
// whose tokens are then removed, so "y" after "A:" does not get a spurious leading "▁".
class SegmentEncoder {
 public:
  explicit SegmentEncoder(const Tokenizer& tok);
  // at_start: the segment begins the text (only BOS before it).
  std::vector<int> encode(const std::string& text, bool at_start) const;
  // Tokens of `text` as it appears after other text: the form answers and labels take in a prompt.
  std::vector<int> continuation(const std::string& text) const { return encode(text, false); }
  bool dummyPrefix() const { return dummy_prefix_; }
  const Tokenizer& tokenizer() const { return tok_; }

 private:
  const Tokenizer& tok_;
  bool dummy_prefix_ = false;
};

// k-shot prompt: demos in order, then the query (its outputs[0] is the answer; the prompt stops before it).
Prompt buildPrompt(const Tokenizer& tok, const PromptTemplate& tmpl, const std::vector<Example>& demos,
                   const Example& query, const PromptOptions& opt = {});
// The same with no demonstrations.
Prompt zeroShotPrompt(const Tokenizer& tok, const PromptTemplate& tmpl, const Example& query,
                      const PromptOptions& opt = {});

// Diagnostic: the number of positions at which encoding prompt.text in one piece (with BOS when the
// prompt has one) differs from prompt.ids, over the longer of the two (0 = identical).
int tokenizationMismatches(const Tokenizer& tok, const Prompt& prompt);

// The prompt with `pad` copies of pad_id in front (left padding): every position moves by `pad`.
Prompt shifted(const Prompt& p, int pad, int pad_id);

// Left-padded batch, torch-free: row r is prompts[r] shifted by pad[r] so that all rows end together
// and every row's `last` is length - 1.
struct PromptBatch {
  std::vector<std::vector<int>> ids;             // [batch][length]
  std::vector<std::vector<int>> attention_mask;  // [batch][length] 1 = real token, 0 = padding
  std::vector<int> pad;                          // [batch] pad count
  std::vector<int> last;                         // [batch] N in padded coordinates
  std::vector<int> answer_token;                 // [batch]
  std::vector<Prompt> prompts;                   // [batch] shifted copies: spans in padded coordinates
  int length = 0;
  int pad_id = 0;
  int size() const { return static_cast<int>(ids.size()); }
};
PromptBatch batchPrompts(const std::vector<Prompt>& prompts, int pad_id);

}  // namespace hs
