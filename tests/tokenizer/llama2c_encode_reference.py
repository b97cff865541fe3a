#!/usr/bin/env python3
"""Independent reference for the llama2.c tokenizer: a literal transcription of run.c's encode()
(karpathy/llama2.c), with its quadratic "merge the best-scoring adjacent pair" loop.

usage: llama2c_encode_reference.py tok.bin texts.json out.json
texts.json: a JSON list of strings; out.json receives a JSON list of id lists (BOS included, no EOS).
"""
import json
import struct
import sys


def load(path):
    data = open(path, "rb").read()
    (max_len,) = struct.unpack_from("<i", data, 0)
    off, vocab, scores = 4, [], []
    while off < len(data):
        score, n = struct.unpack_from("<fi", data, off)
        off += 8
        vocab.append(data[off:off + n])
        scores.append(score)
        off += n
    return vocab, scores


def encode(text, vocab, scores, lookup):
    tokens = [1]  # BOS
    raw = text.encode("utf-8")
    if raw:
        tokens.append(lookup[b" "])  # dummy prefix
    buf = b""
    for i, c in enumerate(raw):
        if (c & 0xC0) != 0x80:
            buf = b""
        buf += bytes([c])
        nxt = raw[i + 1] if i + 1 < len(raw) else 0
        if (nxt & 0xC0) == 0x80 and len(buf) < 4:
            continue
        if buf in lookup:
            tokens.append(lookup[buf])
        else:
            tokens.extend(b + 3 for b in buf)
        buf = b""
    while True:
        best_score, best_id, best_idx = -1e10, -1, -1
        for i in range(len(tokens) - 1):
            merged = vocab[tokens[i]] + vocab[tokens[i + 1]]
            if merged in lookup and scores[lookup[merged]] > best_score:
                best_score, best_id, best_idx = scores[lookup[merged]], lookup[merged], i
        if best_idx == -1:
            break
        tokens[best_idx:best_idx + 2] = [best_id]
    return tokens


def main():
    vocab, scores = load(sys.argv[1])
    lookup = {}
    for i, piece in enumerate(vocab):
        lookup.setdefault(piece, i)
    texts = json.load(open(sys.argv[2], encoding="utf-8"))
    json.dump([encode(t, vocab, scores, lookup) for t in texts], open(sys.argv[3], "w"))


if __name__ == "__main__":
    main()
