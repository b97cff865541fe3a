#pragma once
// Fingerprints of the files a model was loaded from, stored in a session so that reopening it can
// tell whether the checkpoint on disk is still the one the results were computed with.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "session/sha256.h"

namespace hs {

// {"files": [{"path": <as given>, "name": <file name>, "size": <bytes>, "sha256": <hex>}, ...]}
// in the order given. Throws naming the file when one cannot be read. Merge it into Session::model
// beside "path", "format" and "dtype": session.model.update(modelIdentity(files)).
nlohmann::json modelIdentity(const std::vector<std::string>& files);

// Re-hashes the files an identity lists and returns one line per difference ("<path>: missing",
// "<path>: size 10 bytes, session recorded 12", "<path>: sha256 differs ..."); empty when all match.
// Sizes are compared first, so a changed size costs no hashing.
std::vector<std::string> verifyModelIdentity(const nlohmann::json& identity);

}  // namespace hs
