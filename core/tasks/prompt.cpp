#include "tasks/prompt.h"

#include <algorithm>

#include "util/error.h"

namespace hs {
namespace {

bool startsWith(const std::vector<int>& v, const std::vector<int>& prefix) {
  return v.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), v.begin());
}

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Text segments of a prompt before tokenization.
struct RawSegment {
  std::string role;
  int demo;
  std::string text;
};

// A template piece's trailing space belongs to the input/label right after it (see prompt_template.h).
void moveTrailingSpaces(std::vector<RawSegment>& segs) {
  for (size_t i = 1; i < segs.size(); ++i) {
    if (segs[i].role != "input" && segs[i].role != "label") continue;
    // The nearest non-empty segment before it.
    size_t j = i;
    while (j > 0 && segs[j - 1].text.empty())
      --j;
    if (j == 0) continue;
    RawSegment& prev = segs[j - 1];
    if (prev.role == "input" || prev.role == "label") continue;
    if (!prev.text.empty() && prev.text.back() == ' ') {
      prev.text.pop_back();
      segs[i].text = " " + segs[i].text;
    }
  }
}

}  // namespace

std::vector<int> Prompt::idsOf(const Span& s) const {
  if (s.begin < 0 || s.end > length() || s.begin > s.end)
    fail("prompt span [", s.begin, ", ", s.end, ") is outside a prompt of ", length(), " tokens");
  return std::vector<int>(ids.begin() + s.begin, ids.begin() + s.end);
}

SegmentEncoder::SegmentEncoder(const Tokenizer& tok) : tok_(tok) {
  // A continuation must encode the same inside a text as alone. Where "\n" + w differs from
  // encode("\n") + encode(w), encode() puts something (the dummy-prefix space) in front of every text.
  for (const char* w : {"Q", "a"}) {
    const auto whole = tok_.encode(std::string("\n") + w, false);
    const auto parts = concat(tok_.encode("\n", false), tok_.encode(w, false));
    if (whole != parts) dummy_prefix_ = true;
  }
}

std::vector<int> SegmentEncoder::encode(const std::string& text, bool at_start) const {
  if (text.empty()) return {};
  if (at_start || !dummy_prefix_) return tok_.encode(text, false);
  // Encode after an anchor that takes the dummy prefix, then drop the anchor's tokens. The anchor must
  // not merge with the text: checked by the prefix test, next anchor otherwise.
  for (const char* anchor : {"\n", ".", "|"}) {
    const auto a = tok_.encode(anchor, false);
    const auto e = tok_.encode(anchor + text, false);
    if (startsWith(e, a) && e.size() > a.size()) return std::vector<int>(e.begin() + a.size(), e.end());
  }
  return tok_.encode(text, false);  // no anchor separates cleanly: the dummy prefix stays
}

Prompt buildPrompt(const Tokenizer& tok, const PromptTemplate& tmpl, const std::vector<Example>& demos,
                   const Example& query, const PromptOptions& opt) {
  if (query.outputs.empty()) fail("buildPrompt: the query \"", query.input, "\" has no output");
  for (size_t d = 0; d < demos.size(); ++d)
    if (demos[d].outputs.empty())
      fail("buildPrompt: demonstration ", d, " (\"", demos[d].input, "\") has no output");

  std::vector<RawSegment> segs;
  segs.push_back({"prefix", -1, tmpl.prefix});
  for (size_t d = 0; d < demos.size(); ++d) {
    const int di = static_cast<int>(d);
    segs.push_back({"input_prefix", di, tmpl.input_prefix});
    segs.push_back({"input", di, demos[d].input});
    segs.push_back({"input_suffix", di, tmpl.input_suffix});
    segs.push_back({"output_prefix", di, tmpl.output_prefix});
    segs.push_back({"label", di, demos[d].outputs[0]});
    segs.push_back({"separator", di, tmpl.example_separator});
  }
  segs.push_back({"input_prefix", -1, tmpl.input_prefix});
  segs.push_back({"input", -1, query.input});
  segs.push_back({"input_suffix", -1, tmpl.input_suffix});
  segs.push_back({"output_prefix", -1, tmpl.output_prefix});
  segs.push_back({"label", -1, query.outputs[0]});  // the answer: resolved below, not part of the prompt
  moveTrailingSpaces(segs);
  const std::string answerText = segs.back().text;
  segs.pop_back();

  Prompt p;
  p.answer = query.outputs[0];
  p.demos.resize(demos.size());
  const SegmentEncoder enc(tok);
  if (opt.add_bos.value_or(tok.addsBos())) {
    if (tok.bosId() < 0)
      fail("buildPrompt: BOS requested but the ", tok.kind(), " tokenizer has no BOS token");
    p.ids.push_back(tok.bosId());
    p.n_bos = 1;
    p.segments.push_back({"bos", -1, "", {0, 1}});
  }
  bool atStart = true;
  for (const RawSegment& s : segs) {
    const int begin = p.length();
    const std::vector<int> ids = enc.encode(s.text, atStart);
    if (!ids.empty()) atStart = false;
    p.ids.insert(p.ids.end(), ids.begin(), ids.end());
    p.text += s.text;
    const Span span{begin, p.length()};
    p.segments.push_back({s.role, s.demo, s.text, span});
    if (s.demo >= 0) {
      Prompt::Demo& d = p.demos[static_cast<size_t>(s.demo)];
      if (s.role == "input_prefix") d.block.begin = begin;
      if (s.role == "input") d.input = span;
      if (s.role == "label") d.label = span;
      if (s.role == "separator") {
        d.separator = span;
        d.block.end = span.end;
      }
    } else if (s.role == "input") {
      p.query_input = span;
    }
  }
  if (p.ids.empty()) fail("buildPrompt: the prompt is empty (empty template, input and no BOS)");
  p.last = p.length() - 1;
  p.answer_tokens = enc.encode(answerText, p.text.empty());
  if (p.answer_tokens.empty()) fail("buildPrompt: the answer \"", p.answer, "\" encodes to no tokens");
  p.answer_token = p.answer_tokens.front();
  p.pieces.reserve(p.ids.size());
  for (int id : p.ids)
    p.pieces.push_back(tok.piece(id));
  return p;
}

Prompt zeroShotPrompt(const Tokenizer& tok, const PromptTemplate& tmpl, const Example& query,
                      const PromptOptions& opt) {
  return buildPrompt(tok, tmpl, {}, query, opt);
}

int tokenizationMismatches(const Tokenizer& tok, const Prompt& prompt) {
  const std::vector<int> whole = tok.encode(prompt.text, prompt.n_bos > 0);
  const size_t n = std::max(whole.size(), prompt.ids.size());
  int diff = 0;
  for (size_t i = 0; i < n; ++i)
    if (i >= whole.size() || i >= prompt.ids.size() || whole[i] != prompt.ids[i]) ++diff;
  return diff;
}

Prompt shifted(const Prompt& p, int pad, int pad_id) {
  if (pad < 0) fail("shifted: negative pad count ", pad);
  Prompt s = p;
  s.ids.insert(s.ids.begin(), static_cast<size_t>(pad), pad_id);
  s.pieces.insert(s.pieces.begin(), static_cast<size_t>(pad), std::string("<pad>"));
  for (Prompt::Demo& d : s.demos) {
    d.input = d.input.shifted(pad);
    d.label = d.label.shifted(pad);
    d.separator = d.separator.shifted(pad);
    d.block = d.block.shifted(pad);
  }
  s.query_input = s.query_input.shifted(pad);
  for (PromptSegment& seg : s.segments)
    seg.span = seg.span.shifted(pad);
  if (s.last >= 0) s.last += pad;
  return s;
}

PromptBatch batchPrompts(const std::vector<Prompt>& prompts, int pad_id) {
  PromptBatch b;
  b.pad_id = pad_id;
  for (const Prompt& p : prompts)
    b.length = std::max(b.length, p.length());
  for (size_t r = 0; r < prompts.size(); ++r) {
    const Prompt& p = prompts[r];
    if (p.last != p.length() - 1)
      fail("batchPrompts: prompt ", r, " has last = ", p.last, " but ", p.length(),
           " tokens; left padding needs prompts that end at their last position");
    const int pad = b.length - p.length();
    Prompt s = shifted(p, pad, pad_id);
    std::vector<int> mask(static_cast<size_t>(b.length), 1);
    std::fill(mask.begin(), mask.begin() + pad, 0);
    b.ids.push_back(s.ids);
    b.attention_mask.push_back(std::move(mask));
    b.pad.push_back(pad);
    b.last.push_back(s.last);
    b.answer_token.push_back(s.answer_token);
    b.prompts.push_back(std::move(s));
  }
  return b;
}

}  // namespace hs
