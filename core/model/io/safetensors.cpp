#include "model/io/safetensors.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "model/io/atomic_file.h"
#include "model/io/map_tensor.h"
#include "util/error.h"
#include "util/file_text.h"
#include "util/json_read.h"

namespace hs {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct DtypeInfo {
  const char* name;
  size_t itemsize;
  bool torch;  // representable in libtorch 1.13
  at::ScalarType type;
};

// Every dtype of the safetensors spec; the unsigned wide ints and fp8 have no libtorch 1.13 type.
const DtypeInfo kDtypes[] = {
    {"F64", 8, true, at::kDouble},    {"F32", 4, true, at::kFloat},     {"F16", 2, true, at::kHalf},
    {"BF16", 2, true, at::kBFloat16}, {"I64", 8, true, at::kLong},      {"I32", 4, true, at::kInt},
    {"I16", 2, true, at::kShort},     {"I8", 1, true, at::kChar},       {"U8", 1, true, at::kByte},
    {"BOOL", 1, true, at::kBool},     {"U64", 8, false, at::kLong},     {"U32", 4, false, at::kInt},
    {"U16", 2, false, at::kShort},    {"F8_E4M3", 1, false, at::kByte}, {"F8_E5M2", 1, false, at::kByte},
};

const DtypeInfo* findDtype(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

std::string knownDtypeList() {
  std::string s;
  for (const auto& d : kDtypes)
    s += (s.empty() ? "" : ", ") + std::string(d.name);
  return s;
}

std::string shapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

uint64_t readLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

SafetensorsEntry parseEntry(const std::string& path, const std::string& name, const json& v) {
  const std::string where = path + ": tensor " + name;
  if (!v.is_object()) fail(where, ": header entry is ", v.type_name(), ", expected an object");
  SafetensorsEntry e;
  e.name = name;

  auto dt = v.find("dtype");
  if (dt == v.end()) fail(where, ": header entry has no \"dtype\"");
  if (!dt->is_string()) fail(where, ": \"dtype\" is ", dt->type_name(), ", expected a string");
  e.dtype = dt->get<std::string>();
  if (!findDtype(e.dtype))
    fail(where, ": unknown dtype \"", e.dtype, "\", expected one of ", knownDtypeList());

  auto sh = v.find("shape");
  if (sh == v.end()) fail(where, ": header entry has no \"shape\"");
  if (!sh->is_array()) fail(where, ": \"shape\" is ", sh->type_name(), ", expected an array of sizes");
  for (const auto& d : *sh) {
    if (!d.is_number_integer() || (d.is_number_integer() && !d.is_number_unsigned() && d.get<int64_t>() < 0))
      fail(where, ": \"shape\" holds ", jsonExcerpt(d), ", expected non-negative integers");
    e.shape.push_back(d.get<int64_t>());
  }

  auto off = v.find("data_offsets");
  if (off == v.end()) fail(where, ": header entry has no \"data_offsets\"");
  if (!off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned())
    fail(where, ": \"data_offsets\" is ", jsonExcerpt(*off),
         ", expected [begin, end] with non-negative integers");
  e.begin = (*off)[0].get<uint64_t>();
  e.end = (*off)[1].get<uint64_t>();
  return e;
}

}  // namespace

at::ScalarType safetensorsDtype(const std::string& name, const std::string& context) {
  const DtypeInfo* d = findDtype(name);
  if (!d) fail(context, ": unknown dtype \"", name, "\", expected one of ", knownDtypeList());
  if (!d->torch)
    fail(context, ": dtype ", name,
         " has no libtorch 1.13 equivalent (supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)");
  return d->type;
}

std::string safetensorsDtypeName(at::ScalarType t) {
  for (const auto& d : kDtypes)
    if (d.torch && d.type == t) return d.name;
  fail("safetensors: torch dtype ", c10::toString(t),
       " cannot be written (supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)");
}

// ---------------------------------------------------------------------------------------------
// SafetensorsFile

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  auto f = std::shared_ptr<SafetensorsFile>(new SafetensorsFile());
  f->map_ = MappedFile::open(path);
  const uint64_t size = f->map_->size();
  const uint8_t* base = f->map_->data();
  if (size < 8)
    fail(path, ": file has ", size, " bytes, shorter than the 8-byte header length of a safetensors file");
  const uint64_t n = readLe64(base);
  if (n > size - 8)
    fail(path, ": header length ", n, " runs past the end of the file (file has ", size,
         " bytes, so at most ", size - 8, " header bytes)");
  f->dataStart_ = 8 + n;
  const uint64_t dataSize = size - f->dataStart_;

  // Bounded: nesting, size and duplicate tensor names (a repeated name would silently replace the first).
  const json header = parseJsonBounded(std::string_view(reinterpret_cast<const char*>(base + 8), n),
                                       path + ": header", json_limits::safetensorsHeader());
  if (!header.is_object()) fail(path, ": header is a JSON ", header.type_name(), ", expected an object");

  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object())
        fail(path, ": \"__metadata__\" is ", it->type_name(), ", expected an object of strings");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          fail(path, ": \"__metadata__\" key ", m.key(), " is ", m->type_name(), ", expected a string");
        f->metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    SafetensorsEntry e = parseEntry(path, it.key(), *it);
    const std::string where = path + ": tensor " + e.name;
    if (e.end < e.begin) fail(where, ": data_offsets [", e.begin, ", ", e.end, "] end before they begin");
    if (e.end > dataSize)
      fail(where, ": data_offsets [", e.begin, ", ", e.end, "] run past the end of the data buffer (",
           dataSize, " bytes)");
    const int64_t numel = checkedNumel(e.shape);
    const size_t item = findDtype(e.dtype)->itemsize;
    if (numel < 0 || static_cast<uint64_t>(numel) > dataSize / item)
      fail(where, ": shape ", shapeString(e.shape), " is larger than the whole data buffer (", dataSize,
           " bytes)");
    const uint64_t expected = static_cast<uint64_t>(numel) * item;
    if (e.end - e.begin != expected)
      fail(where, ": data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin, " bytes, expected ",
           expected, " (shape ", shapeString(e.shape), " x ", item, "-byte ", e.dtype, ")");
    f->entries_.emplace(e.name, std::move(e));
  }

  // No two tensors may share bytes: a write through one would silently change the other.
  std::vector<const SafetensorsEntry*> byOffset;
  for (const auto& [name, e] : f->entries_)
    if (e.end > e.begin) byOffset.push_back(&e);
  std::sort(byOffset.begin(), byOffset.end(), [](const auto* a, const auto* b) {
    return a->begin < b->begin || (a->begin == b->begin && a->end < b->end);
  });
  for (size_t i = 1; i < byOffset.size(); ++i) {
    const auto *a = byOffset[i - 1], *b = byOffset[i];
    if (b->begin < a->end)
      fail(path, ": tensors ", a->name, " [", a->begin, ", ", a->end, ") and ", b->name, " [", b->begin, ", ",
           b->end, ") overlap, expected disjoint data_offsets");
  }
  return f;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [name, e] : entries_)
    out.push_back(name);
  return out;
}

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end())
    fail(path(), ": no tensor named ", name, " (file has ", entries_.size(), " tensors)");
  return it->second;
}

at::Tensor SafetensorsFile::tensor(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  const at::ScalarType t = safetensorsDtype(e.dtype, path() + ": tensor " + name);
  return tensorFromMap(map_, map_->data() + dataStart_ + e.begin, e.shape, t);
}

void SafetensorsFile::release(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  map_->release(map_->data() + dataStart_ + e.begin, e.end - e.begin);
}

// ---------------------------------------------------------------------------------------------
// SafetensorsCheckpoint

SafetensorsCheckpoint SafetensorsCheckpoint::open(const std::string& pathOrFolder) {
  SafetensorsCheckpoint ck;
  ck.path_ = pathOrFolder;
  auto addFile = [&ck](std::shared_ptr<SafetensorsFile> f) {
    for (const auto& n : f->names()) {
      auto [it, inserted] = ck.owner_.emplace(n, ck.files_.size());
      if (!inserted)
        fail(f->path(), ": tensor ", n, " also exists in ", ck.files_[it->second]->path(),
             ", expected each tensor in exactly one file");
    }
    ck.files_.push_back(std::move(f));
  };

  std::error_code ec;
  if (!fs::exists(pathOrFolder, ec))
    fail(pathOrFolder, ": no such file or folder (expected a safetensors checkpoint)");
  if (!fs::is_directory(pathOrFolder, ec)) {
    addFile(SafetensorsFile::open(pathOrFolder));
    return ck;
  }

  const fs::path dir(pathOrFolder);
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index, ec)) {
    const std::string ip = index.string();
    const json j = readJsonFile(ip, json_limits::shardIndex());
    if (!j.is_object()) fail(ip, ": not a JSON object");
    auto wm = j.find("weight_map");
    if (wm == j.end() || !wm->is_object())
      fail(ip, ": has no \"weight_map\" object (tensor name -> shard file)");
    std::map<std::string, std::vector<std::string>> byShard;  // shard -> tensors the index puts there
    for (auto it = wm->begin(); it != wm->end(); ++it) {
      if (!it->is_string())
        fail(ip, ": weight_map entry ", it.key(), " is ", it->type_name(), ", expected a file name");
      byShard[it->get<std::string>()].push_back(it.key());
    }
    if (byShard.empty()) fail(ip, ": weight_map is empty");
    for (const auto& [shard, tensors] : byShard) {
      // Shards are files of the model folder: no absolute paths, no "..", so an index cannot make the
      // loader read files elsewhere.
      const fs::path rel(shard);
      bool confined = !shard.empty() && rel.is_relative() && !rel.has_root_name();
      for (const auto& part : rel)
        confined = confined && part != ".." && part != "." && !part.empty();
      if (!confined)
        fail(ip, ": names shard \"", shard,
             "\", which is not a file inside the model folder (expected a relative name without \"..\")");
      const fs::path sp = dir / shard;
      if (!fs::exists(sp, ec)) fail(ip, ": names shard ", shard, " which does not exist (", sp.string(), ")");
      auto f = SafetensorsFile::open(sp.string());
      for (const auto& t : tensors)
        if (!f->has(t))
          fail(ip, ": tensor ", t, " is mapped to shard ", shard, " but ", sp.string(),
               " does not contain it");
      const std::set<std::string> listed(tensors.begin(), tensors.end());
      for (const auto& n : f->names())
        if (!listed.count(n))
          fail(sp.string(), ": holds tensor ", n, " which ", ip, " does not map to this shard");
      addFile(std::move(f));
    }
    return ck;
  }

  const fs::path single = dir / "model.safetensors";
  if (fs::exists(single, ec)) {
    addFile(SafetensorsFile::open(single.string()));
    return ck;
  }
  std::vector<fs::path> found;
  for (const auto& de : fs::directory_iterator(dir, ec))
    if (de.path().extension() == ".safetensors") found.push_back(de.path());
  if (found.size() == 1) {
    addFile(SafetensorsFile::open(found[0].string()));
    return ck;
  }
  fail(pathOrFolder, ": no model.safetensors or model.safetensors.index.json (found ", found.size(),
       " .safetensors files; expected one, or an index naming the shards)");
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [n, i] : owner_)
    out.push_back(n);
  return out;
}

const SafetensorsFile& SafetensorsCheckpoint::fileFor(const std::string& name) const {
  auto it = owner_.find(name);
  if (it == owner_.end()) fail(path_, ": no tensor named ", name, " in ", files_.size(), " file(s)");
  return *files_[it->second];
}

at::Tensor SafetensorsCheckpoint::tensor(const std::string& name) const {
  return fileFor(name).tensor(name);
}

const SafetensorsEntry& SafetensorsCheckpoint::entry(const std::string& name) const {
  return fileFor(name).entry(name);
}

void SafetensorsCheckpoint::release(const std::string& name) const {
  fileFor(name).release(name);
}

std::string SafetensorsCheckpoint::fileOf(const std::string& name) const {
  return fileFor(name).path();
}

std::vector<std::string> SafetensorsCheckpoint::files() const {
  std::vector<std::string> out;
  for (const auto& f : files_)
    out.push_back(f->path());
  return out;
}

std::vector<std::pair<std::string, std::map<std::string, std::string>>> SafetensorsCheckpoint::fileMetadata()
    const {
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> out;
  for (const auto& f : files_)
    out.emplace_back(f->path(), f->metadata());
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writer

void writeSafetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  struct Item {
    std::string name, dtype;
    at::Tensor t;  // contiguous CPU
    size_t item;
  };
  std::vector<Item> items;
  std::set<std::string> seen;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__") fail(path, ": cannot write a tensor named \"", name, "\"");
    if (!seen.insert(name).second) fail(path, ": tensor ", name, " given twice");
    if (!t.defined()) fail(path, ": tensor ", name, " is undefined");
    const at::ScalarType type = t.scalar_type();  // (a structured binding cannot be captured in C++17)
    const std::string dt = withContext(path + ": tensor " + name, [&] { return safetensorsDtypeName(type); });
    items.push_back({name, dt, t.to(at::kCPU).contiguous(), c10::elementSize(t.scalar_type())});
  }
  // Largest element size first: with an 8-aligned buffer start every tensor is then aligned.
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.item > b.item || (a.item == b.item && a.name < b.name);
  });

  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& it : items) {
    const uint64_t bytes = static_cast<uint64_t>(it.t.numel()) * it.item;
    header[it.name] = {
        {"dtype", it.dtype}, {"shape", it.t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0)
    h.push_back(' ');  // spaces are valid trailing JSON whitespace

  uint8_t len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<uint8_t>(static_cast<uint64_t>(h.size()) >> (8 * i));
  AtomicFile out(path);
  out.write(len, 8);
  out.write(h.data(), h.size());
  for (const auto& it : items)
    out.write(it.t.data_ptr(), static_cast<size_t>(it.t.numel()) * it.item);
  out.commit();
}

}  // namespace hs
