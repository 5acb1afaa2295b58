// AtomicFile: temp file + fsync + rename + directory fsync (POSIX).
#include "runtime/checkpoint/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace dnnc::runtime {
namespace {

std::runtime_error sys_error(const std::string& path, const char* what) {
  return std::runtime_error(fmt::format("{}: {}: {}", path, what, std::strerror(errno)));
}

// Whether process `pid` is gone (kill(pid, 0) fails with ESRCH).
bool process_gone(long pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

}  // namespace

int remove_stale_temps(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = target.filename().string() + ".tmp.";
  std::error_code ec;
  int removed = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pid = name.substr(prefix.size());
    if (pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (!process_gone(std::stol(pid)) || !e.is_regular_file(ec)) continue;
    if (fs::remove(e.path(), ec)) ++removed;
  }
  return removed;
}

std::string atomic_temp_path(const std::string& path) { return fmt::format("{}.tmp.{}", path, ::getpid()); }

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), temp_path_(atomic_temp_path(path_)) {
  remove_stale_temps(path_);
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw sys_error(temp_path_, "cannot create");
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  if (fd_ < 0) throw std::runtime_error(fmt::format("{}: write after commit", temp_path_));
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw sys_error(temp_path_, "write failed");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw std::runtime_error(fmt::format("{}: commit called twice", temp_path_));
  if (::fsync(fd_) != 0) throw sys_error(temp_path_, "fsync failed");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw sys_error(temp_path_, "close failed");
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) throw sys_error(path_, "cannot rename the new file over");
  committed_ = true;
  // Make the rename itself durable.
  std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  if (dir.empty()) dir = std::filesystem::current_path();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) throw sys_error(dir.string(), "cannot open directory to fsync it");
  const int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) throw sys_error(dir.string(), "directory fsync failed");
}

}  // namespace dnnc::runtime
