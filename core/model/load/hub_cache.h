#pragma once
// Offline resolution of Hugging Face hub ids ("meta-llama/Llama-3.2-1B") to a snapshot folder of the local
// hub cache, the layout huggingface_hub writes:
//   <cache>/models--<org>--<name>/refs/<ref>          the commit hash a ref (main, a branch, a tag) points to
//   <cache>/models--<org>--<name>/snapshots/<hash>/   the files of that revision (symlinks into ../../blobs)
// <cache> is $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub (huggingface_hub's order). Nothing is ever downloaded.
#include <optional>
#include <string>
#include <vector>

namespace hs {

struct CachedModel {
  std::string id;         // "org/name"
  std::string revision;   // the commit hash of the snapshot
  std::string path;       // the snapshot folder
  bool complete = false;  // config.json and weights are there (a partial download lacks one of them)
};

// The hub cache folder by the environment (it need not exist).
std::string hubCacheDir();

// Whether `s` has the form of a hub id: "org/name" or "name", optionally "@revision", made of letters,
// digits and -_. only (never a path that exists, never starting with '.' or '/').
bool looksLikeHubId(const std::string& s);

// The snapshot folder of `id` ("org/name" or "org/name@rev"; rev is a ref name or a commit hash, default
// main). nullopt when the cache does not hold the model; an error naming the cache folder when it holds the
// model but not that revision (listing the revisions it has).
std::optional<std::string> resolveHubId(const std::string& id, const std::string& cacheDir = hubCacheDir());

// Every model of the cache with a snapshot (the one refs/main names, else the newest snapshot), sorted by id.
std::vector<CachedModel> listCachedModels(const std::string& cacheDir = hubCacheDir());

}  // namespace hs
