"""The Python half of test_hf_tokenizers: tokenizers trained locally with the `tokenizers` library, one per
kind the model families use, configured as the families' real tokenizer.json files are, and the library's
ids for a corpus of strings.

Usage: hf_tokenizers.py OUT_DIR GPT2_DIR WIKITEXT_DIR

Writes OUT_DIR/<kind>/{tokenizer.json, tokenizer_config.json} for every kind and OUT_DIR/cases.json:
  {"strings": [...],
   "kinds": [{"name", "path", "what", "expect_error": null | [fragments],
              "encodings": [[ids with special tokens], [ids without], decoded-or-null] per string}]}
transformers' AutoTokenizer must give the same ids with special tokens on every trained folder (checked
here). "decoded" is the library's decode of the ids without special tokens (skip_special_tokens=False), kept only
where it gives back the string exactly (a lossless round trip); null otherwise.
Everything is trained here from the shipped WikiText-2 (nothing is downloaded), deterministically.
"""

import json
import os
import random
import sys
import unicodedata

from tokenizers import (
    AddedToken,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)

# The split regexes exactly as the real tokenizer.json files hold them.
LLAMA3_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
    r"\s+(?!\S)|\s+"
)
QWEN2_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
    r"\s+(?!\S)|\s+"
)
META = "\u2581"


def tok(content, special, normalized=None, lstrip=False, rstrip=False):
    return AddedToken(
        content,
        special=special,
        normalized=(not special) if normalized is None else normalized,
        lstrip=lstrip,
        rstrip=rstrip,
        single_word=False,
    )


def training_lines(wikitext_dir):
    with open(os.path.join(wikitext_dir, "valid.txt"), encoding="utf-8") as f:
        return [line for line in f.read().split("\n") if line.strip()]


# ---------------------------------------------------------------------------------------------- corpus


def corpus(wikitext_dir):
    """At least 2,000 strings: WikiText-2 test lines and generated edge cases (deterministic)."""
    with open(os.path.join(wikitext_dir, "test.txt"), encoding="utf-8") as f:
        lines = [line for line in f.read().split("\n") if line.strip()]
    step = max(1, len(lines) // 1300)
    wiki = lines[::step][:1300]
    # Some as they come in the file (leading space, trailing newline), some stripped.
    strings = [w + "\n" if i % 5 == 0 else (w.strip() if i % 3 == 0 else w) for i, w in enumerate(wiki)]

    accents = ["café", "naïve", "résumé", "Ångström", "façade", "über", "São Paulo", "Dvořák", "Ελληνικά", "ñandú"]
    fragments = [
        # scripts
        "你好，世界", "日本語のテキストです。", "こんにちは", "안녕하세요 세계", "Привет, мир!", "Γειά σου Κόσμε",
        "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก", "ΣΊΣΥΦΟΣ σίσυφος", "İstanbul ıi",
        "Straße", "ＡＢＣ１２３", "ﬁnance ﬂow", "x² ½ ① ™", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "\u1100\u1161\u11a8", "Z̤͔ͧ̑̓ä̖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇",
        "a\u0301\u0302\u0303", "e\u0301", "\u0301start", "A\u030a", "ﾊﾝｶｸ", "㍿ ㌀", "Ⅻ ⅷ",
        "abc\u200fאבג\u200edef", "\u202eevil\u202c", "ا\u0644\u0651\u0647",
        # whitespace
        " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\r", " \n ", " \t \n",
        "\u00a0", "\u3000", "\u2028", "\u2029", "\u2009", "\u200a", "\u1680", "\u0085", "\u180e", "\u202f",
        "\f", "\v", "\x1c\x1d\x1e\x1f",
        # digits
        "0", "7", "42", "123", "1234", "12345", "123456789", "12345678901234567890", "3.14159", "1,000,000",
        "2024-01-01", "٣٤٥", "१२३", "①②③", "x1y22z333", "-17", "1e10", "0x1F", "½", "²³",
        # emoji
        "😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇫🇷🇩🇪", "😀😀😀", "🤷🏿‍♀️", "🧑🏻‍💻", "☺", "✌🏼",
        # control characters
        "\x00", "\x01", "\x07", "\x08", "\x1b[31mred\x1b[0m", "\x7f", "\x80\x9f", "\u200b", "\ufeff", "\u200d",
        "\u2060", "\ufffd", "\U000e0041", "\U0010fffd", "\ue000",
        # punctuation, contractions, code
        "I'm", "DON'T", "she'LL", "we've", "'s", "''", "’s", "it's", "...", "?!", "--", "@-@", "<unk>", "( )",
        "def f(x):\n    return x**2\n", "if (a && b) { c(); }", "https://example.com/a?b=c&d=e", "foo_bar.baz",
        "$100.00", "#hashtag", "e-mail", "\"quoted\"", "«guillemets»", "„Anführung“", "a/b\\c",
        # added tokens of the kinds, whole, partial, inside words and adjacent
        "<|endoftext|>", "<|endoftext", "endoftext|>", "<s>", "</s>", "<s", "<unk>", "<mask>", " <mask>",
        "<mask> ", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>",
        "<|end_header_id|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "[INST]", "[/INST]",
        "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<table>", "<h1>", "[UNK]", "[SEP]", "<sep>",
        "<nl>", "Hello", "hello", "HELLO", "foo", "ＨＥＬＬＯ", "<Mask>", "<MASK>",
    ]
    words = ["the", "The", "cat", "sat", "on", "a", "mat", "of", "and", "in", "to", "was", "is", "he", "she",
             "history", "unbelievable", "antidisestablishmentarianism", "Valkyria", "Chronicles"]
    edge = [
        "", " ", "  ", "   ", "    ", " " * 17, "\t", "\n", "\n\n", " \n", "\n ", "\r\n", "\t \t",
        "Hello world", " Hello world", "Hello world ", "  Hello  world  ", "Hello\tworld", "Hello\nworld",
        "Hello\r\nworld", "Hello\n\nworld", "Hello \n world", "Hello  \n\n  world", "a\n\n\n\nb",
        "hello<|endoftext|>world", "<|endoftext|><|endoftext|>", "x<s>y", "</s><s>", "a </s> b", " <s> ",
        "<s>Hello", "Hello</s>", "<s> Hello", "<unk><unk>", "a<unk>b", "The <mask> sat.", "The<mask>sat",
        "The   <mask>   sat", "<mask><mask>", "<|begin_of_text|>Hello", "Hi<|eot_id|><|start_header_id|>user",
        "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", "x<tool_call>{\"a\": 1}</tool_call>y",
        "[INST] What is 2+2? [/INST]", "[INST]x[/INST]", "<start_of_turn>user\nhi<end_of_turn>\n",
        "<bos><bos>", "<table><h1>Title</h1></table>", "hi [UNK] there", "a[SEP]b", "x <sep> y", "foo<nl>bar",
        "sayHellotoHELLOandhello", "fooHello", "Hellofoo", " Hello", "Hello ", "ＨＥＬＬＯ world",
        "one<nl>two <nl> three", "<nl><nl>", "[UNK][UNK]", "<Mask> and <MASK>", "<unk>😀", "<unk>😀😀 x",
        "😀<unk>", "<unk>日本", "a<unk>é", "<pad>😀",
    ]
    for a in accents:
        nfc = unicodedata.normalize("NFC", a)
        nfd = unicodedata.normalize("NFD", a)
        edge += [nfc, nfd, "The " + nfd + " is here", nfc + " " + nfd]
    for n in range(1, 25):
        edge.append("9" * n)
        edge.append("x" + "1" * n + "y")
    for c in [" ", "\t", "\n", "\r\n", "\u00a0", "\u3000"]:
        for n in [1, 2, 3, 5, 8]:
            edge += [c * n, "a" + c * n + "b", c * n + "a", "a" + c * n]
    edge += ["".join(words[i % len(words)] + " " for i in range(200)).strip()]  # a long string
    edge += ["a" * 300, "ab" * 150, "😀" * 40, " ".join(["1234567"] * 30)]

    rng = random.Random(37)
    mixes = []
    while len(mixes) < 700:
        parts = [rng.choice(fragments + words + words) for _ in range(rng.randint(1, 6))]
        joiner = rng.choice(["", " ", " ", "  ", "\n", "\t", ""])
        mixes.append(joiner.join(parts))
    return strings + fragments + edge + mixes


# ---------------------------------------------------------------------------------------------- kinds


def reload(tokenizer, patch=None):
    """The tokenizer as its saved tokenizer.json, after `patch` edits the JSON: the reference is exactly
    the file HeadScope reads."""
    spec = json.loads(tokenizer.to_str())
    if patch:
        patch(spec)
    return Tokenizer.from_str(json.dumps(spec)), spec


def byte_level(lines, split_regex, specials, non_special, post, normalizer=None, trim_offsets=True,
               ignore_merges=False, vocab_size=2500):
    t = Tokenizer(models.BPE())
    if normalizer:
        t.normalizer = normalizer
    if split_regex is None:  # GPT-2: ByteLevel carries the regex itself
        t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=trim_offsets,
                                                   use_regex=True)
    else:  # Llama-3 / Qwen2: Split(regex, Isolated), then ByteLevel without its own regex
        from tokenizers import Regex

        t.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split_regex), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=trim_offsets, use_regex=False),
        ])
    t.decoder = decoders.ByteLevel()
    t.post_processor = post
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    t.train_from_iterator(lines, trainer)
    t.add_special_tokens(specials)
    t.add_tokens(non_special)

    def patch(spec):
        spec["model"]["ignore_merges"] = ignore_merges

    return reload(t, patch)


def sentencepiece(lines, style, vocab_size=2500, byte_fallback=True):
    """SentencePiece-style BPE as converted by transformers: "▁" for spaces, byte fallback over <0xNN>
    pieces at ids right after the specials, fuse_unk. style: "llama2" (legacy Prepend + Replace normalizer),
    "mistral" (Metaspace pre-tokenizer, prepend_scheme first, split false), "metaspace" (Metaspace with
    prepend_scheme always and split, as older conversions), "gemma" (Replace only: no dummy prefix).
    Without byte_fallback (conversions made before tokenizers had it) characters outside the vocabulary are
    <unk>, runs of them fused into one."""
    t = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    # Trained on "▁"-words like SentencePiece; the characters outside the 200 most frequent fall back to
    # bytes at encode time.
    t.normalizer = normalizers.Replace(" ", META)
    t.pre_tokenizer = pre_tokenizers.Metaspace(replacement=META, prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, limit_alphabet=200,
                                  special_tokens=[])
    t.train_from_iterator(lines, trainer)
    trained = json.loads(t.to_str())["model"]

    if style == "gemma":
        specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"]
        bos, eos = "<bos>", "<eos>"
    else:
        specials = ["<unk>", "<s>", "</s>"]
        bos, eos = "<s>", "</s>"
    vocab = {}
    for s in specials:
        vocab[s] = len(vocab)
    for b in range(256 if byte_fallback else 0):
        vocab["<0x%02X>" % b] = len(vocab)
    for piece, _ in sorted(trained["vocab"].items(), key=lambda kv: kv[1]):
        if piece not in vocab:
            vocab[piece] = len(vocab)
    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": vocab[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for s in specials
        ],
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": byte_fallback, "ignore_merges": False,
                  "vocab": vocab, "merges": trained["merges"]},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [vocab[bos]], "tokens": [bos]}},
        },
    }
    replace_meta = {"type": "Replace", "pattern": {"String": META}, "content": " "}
    if style == "llama2":
        spec["normalizer"] = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": META},
            {"type": "Replace", "pattern": {"String": " "}, "content": META}]}
        spec["pre_tokenizer"] = None
        spec["decoder"] = {"type": "Sequence", "decoders": [
            replace_meta, {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
        # Added by a user (normalized=true): its content is normalized too, to "▁Hello", and matched in the
        # normalized text.
        vocab["Hello"] = len(vocab)
        spec["added_tokens"].append({"id": vocab["Hello"], "content": "Hello", "single_word": False,
                                     "lstrip": False, "rstrip": False, "normalized": True, "special": False})
    elif style in ("mistral", "metaspace"):
        spec["normalizer"] = None
        spec["pre_tokenizer"] = {"type": "Metaspace", "replacement": META,
                                 "prepend_scheme": "first" if style == "mistral" else "always",
                                 "split": style == "metaspace"}
        spec["decoder"] = {"type": "Sequence", "decoders": [
            replace_meta, {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
        for content in ["[INST]", "[/INST]"]:
            vocab[content] = len(vocab)
            spec["added_tokens"].append({"id": vocab[content], "content": content, "single_word": False,
                                         "lstrip": False, "rstrip": False, "normalized": False,
                                         "special": True})
    else:  # gemma: no dummy prefix; HTML tags and tab runs as added tokens that are not special
        spec["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": META}
        spec["pre_tokenizer"] = None
        spec["decoder"] = {"type": "Sequence", "decoders": [replace_meta, {"type": "ByteFallback"},
                                                            {"type": "Fuse"}]}
        for content in ["<table>", "<h1>", "</h1>", "\t\t", "\n\n"]:
            vocab[content] = len(vocab)
            spec["added_tokens"].append({"id": vocab[content], "content": content, "single_word": False,
                                         "lstrip": False, "rstrip": False, "normalized": False,
                                         "special": False})
    return Tokenizer.from_str(json.dumps(spec)), spec, bos, eos


def word_level(lines, normalizer=None):
    """WordLevel over WhitespaceSplit, as the toy model's tokenizer; unknown words become [UNK]."""
    t = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if normalizer:
        t.normalizer = normalizer
    trainer = trainers.WordLevelTrainer(vocab_size=3000, show_progress=False,
                                        special_tokens=["[UNK]", "[SEP]"])
    t.train_from_iterator(lines, trainer)
    t.add_tokens([tok("<nl>", special=False, normalized=False)])
    return reload(t)


def config_json(bos, eos, add_bos, extra=None):
    c = {"bos_token": bos, "eos_token": eos, "add_bos_token": add_bos, "add_eos_token": False,
         "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1000000}
    c.update(extra or {})
    return c


def kinds(lines):
    """(name, what, tokenizer, spec, tokenizer_config, expect_error)."""
    out = []

    # GPT-2: ByteLevel with its own regex; RoBERTa-style <mask> (lstrip) as a second, special token, and a
    # non-special added token that the text can hold inside words.
    t, spec = byte_level(
        lines, None,
        specials=[tok("<|endoftext|>", True), tok("<mask>", True, lstrip=True), tok("<sep>", True, rstrip=True)],
        non_special=[tok("Hello", False, normalized=False)],
        post=processors.ByteLevel(trim_offsets=True))
    out.append(("gpt2_bytelevel", "byte-level BPE, GPT-2 regex (ByteLevel use_regex), <mask> lstrip, <sep> rstrip",
                t, spec, config_json("<|endoftext|>", "<|endoftext|>", False), None))

    # GPT-NeoX / Pythia: GPT-2's ByteLevel regex after an NFC normalizer.
    t, spec = byte_level(lines, None, normalizer=normalizers.NFC(),
                         specials=[tok("<|endoftext|>", True), tok("<|padding|>", True)], non_special=[],
                         post=processors.ByteLevel(trim_offsets=True))
    out.append(("neox_bytelevel", "byte-level BPE, NFC, GPT-2 regex (GPT-NeoX)", t, spec,
                config_json("<|endoftext|>", "<|endoftext|>", False), None))

    # GPT-2 as loaded with add_prefix_space=True (a space before every stretch of text not starting with one).
    def prefix_space(spec):
        spec["pre_tokenizer"]["add_prefix_space"] = True

    t, spec = byte_level(lines, None, specials=[tok("<|endoftext|>", True)], non_special=[],
                         post=processors.ByteLevel(trim_offsets=True))
    t, spec = reload(t, prefix_space)
    out.append(("gpt2_prefix_space", "byte-level BPE, GPT-2 regex, ByteLevel add_prefix_space", t, spec,
                config_json("<|endoftext|>", "<|endoftext|>", False, {"add_prefix_space": True}), None))

    # Llama-3: Split(Llama-3 regex) + ByteLevel, ignore_merges, BOS by TemplateProcessing.
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                "<|eot_id|>"]
    t, spec = byte_level(
        lines, LLAMA3_REGEX,
        specials=[tok(s, True) for s in specials], non_special=[],
        post=processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                          pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                                          special_tokens=[("<|begin_of_text|>", 2500)])]),
        ignore_merges=True)
    # The template's id must be the token's real id.
    bot = t.token_to_id("<|begin_of_text|>")
    spec["post_processor"]["processors"][1]["special_tokens"]["<|begin_of_text|>"]["ids"] = [bot]
    t = Tokenizer.from_str(json.dumps(spec))
    cfg = {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>",
           "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 131072}
    out.append(("llama3_bytelevel", "byte-level BPE, Llama-3 Split regex, ignore_merges, BOS by template",
                t, spec, cfg, None))

    # Qwen2: NFC, Split(Qwen2 regex) + ByteLevel, no BOS; <tool_call> tags are added but not special.
    t, spec = byte_level(
        lines, QWEN2_REGEX, normalizer=normalizers.NFC(),
        specials=[tok("<|endoftext|>", True), tok("<|im_start|>", True), tok("<|im_end|>", True)],
        non_special=[tok("<tool_call>", False, normalized=False), tok("</tool_call>", False, normalized=False),
                     tok("naïve", False, normalized=True)],
        post=processors.ByteLevel(trim_offsets=False), trim_offsets=False)
    cfg = {"bos_token": None, "eos_token": "<|im_end|>", "add_bos_token": False,
           "tokenizer_class": "Qwen2Tokenizer", "model_max_length": 32768}
    out.append(("qwen2_bytelevel",
                "byte-level BPE, NFC, Qwen2 Split regex, non-special added tokens (one matched after NFC)",
                t, spec, cfg, None))

    for style, what in [("llama2", "SentencePiece BPE, Prepend+Replace normalizer (Llama-2 legacy)"),
                        ("mistral", "SentencePiece BPE, Metaspace prepend_scheme first (Mistral)"),
                        ("metaspace", "SentencePiece BPE, Metaspace prepend_scheme always, split"),
                        ("gemma", "SentencePiece BPE, Replace normalizer, no dummy prefix (Gemma)")]:
        t, spec, bos, eos = sentencepiece(lines, style)
        out.append((style + "_sentencepiece", what, t, spec, config_json(bos, eos, True), None))
    t, spec, bos, eos = sentencepiece(lines, "gemma", byte_fallback=False)
    out.append(("unk_sentencepiece", "SentencePiece BPE as Gemma, without byte fallback: fused <unk>", t, spec,
                config_json(bos, eos, True), None))

    t, spec = word_level(lines)
    out.append(("wordlevel", "WordLevel, WhitespaceSplit, [UNK], non-special <nl>", t, spec,
                config_json(None, None, False), None))
    t, spec = word_level(lines, normalizers.NFKC())
    out.append(("wordlevel_nfkc", "WordLevel, NFKC normalizer, WhitespaceSplit", t, spec,
                config_json(None, None, False), None))
    # Lowercase is a normalizer no family HeadScope loads uses: HeadScope refuses it in one line naming the
    # file and the construct.
    t, spec = word_level(lines, normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()]))
    out.append(("wordlevel_lowercase", "WordLevel, NFKC + Lowercase: refused", t, spec,
                config_json(None, None, False), ["tokenizer.json", "normalizer \"Lowercase\" is not supported"]))
    return out


# ---------------------------------------------------------------------------------------------- main


def encode_all(tokenizer, strings):
    rows = []
    for s in strings:
        with_special = tokenizer.encode(s, add_special_tokens=True).ids
        without = tokenizer.encode(s, add_special_tokens=False).ids
        decoded = tokenizer.decode(without, skip_special_tokens=False)
        rows.append([with_special, without, decoded if decoded == s else None])
    return rows


def check_transformers(folder, strings, encodings):
    """transformers' AutoTokenizer, the way researchers load these folders, must give the library's ids
    (special tokens included): otherwise the library would not be the reference it is taken for here."""
    from transformers import AutoTokenizer

    t = AutoTokenizer.from_pretrained(folder)
    for s, row in zip(strings, encodings):
        ids = t(s)["input_ids"]
        if ids != row[0]:
            raise SystemExit("transformers %s and tokenizers differ on %r in %s: %s vs %s"
                             % (type(t).__name__, s, folder, ids, row[0]))


def gpt2_files(gpt2_dir):
    t = Tokenizer(models.BPE.from_file(os.path.join(gpt2_dir, "vocab.json"),
                                       os.path.join(gpt2_dir, "merges.txt")))
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.add_special_tokens([tok("<|endoftext|>", True)])
    return t


def main():
    out_dir, gpt2_dir, wikitext_dir = sys.argv[1:4]
    lines = training_lines(wikitext_dir)
    strings = corpus(wikitext_dir)
    result = {"strings": strings, "kinds": []}
    for name, what, t, spec, cfg, expect_error in kinds(lines):
        folder = os.path.join(out_dir, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f, ensure_ascii=False)
        with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(cfg, f, ensure_ascii=False)
        encodings = None if expect_error else encode_all(t, strings)
        if encodings:
            check_transformers(folder, strings, encodings)
        result["kinds"].append({"name": name, "path": folder, "what": what, "expect_error": expect_error,
                                "encodings": encodings})
    result["kinds"].append({"name": "gpt2_shared_files", "path": gpt2_dir,
                            "what": "the real GPT-2 vocab.json + merges.txt", "expect_error": None,
                            "encodings": encode_all(gpt2_files(gpt2_dir), strings)})
    with open(os.path.join(out_dir, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=True)
    print(len(strings), "strings,", len(result["kinds"]), "kinds")


if __name__ == "__main__":
    main()
