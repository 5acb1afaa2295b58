// Atomic checkpoint writes: a writer killed mid-save leaves the previous file intact.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/safetensors.h"
#include "tests/data/test_files.h"

using namespace dnnc::runtime;
using namespace dnnc::testing;

namespace {

NamedTensors filled(int64_t n, float value) {
  NamedTensors ts;
  ts.emplace_back("w", Tensor::from_f32({n}, std::vector<float>(static_cast<size_t>(n), value)));
  ts.emplace_back("step", Tensor::from_i64({}, {static_cast<int64_t>(value)}));
  return ts;
}

// The value every element of "w" holds; fails the test if the file is not one complete save.
float whole_file_value(const std::string& path) {
  NamedTensors ts = read_safetensors(path);
  REQUIRE(ts.size() == 2);
  const Tensor& w = ts[1].second;  // data order: "step" then "w"
  REQUIRE(ts[1].first == "w");
  const float v = w.f32()[0];
  for (int64_t i = 0; i < w.numel(); ++i)
    if (w.f32()[i] != v) FAIL("element " << i << " of w is " << w.f32()[i] << ", element 0 is " << v);
  CHECK(ts[0].second.i64()[0] == static_cast<int64_t>(v));
  return v;
}

}  // namespace

TEST_CASE("AtomicFile commit replaces the file; destruction without commit leaves it", "[atomic]") {
  TempDir t;
  const std::string path = t.file("f");
  write_bytes(path, {'o', 'l', 'd'});
  {
    AtomicFile f(path);
    f.write("new!", 4);
    CHECK(std::filesystem::exists(f.temp_path()));
  }  // abandoned
  CHECK(read_bytes(path) == std::vector<uint8_t>{'o', 'l', 'd'});
  CHECK_FALSE(std::filesystem::exists(atomic_temp_path(path)));
  AtomicFile g(path);
  g.write("new!", 4);
  g.commit();
  CHECK(read_bytes(path) == std::vector<uint8_t>{'n', 'e', 'w', '!'});
  CHECK_FALSE(std::filesystem::exists(g.temp_path()));
}

TEST_CASE("a process killed in the middle of a save leaves the old checkpoint intact", "[atomic]") {
  TempDir t;
  const std::string path = t.file("ck.safetensors");
  write_safetensors(path, filled(1000, 1.0f));
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // child: start a save, write half of it, report, then hang until killed
    AtomicFile f(path);
    std::vector<uint8_t> half(4096, 0xab);
    f.write(half.data(), half.size());
    char c = 'x';
    if (write(ready[1], &c, 1) != 1) _exit(2);
    pause();
    _exit(0);
  }
  char c = 0;
  REQUIRE(read(ready[0], &c, 1) == 1);
  close(ready[0]);
  close(ready[1]);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFSIGNALED(status));
  const std::string left = path + ".tmp." + std::to_string(child);
  CHECK(std::filesystem::exists(left));  // the half-written save
  CHECK(whole_file_value(path) == 1.0f);
  // The next save removes it (its writer is gone) but not the file of a live writer (us).
  const std::string live = path + ".tmp." + std::to_string(getppid());
  write_bytes(live, {'l'});
  write_bytes(path + ".tmp.12ab", {'x'});  // not a pid: not ours to remove
  write_safetensors(path, filled(1000, 2.0f));
  CHECK_FALSE(std::filesystem::exists(left));
  CHECK(std::filesystem::exists(live));
  CHECK(std::filesystem::exists(path + ".tmp.12ab"));
  CHECK(whole_file_value(path) == 2.0f);
}

TEST_CASE("write_safetensors killed at any moment leaves a complete old or new file", "[atomic][slow]") {
  TempDir t;
  const std::string path = t.file("ck.safetensors");
  const int64_t n = 2 << 20;  // 8 MB per save
  write_safetensors(path, filled(n, 1.0f));
  for (int round = 0; round < 3; ++round) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // child: save new versions in a loop until killed
      try {
        NamedTensors ts = filled(n, 2.0f);
        for (;;) write_safetensors(path, ts);
      } catch (...) {
        _exit(1);
      }
    }
    // Kill it once its temporary file exists, a little later each round.
    const std::string temp = path + ".tmp." + std::to_string(child);
    for (int i = 0; i < 2000 && !std::filesystem::exists(temp); ++i)
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    std::this_thread::sleep_for(std::chrono::milliseconds(2 * round));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFSIGNALED(status));
    const float v = whole_file_value(path);
    CHECK((v == 1.0f || v == 2.0f));
    std::filesystem::remove(temp);
  }
}
