#pragma once
// The files one command writes (a session, its JSON, CSV exports), written as one transaction: every
// destination is checked before any work, each file is first written completely beside its
// destination, and only then are all of them moved into place. A failure at any point leaves every
// destination as it was before: files staged so far are removed, files already moved into place are
// put back from hard-link backups of their previous versions (or removed when they were new).
#include <functional>
#include <string>
#include <vector>

namespace hs {

// Throws hs::Error naming the path when a destination cannot be written: an empty path, the same path
// given twice, a folder, FIFO or device at the path, a missing parent folder (unless `createFolders`,
// then the nearest existing ancestor must be a folder), or a folder in which no file can be created
// (read-only, permissions, file system full: checked by creating and removing a probe file).
// Call it before the work whose results go there, so a bad --out fails in a second, not after an hour.
void checkDestinations(const std::vector<std::string>& paths, bool createFolders = false);

class OutputSet {
 public:
  // A file whose bytes `write(stagedPath)` writes completely to the given path (e.g. saveSession).
  using Writer = std::function<void(const std::string& stagedPath)>;

  // Folders named in destinations are created at commit when `createFolders` (an export folder), and
  // removed again if the commit fails and left them empty.
  explicit OutputSet(bool createFolders = false) : createFolders_(createFolders) {}

  void add(const std::string& path, Writer write);
  void addText(const std::string& path, std::string content);

  std::vector<std::string> paths() const;
  bool empty() const { return files_.empty(); }

  // checkDestinations over every path added.
  void check() const;
  // Writes everything as one transaction (see above); throws hs::Error naming the file that failed.
  void commit();

  // For tests: called with the index of each file just before it is moved into place.
  std::function<void(size_t index)> before_publish;

 private:
  struct File {
    std::string path;
    Writer write;
  };
  std::vector<File> files_;
  bool createFolders_;
};

struct Session;

// The outputs of one analysis run as one transaction: the session at `sessionPath` and, unless
// `jsonPath` is empty, `jsonText` there. Refused, writing nothing, when a mapped input (the model's
// weights) changed on disk since it was loaded: the results would not be those of the file named in
// the session.
void writeRunFiles(const Session& s, const std::string& sessionPath, const std::string& jsonPath,
                   const std::string& jsonText);

}  // namespace hs
