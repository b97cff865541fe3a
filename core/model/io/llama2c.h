#pragma once
// llama2.c checkpoints (https://github.com/karpathy/llama2.c, export.py / run.c / runq.c):
//  v0 (legacy): 7 int32 {dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len}
//      (vocab_size < 0: an untied classifier follows), then fp32 tok_emb, rms_att, wq, wk, wv, wo,
//      rms_ffn, w1, w2, w3, rms_final, the legacy RoPE table (2 * seq_len * head_size/2, skipped),
//      wcls when untied.
//  v1: uint32 magic "ak42", int32 version 1, the 7 int32, uint8 shared_classifier, zero pad to
//      256 bytes; fp32 rms_att[L], rms_ffn[L], rms_final, tok_emb, wq[L], wk[L], wv[L], wo[L], w1[L],
//      w2[L], w3[L], wcls when not shared.
//  v2: as v1 plus int32 group_size after the flag; fp32 norms, then every matrix (tok_emb, wq per
//      layer, ..., w3 per layer, wcls) as int8 values followed by one fp32 scale per group of
//      group_size consecutive values (Q8_0): x = q * scale. Dequantised to fp32 here.
// All matrices are row-major [out, in]. q/k rows stay in the file's interleaved RoPE layout.
#include <string>

#include "model/io/raw_checkpoint.h"

namespace hs {

// Tensors under Hugging Face Llama names; fp32 tensors of v0/v1 are zero-copy views of the map.
// Throws hs::Error naming the file when the header is nonsense or the size does not match it.
// withTensors = false: the header and the size check only (config, no tensors), for `info`.
RawCheckpoint readLlama2c(const std::string& path, bool withTensors = true);

}  // namespace hs
