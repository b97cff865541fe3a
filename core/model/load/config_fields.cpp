#include "model/load/config_fields.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "util/error.h"

namespace hs {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Keys harmless only while switched off: false, an empty list or object, 0.
const std::vector<std::string>& harmlessWhenOff() {
  static const std::vector<std::string> keys = {
      "add_cross_attention", "is_encoder_decoder", "tie_encoder_decoder", "pruned_heads", "torchscript",
  };
  return keys;
}

bool isOff(const nlohmann::json& v) {
  return (v.is_boolean() && !v.get<bool>()) || (v.is_array() && v.empty()) || (v.is_object() && v.empty()) ||
         (v.is_number() && v.get<double>() == 0.0);
}

}  // namespace

const std::vector<std::string>& harmlessConfigKeys() {
  // PretrainedConfig's own attributes (identity, outputs, generation defaults, label maps), dropout rates
  // (inactive at inference), initialisation ranges, cache and attention-kernel choices, and the model's
  // token ids (read separately where they matter).
  static const std::vector<std::string> keys = {
      // identity and bookkeeping
      "architectures",
      "model_type",
      "transformers_version",
      "_name_or_path",
      "_commit_hash",
      "torch_dtype",
      "dtype",
      "use_bfloat16",
      "tokenizer_class",
      "prefix",
      "finetuning_task",
      "task_specific_params",
      // token ids
      "bos_token_id",
      "eos_token_id",
      "pad_token_id",
      "sep_token_id",
      "decoder_start_token_id",
      "forced_bos_token_id",
      "forced_eos_token_id",
      // outputs and execution choices that leave the numbers unchanged
      "output_attentions",
      "output_hidden_states",
      "return_dict",
      "use_return_dict",
      "use_cache",
      "cache_implementation",
      "_attn_implementation",
      "attn_implementation",
      "gradient_checkpointing",
      "chunk_size_feed_forward",
      "tf_legacy_loss",
      "is_decoder",
      "pretraining_tp",
      // training only
      "initializer_range",
      "initializer_factor",
      "attention_dropout",
      "hidden_dropout",
      "hidden_dropout_prob",
      "attention_probs_dropout_prob",
      "resid_pdrop",
      "embd_pdrop",
      "attn_pdrop",
      "classifier_dropout",
      "dropout",
      "problem_type",
      "id2label",
      "label2id",
      "num_labels",
      // generation defaults
      "max_length",
      "min_length",
      "do_sample",
      "early_stopping",
      "num_beams",
      "num_beam_groups",
      "diversity_penalty",
      "temperature",
      "top_k",
      "top_p",
      "typical_p",
      "repetition_penalty",
      "length_penalty",
      "no_repeat_ngram_size",
      "encoder_no_repeat_ngram_size",
      "bad_words_ids",
      "num_return_sequences",
      "output_scores",
      "return_dict_in_generate",
      "remove_invalid_values",
      "exponential_decay_length_penalty",
      "suppress_tokens",
      "begin_suppress_tokens",
  };
  return keys;
}

void refuseUnaccountedKeys(const nlohmann::json& object, const std::string& where, const std::string& family,
                           const std::vector<std::string>& familyKeys) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& value = it.value();
    if (value.is_null() || contains(familyKeys, key) || contains(harmlessConfigKeys(), key)) continue;
    if (contains(harmlessWhenOff(), key) && isOff(value)) continue;
    if (key == "quantization_config")
      fail(where,
           ": field \"quantization_config\": quantized checkpoints are not supported (HeadScope reads "
           "float32, bfloat16 and float16 weights)");
    if (key == "auto_map")
      fail(where, ": field \"auto_map\" names custom modeling code; HeadScope runs only its own ", family,
           " forward, which may differ from that code (remove \"auto_map\" if the checkpoint is a plain ",
           family, ")");
    fail(
        where, ": field \"", key, "\" is not read by HeadScope's ", family,
        " reader and may change the forward, so the checkpoint is refused rather than run without it (remove "
        "the field if it does not apply to this model)");
  }
}

}  // namespace hs
