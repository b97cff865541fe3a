#pragma once
// Accounting for every key of a config.json, as architecture.cpp accounts for every tensor: a key is either
// read by the family's parser (the family lists it), or known not to change the forward (metadata, training
// and generation settings, listed here once), or the checkpoint is refused naming the file and the key.
// transformers ignores keys it does not know; HeadScope cannot tell whether such a key changes the model
// (custom code, a newer transformers feature, a quantisation), so it refuses rather than run a different
// model. A key whose value is null is "not set" and always accepted.
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace hs {

// Keys that never change the logits of given token ids, whatever the family.
const std::vector<std::string>& harmlessConfigKeys();

// Throws hs::Error for the first key of `object` that is neither in `familyKeys` nor harmless (nor null).
// `where` names the file (and the nested object, e.g. "config.json: text_config"); `family` the reader.
void refuseUnaccountedKeys(const nlohmann::json& object, const std::string& where, const std::string& family,
                           const std::vector<std::string>& familyKeys);

}  // namespace hs
