// The on-disk JIT cache: key = digest(source, compiler, flags, compiler version, CPU); entries are
// <key>.cpp (the source), <key>.so (the library) and <key>.meta (size and digest of the .so,
// written last, so an entry without a matching .meta is incomplete or corrupt).
#include "runtime/cpu/jit_cache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace dnnc::runtime::cpu {

namespace fs = std::filesystem;

std::string digest_hex(const std::string& data) {
  using u128 = unsigned __int128;
  const u128 prime = (u128(1) << 88) + (u128(1) << 8) + 0x3b;
  u128 h = (u128(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
  for (unsigned char c : data) {
    h ^= c;
    h *= prime;
  }
  return fmt::format("{:016x}{:016x}", static_cast<uint64_t>(h >> 64), static_cast<uint64_t>(h));
}

std::string default_cache_dir() {
  const char* env = std::getenv("DNNC_CACHE_DIR");
  if (env && *env) return env;
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/dnnc";
  return "/tmp/dnnc-cache";
}

void* JitLibrary::symbol(const std::string& name) const {
  dlerror();
  void* p = dlsym(handle, name.c_str());
  if (!p) throw std::runtime_error(fmt::format("cpu backend: symbol '{}' is missing from {}", name, so_path));
  return p;
}

namespace {

std::string read_file(const std::string& path, bool* ok = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (ok) *ok = static_cast<bool>(in);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `data` to `path` through a temporary file and a rename (readers never see a partial file).
void write_atomic(const std::string& path, const std::string& data, const std::string& tmp_suffix) {
  std::string tmp = path + tmp_suffix;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << data;
    if (!out.flush()) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error(fmt::format("cpu backend: cannot write {}", tmp));
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error(fmt::format("cpu backend: cannot rename {} to {}: {}", tmp, path, ec.message()));
  }
}

// Starts argv (no shell), stdout and stderr into `log_path`; returns its pid, or throws if the
// program cannot be started.
pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    throw std::runtime_error(fmt::format("cpu backend: cannot run the compiler '{}': {}", argv[0], std::strerror(rc)));
  return pid;
}

// Waits for `pid`; returns its exit status (128 + the signal if a signal ended it).
int wait_exit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(fmt::format("cpu backend: waitpid failed: {}", std::strerror(errno)));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int run_logged(const std::vector<std::string>& argv, const std::string& log_path) {
  return wait_exit(spawn_logged(argv, log_path));
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  return cmd;
}

// The "model name" and "flags" lines of /proc/cpuinfo (what -march=native depends on).
std::string cpu_identity() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(in, line) && (model.empty() || flags.empty())) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line;
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
  }
  return model + "\n" + flags;
}

std::string meta_for(const std::string& so_bytes) {
  return fmt::format("{} {}\n", so_bytes.size(), digest_hex(so_bytes));
}

std::string key_symbol_line(const std::string& key) {
  return fmt::format(
      "\n// The cache key this library was built under (checked after loading).\n"
      "#if !defined(DNNC_PART) || DNNC_PART <= 0\n"
      "extern \"C\" const char dnnc_key[] = \"{}\";\n"
      "#endif\n",
      key);
}

}  // namespace

JitCache::JitCache(JitOptions options) : opt_(std::move(options)) {
  dir_ = opt_.cache_dir.empty() ? default_cache_dir() : opt_.cache_dir;
}

std::string JitCache::compiler_identity() {
  if (!identity_.empty()) return identity_;
  fs::path dir(dir_);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error(fmt::format("cpu backend: cannot create the cache directory {}: {}", dir_, ec.message()));
  std::random_device rd;
  std::string log = (dir / fmt::format("version.{}.{}.log", getpid(), rd())).string();
  int rc = run_logged({opt_.compiler, "--version"}, log);
  std::string version = read_file(log);
  fs::remove(log, ec);
  if (rc != 0)
    throw std::runtime_error(
        fmt::format("cpu backend: '{} --version' failed (exit {}): {}", opt_.compiler, rc, version));
  identity_ = version + "\n" + cpu_identity();
  return identity_;
}

std::string JitCache::key(const std::string& source) {
  std::string all = source + "\n--compiler\n" + opt_.compiler;
  for (const auto& f : opt_.flags) all += "\n" + f;
  for (const auto& l : opt_.libs) all += "\n" + l;
  all += "\n--identity\n" + compiler_identity();
  return digest_hex(all);
}

bool JitCache::entry_valid(const std::string& key) const {
  bool ok_so = false, ok_meta = false;
  std::string so = read_file((fs::path(dir_) / (key + ".so")).string(), &ok_so);
  std::string meta = read_file((fs::path(dir_) / (key + ".meta")).string(), &ok_meta);
  return ok_so && ok_meta && meta == meta_for(so);
}

int unit_parts(const std::string& source) {
  static const std::string marker = "\n#define DNNC_PARTS ";
  size_t at = source.find(marker);
  if (at == std::string::npos) return 1;
  int n = std::atoi(source.c_str() + at + marker.size());
  return n >= 1 && n <= 64 ? n : 1;
}

void JitCache::compile(const std::string& source, const std::string& key, const std::string& label) {
  fs::path dir(dir_);
  std::random_device rd;
  std::string suffix = fmt::format(".tmp.{}.{}.{}", getpid(), ++temp_counter_, rd());
  std::string cpp = (dir / (key + ".cpp")).string();
  std::string so = (dir / (key + ".so")).string();
  std::string meta = (dir / (key + ".meta")).string();
  write_atomic(cpp, source, suffix);
  std::string so_tmp = so + suffix;
  std::error_code ec;
  // One compiler run per part, all at once, then (for several parts) one link.
  int parts = unit_parts(source);
  std::vector<std::string> objects, logs;
  std::vector<std::vector<std::string>> commands;
  auto compiler_and_flags = [&] {
    std::vector<std::string> argv{opt_.compiler};
    argv.insert(argv.end(), opt_.flags.begin(), opt_.flags.end());
    return argv;
  };
  for (int i = 0; i < parts; ++i) {
    std::vector<std::string> argv = compiler_and_flags();
    if (parts == 1) {
      argv.insert(argv.end(), {"-o", so_tmp, cpp});
      argv.insert(argv.end(), opt_.libs.begin(), opt_.libs.end());
    } else {
      objects.push_back((dir / fmt::format("{}.part{}.o{}", key, i, suffix)).string());
      argv.insert(argv.end(), {fmt::format("-DDNNC_PART={}", i), "-c", "-o", objects.back(), cpp});
    }
    commands.push_back(std::move(argv));
    logs.push_back((dir / fmt::format("{}.log{}.{}", key, suffix, i)).string());
  }
  auto cleanup = [&] {
    for (const auto& o : objects) fs::remove(o, ec);
    for (const auto& l : logs) fs::remove(l, ec);
  };
  auto failure = [&](size_t i, int rc) {
    std::string output = read_file(logs[i]);
    fs::remove(so_tmp, ec);
    cleanup();
    std::string what = parts == 1 ? label : i < static_cast<size_t>(parts) ? fmt::format("{} (part {} of {})", label, i, parts)
                                                                          : fmt::format("{} (linking its {} parts)", label, parts);
    return std::runtime_error(fmt::format("cpu backend: compiling {} failed (exit {})\ncommand: {}\n{}\ngenerated source: {}",
                                          what, rc, command_line(commands[i]), output, cpp));
  };
  ++compiles_;
  std::vector<pid_t> pids;
  try {
    for (size_t i = 0; i < commands.size(); ++i) pids.push_back(spawn_logged(commands[i], logs[i]));
  } catch (...) {
    for (pid_t pid : pids) wait_exit(pid);
    cleanup();
    throw;
  }
  std::vector<int> rcs;
  for (pid_t pid : pids) rcs.push_back(wait_exit(pid));
  for (size_t i = 0; i < rcs.size(); ++i)
    if (rcs[i] != 0) throw failure(i, rcs[i]);
  if (parts > 1) {
    std::vector<std::string> argv = compiler_and_flags();
    argv.insert(argv.end(), {"-o", so_tmp});
    argv.insert(argv.end(), objects.begin(), objects.end());
    argv.insert(argv.end(), opt_.libs.begin(), opt_.libs.end());
    commands.push_back(std::move(argv));
    logs.push_back((dir / fmt::format("{}.log{}.link", key, suffix)).string());
    int rc = run_logged(commands.back(), logs.back());
    if (rc != 0) throw failure(commands.size() - 1, rc);
  }
  cleanup();
  bool ok = false;
  std::string bytes = read_file(so_tmp, &ok);
  if (!ok) throw std::runtime_error(fmt::format("cpu backend: the compiler did not write {}", so_tmp));
  fs::rename(so_tmp, so, ec);
  if (ec) {
    fs::remove(so_tmp, ec);
    throw std::runtime_error(fmt::format("cpu backend: cannot rename {} to {}", so_tmp, so));
  }
  write_atomic(meta, meta_for(bytes), suffix);
}

JitLibrary JitCache::load(const std::string& source, const std::string& label) {
  JitLibrary lib;
  lib.key = key(source);
  std::string full = source + key_symbol_line(lib.key);
  lib.so_path = (fs::path(dir_) / (lib.key + ".so")).string();
  lib.cpp_path = (fs::path(dir_) / (lib.key + ".cpp")).string();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    throw std::runtime_error(fmt::format("cpu backend: cannot create the cache directory {}: {}", dir_, ec.message()));

  bool present = fs::exists(lib.so_path, ec) || fs::exists(fs::path(dir_) / (lib.key + ".meta"), ec);
  bool valid = entry_valid(lib.key);
  if (valid) {
    ++hits_;
  } else {
    if (present) ++rebuilds_;
    fs::remove(lib.so_path, ec);
    fs::remove(fs::path(dir_) / (lib.key + ".meta"), ec);
    compile(full, lib.key, label);
  }

  std::string load_path = lib.so_path;
  for (int attempt = 0; attempt < 2; ++attempt) {
    lib.handle = dlopen(load_path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (load_path != lib.so_path) fs::remove(load_path, ec);
    std::string why;
    if (!lib.handle) {
      const char* e = dlerror();
      why = e ? e : "dlopen failed";
    } else {
      dlerror();
      auto* k = static_cast<const char*>(dlsym(lib.handle, "dnnc_key"));
      if (k && lib.key == k) return lib;
      why = "its dnnc_key does not match the cache key";
    }
    if (attempt == 1 || !valid)
      throw std::runtime_error(
          fmt::format("cpu backend: cannot load {} built from {}: {}", lib.so_path, lib.cpp_path, why));
    // A cached entry that looked valid but does not load: rebuild it once. If the bad library
    // did load, it stays mapped under its path (RTLD_NODELETE), so load the new one by another name.
    ++rebuilds_;
    bool loaded = lib.handle != nullptr;
    fs::remove(lib.so_path, ec);
    fs::remove(fs::path(dir_) / (lib.key + ".meta"), ec);
    compile(full, lib.key, label);
    valid = false;
    if (loaded) {
      load_path = lib.so_path + fmt::format(".load.{}.{}", getpid(), ++temp_counter_);
      fs::create_hard_link(lib.so_path, load_path, ec);
      if (ec) fs::copy_file(lib.so_path, load_path, ec);
    }
  }
  return lib;
}

std::vector<JitLibrary> JitCache::load_all(const std::vector<std::pair<std::string, std::string>>& sources,
                                           unsigned jobs) {
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  compiler_identity();  // computed once, before the threads read it
  std::vector<JitLibrary> libs(sources.size());
  std::vector<std::exception_ptr> errors(sources.size());
  std::atomic<size_t> next = 0;
  auto worker = [&] {
    for (size_t i = next++; i < sources.size(); i = next++) {
      try {
        libs[i] = load(sources[i].first, sources[i].second);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < std::min<size_t>(jobs, sources.size()); ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return libs;
}

}  // namespace dnnc::runtime::cpu
