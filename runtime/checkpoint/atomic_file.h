// Crash-safe file replacement: write a temporary file next to the target, fsync it, rename it
// over the target and fsync the directory, so readers see the old file or the new one, never
// a partial write.
#pragma once
#include <cstddef>
#include <string>

namespace dnnc::runtime {

class AtomicFile {
 public:
  /// Creates `path`.tmp.<pid> for writing, after removing the temporary files that writers of
  /// `path` killed mid-save left behind (see remove_stale_temps). Throws std::runtime_error naming the temporary file
  /// if it cannot be created (e.g. the directory does not exist or is not writable).
  explicit AtomicFile(std::string path);
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

  /// Appends bytes to the temporary file. Throws std::runtime_error naming it on a write error.
  void write(const void* data, size_t n);
  /// fsyncs and closes the temporary file, renames it over path() and fsyncs the directory.
  /// Throws std::runtime_error naming the file on failure; the old file at path() is untouched.
  void commit();

 private:
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Removes `path`.tmp.<pid> files in path's directory whose process <pid> no longer exists
/// (left by a writer killed mid-save); a live writer's file is kept. Returns how many it removed.
int remove_stale_temps(const std::string& path);

/// The temporary path AtomicFile uses for `path` in this process: `path`.tmp.<pid>.
std::string atomic_temp_path(const std::string& path);

}  // namespace dnnc::runtime
