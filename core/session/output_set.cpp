#include "session/output_set.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "model/io/atomic_file.h"
#include "model/io/mapped_file.h"
#include "session/session.h"
#include "util/error.h"

namespace hs {

namespace {

namespace fs = std::filesystem;

std::string folderOf(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// A unique empty file "<path><suffix>XXXXXX" beside `path`; returns its name.
std::string uniqueSibling(const std::string& path, const char* suffix) {
  std::string tmpl = path + suffix + "XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  const int fd = ::mkstemp(buf.data());
  if (fd < 0) fail(path, ": cannot create a file in ", folderOf(path), ": ", std::strerror(errno));
  ::close(fd);
  return buf.data();
}

void fsyncFolder(const std::string& folder) {
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace

void checkDestinations(const std::vector<std::string>& paths, bool createFolders) {
  std::set<std::string> seen;
  std::set<std::string> probed;
  for (const std::string& path : paths) {
    if (path.empty()) fail("an output path is empty");
    std::error_code ec;
    const std::string key = fs::absolute(path, ec).lexically_normal().string();
    if (!seen.insert(key).second) fail(path, ": given as the destination of two outputs");
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
      fail(path, ": cannot write an output here: ",
           S_ISDIR(st.st_mode) ? "it is a folder" : "it is not a regular file (a FIFO, device or socket)");
    // The nearest existing folder must take new files.
    fs::path folder = folderOf(path);
    if (!fs::is_directory(folder, ec)) {
      if (fs::exists(folder, ec))
        fail(path, ": cannot write an output here: ", folder.string(), " is not a folder");
      if (!createFolders)
        fail(path, ": cannot write an output here: the folder ", folder.string(), " does not exist");
      while (!folder.empty() && !fs::exists(folder, ec))
        folder = folder.parent_path();
      if (folder.empty()) folder = ".";
      if (!fs::is_directory(folder, ec))
        fail(path, ": cannot create the folder for it: ", folder.string(), " is not a folder");
    }
    if (!probed.insert(folder.string()).second) continue;
    std::string probe = (folder / ".headscope-probe-XXXXXX").string();
    std::vector<char> buf(probe.begin(), probe.end());
    buf.push_back('\0');
    const int fd = ::mkstemp(buf.data());
    if (fd < 0)
      fail(path, ": cannot write an output here: no file can be created in ", folder.string(), ": ",
           std::strerror(errno));
    ::close(fd);
    ::unlink(buf.data());
  }
}

void OutputSet::add(const std::string& path, Writer write) {
  files_.push_back({path, std::move(write)});
}

void OutputSet::addText(const std::string& path, std::string content) {
  add(path, [content = std::move(content)](const std::string& staged) {
    AtomicFile f(staged);
    f.write(content.data(), content.size());
    f.commit();
  });
}

std::vector<std::string> OutputSet::paths() const {
  std::vector<std::string> out;
  for (const File& f : files_)
    out.push_back(f.path);
  return out;
}

void OutputSet::check() const {
  checkDestinations(paths(), createFolders_);
}

void OutputSet::commit() {
  check();
  std::vector<fs::path> createdFolders;  // outermost first
  std::vector<std::string> staged(files_.size());
  std::vector<std::string> backups(files_.size());  // "" where the destination did not exist
  size_t published = 0;
  auto rollback = [&] {
    // Put back what was moved into place, newest first, then drop the staged copies and new folders.
    for (size_t i = published; i-- > 0;) {
      if (!backups[i].empty())
        ::rename(backups[i].c_str(), files_[i].path.c_str());
      else
        ::unlink(files_[i].path.c_str());
    }
    for (size_t i = 0; i < files_.size(); ++i) {
      if (!staged[i].empty() && i >= published) ::unlink(staged[i].c_str());
      if (!backups[i].empty() && i >= published) ::unlink(backups[i].c_str());
    }
    for (auto it = createdFolders.rbegin(); it != createdFolders.rend(); ++it) {
      std::error_code ec;
      fs::remove(*it, ec);  // only removes an empty folder
    }
  };
  try {
    if (createFolders_) {
      for (const File& f : files_) {
        std::vector<fs::path> missing;
        std::error_code ec;
        for (fs::path p = folderOf(f.path); !p.empty() && !fs::exists(p, ec); p = p.parent_path())
          missing.push_back(p);
        for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
          if (!fs::create_directory(*it, ec) && ec)
            fail(f.path, ": cannot create the folder ", it->string(), ": ", ec.message());
          createdFolders.push_back(*it);
        }
      }
    }
    // 1. Every file complete beside its destination.
    for (size_t i = 0; i < files_.size(); ++i) {
      staged[i] = uniqueSibling(files_[i].path, ".staged-");
      files_[i].write(staged[i]);
    }
    // 2. A hard link keeps each previous version reachable until the whole set is in place.
    for (size_t i = 0; i < files_.size(); ++i) {
      struct stat st {};
      if (::stat(files_[i].path.c_str(), &st) != 0) continue;
      const std::string b = uniqueSibling(files_[i].path, ".previous-");
      ::unlink(b.c_str());
      if (::link(files_[i].path.c_str(), b.c_str()) != 0)
        fail(files_[i].path, ": cannot keep the previous version while replacing it: ", std::strerror(errno));
      backups[i] = b;
    }
    // 3. Move into place.
    for (size_t i = 0; i < files_.size(); ++i) {
      if (before_publish) before_publish(i);
      if (::rename(staged[i].c_str(), files_[i].path.c_str()) != 0)
        fail(files_[i].path, ": cannot move the new file into place: ", std::strerror(errno));
      staged[i].clear();
      ++published;
    }
  } catch (...) {
    rollback();
    throw;
  }
  std::set<std::string> folders;
  for (size_t i = 0; i < files_.size(); ++i) {
    if (!backups[i].empty()) ::unlink(backups[i].c_str());
    folders.insert(folderOf(files_[i].path));
  }
  for (const std::string& f : folders)
    fsyncFolder(f);
}

void writeRunFiles(const Session& s, const std::string& sessionPath, const std::string& jsonPath,
                   const std::string& jsonText) {
  OutputSet out;
  out.add(sessionPath, [&s](const std::string& staged) { saveSession(staged, s); });
  if (!jsonPath.empty()) out.addText(jsonPath, jsonText);
  out.check();
  const std::vector<std::string> changed = changedMappedFiles();
  if (!changed.empty()) fail(mappedFileChangedMessage(changed.front()), "; nothing was written");
  out.commit();
}

}  // namespace hs
