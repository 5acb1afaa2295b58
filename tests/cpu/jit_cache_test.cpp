// The JIT cache: a second load of the same source does not run the compiler; a truncated .so,
// a missing .meta or a library with the wrong key is rebuilt; a compiler error shows the
// compiler's log and the generated file's path.
#include "runtime/cpu/jit_cache.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

using namespace dnnc::runtime::cpu;
namespace fs = std::filesystem;

namespace {

// A fresh cache directory for one test case.
std::string fresh_dir(const std::string& name) {
  fs::path dir = fs::path(DNNC_TEST_CACHE_DIR) / "jit_cache_test" / (name + "." + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir.string();
}

JitOptions tiny(const std::string& dir) {
  JitOptions o;
  o.cache_dir = dir;
  o.flags = {"-O1", "-shared", "-fPIC"};
  o.libs = {};
  return o;
}

int answer(const JitLibrary& lib) { return reinterpret_cast<int (*)()>(lib.symbol("answer"))(); }

std::string source(int value) { return "extern \"C\" int answer() { return " + std::to_string(value) + "; }\n"; }

// The message of the error c.load(src, label) throws; empty if it loads.
std::string load_error(JitCache& c, const std::string& src, const std::string& label) {
  try {
    c.load(src, label);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("a second load of the same source is a cache hit without a compile", "[cpu][jit]") {
  std::string dir = fresh_dir("hit");
  JitCache first(tiny(dir));
  JitLibrary a = first.load(source(42), "answer");
  CHECK(first.compiles() == 1);
  CHECK(answer(a) == 42);
  CHECK(fs::exists(a.cpp_path));
  JitCache second(tiny(dir));
  JitLibrary b = second.load(source(42), "answer");
  CHECK(second.compiles() == 0);
  CHECK(second.hits() == 1);
  CHECK(b.so_path == a.so_path);
  CHECK(answer(b) == 42);
  JitLibrary c = second.load(source(43), "answer");  // a different source is a different entry
  CHECK(second.compiles() == 1);
  CHECK(c.so_path != a.so_path);
}

TEST_CASE("keys depend on the source and on the flags", "[cpu][jit]") {
  std::string dir = fresh_dir("keys");
  JitCache a(tiny(dir));
  JitOptions o = tiny(dir);
  o.flags.push_back("-DX=1");
  JitCache b(o);
  CHECK(a.key(source(1)) == a.key(source(1)));
  CHECK(a.key(source(1)) != a.key(source(2)));
  CHECK(a.key(source(1)) != b.key(source(1)));
  CHECK(a.key(source(1)).size() == 32);
}

// Copies the entry of `key` from `from` to a fresh directory (so the copy was never mapped by
// this process: truncating a loaded library would break its mapping) and returns the new dir.
std::string copy_entry(const std::string& from, const std::string& key, const std::string& name) {
  std::string dir = fresh_dir(name);
  fs::create_directories(dir);
  for (const char* ext : {".cpp", ".so", ".meta"})
    fs::copy_file(fs::path(from) / (key + ext), fs::path(dir) / (key + ext));
  return dir;
}

TEST_CASE("a truncated or unrecorded cache entry is detected and rebuilt", "[cpu][jit]") {
  std::string origin = fresh_dir("origin");
  JitCache c(tiny(origin));
  JitLibrary built = c.load(source(7), "seven");
  auto size = fs::file_size(built.so_path);

  std::string dir = copy_entry(origin, built.key, "truncated");
  fs::path so = fs::path(dir) / (built.key + ".so");
  fs::resize_file(so, size / 2);
  JitCache again(tiny(dir));
  JitLibrary lib = again.load(source(7), "seven");
  CHECK(again.rebuilds() == 1);
  CHECK(again.compiles() == 1);
  CHECK(answer(lib) == 7);
  JitCache later(tiny(dir));  // the rebuilt entry is valid again
  later.load(source(7), "seven");
  CHECK(later.compiles() == 0);
  CHECK(later.hits() == 1);

  std::string dir2 = copy_entry(origin, built.key, "unrecorded");
  fs::remove(fs::path(dir2) / (built.key + ".meta"));
  JitCache third(tiny(dir2));
  CHECK(answer(third.load(source(7), "seven")) == 7);
  CHECK(third.rebuilds() == 1);
  CHECK(third.compiles() == 1);
}

TEST_CASE("a library whose dnnc_key is not the expected one is rebuilt", "[cpu][jit]") {
  std::string dir = fresh_dir("wrong_key");
  JitCache c(tiny(dir));
  JitLibrary one = c.load(source(1), "one");
  // Plant entry 1's library (and a matching .meta) under entry 2's key.
  std::string k2 = c.key(source(2));
  fs::copy_file(one.so_path, fs::path(dir) / (k2 + ".so"));
  fs::copy_file(fs::path(dir) / (one.key + ".meta"), fs::path(dir) / (k2 + ".meta"));
  JitCache d(tiny(dir));
  JitLibrary two = d.load(source(2), "two");
  CHECK(d.rebuilds() == 1);
  CHECK(d.compiles() == 1);
  CHECK(answer(two) == 2);
}

TEST_CASE("a compiler error reports the compiler's log and the generated source path", "[cpu][jit]") {
  std::string dir = fresh_dir("error");
  JitCache c(tiny(dir));
  std::string what = load_error(c, "extern \"C\" int answer() { return undeclared_thing; }\n", "broken unit");
  REQUIRE(!what.empty());
  std::string cpp =
      (fs::path(dir) / (c.key("extern \"C\" int answer() { return undeclared_thing; }\n") + ".cpp")).string();
  CHECK(what.find("compiling broken unit failed") != std::string::npos);
  CHECK(what.find("undeclared_thing") != std::string::npos);  // the compiler's diagnostic
  CHECK(what.find(cpp) != std::string::npos);
  CHECK(fs::exists(cpp));
}

TEST_CASE("a cached library altered in place, its key and size unchanged, is rebuilt, not run", "[cpu][jit]") {
  // The .meta records a digest of the library's bytes, so a change that keeps the file size and
  // the embedded dnnc_key (here: the constant the function returns) is still caught.
  const std::string src = "extern \"C\" int answer() { return 0x5a5a5a5a; }\n";
  std::string origin = fresh_dir("tamper_origin");
  JitCache c(tiny(origin));
  JitLibrary built = c.load(src, "tamper");
  REQUIRE(answer(built) == 0x5a5a5a5a);
  std::string dir = copy_entry(origin, built.key, "tamper");
  fs::path so = fs::path(dir) / (built.key + ".so");
  std::string bytes;
  {
    std::ifstream in(so, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t at = bytes.find("\x5a\x5a\x5a\x5a");
  REQUIRE(at != std::string::npos);
  bytes[at] = '\x5b';  // now the library would return 0x5a5a5a5b
  std::ofstream(so, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  JitCache again(tiny(dir));
  JitLibrary lib = again.load(src, "tamper");
  CHECK(again.rebuilds() == 1);
  CHECK(again.compiles() == 1);
  CHECK(answer(lib) == 0x5a5a5a5a);
}

TEST_CASE("load_all compiles several sources concurrently and returns them in order", "[cpu][jit]") {
  std::string dir = fresh_dir("load_all");
  JitCache c(tiny(dir));
  c.load(source(7), "seven");  // already cached: a hit inside load_all
  std::vector<std::pair<std::string, std::string>> srcs{
      {source(1), "one"}, {source(7), "seven"}, {source(3), "three"}, {source(1), "one again"}};
  std::vector<JitLibrary> libs = c.load_all(srcs, 2);
  REQUIRE(libs.size() == 4);
  CHECK(answer(libs[0]) == 1);
  CHECK(answer(libs[1]) == 7);
  CHECK(answer(libs[2]) == 3);
  CHECK(answer(libs[3]) == 1);
  CHECK(c.compiles() + c.hits() == 5);  // the first load and the four of load_all
  CHECK(c.compiles() >= 3);             // 1, 3 and the first load of 7 (two threads may both build 1)
}

TEST_CASE("load_all reports the failing source after the others finish", "[cpu][jit]") {
  std::string dir = fresh_dir("load_all_error");
  JitCache c(tiny(dir));
  std::vector<std::pair<std::string, std::string>> srcs{
      {source(5), "five"}, {"extern \"C\" int answer() { return nope; }\n", "broken unit"}, {source(6), "six"}};
  std::string what;
  try {
    c.load_all(srcs, 2);
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  CHECK(what.find("compiling broken unit failed") != std::string::npos);
  // The good sources were still built: loading them now is a hit.
  JitCache again(tiny(dir));
  again.load(source(5), "five");
  again.load(source(6), "six");
  CHECK(again.hits() == 2);
}

namespace {

// Two parts: part 1 defines one_of_two(), part 0 answer() (calling it) and its own answer
// for which part it was compiled as; compiled whole, the file would not build (DNNC_PART unset).
const char* kTwoParts =
    "// a unit in two parts\n"
    "#define DNNC_PARTS 2\n"
    "int one_of_two();\n"
    "#if DNNC_PART == 1\n"
    "int one_of_two() { return 100 * DNNC_PART; }\n"
    "#endif\n"
    "#if DNNC_PART == 0\n"
    "extern \"C\" int part_zero() { return DNNC_PART; }\n"
    "extern \"C\" int answer() { return one_of_two() + 2; }\n"
    "#endif\n";

}  // namespace

TEST_CASE("a unit with #define DNNC_PARTS n is compiled as n parts and linked into one library", "[cpu][jit]") {
  CHECK(unit_parts(kTwoParts) == 2);
  CHECK(unit_parts(source(1)) == 1);
  CHECK(unit_parts("// x\n#define DNNC_PARTS 0\n") == 1);
  CHECK(unit_parts("// x\n#define DNNC_PARTS 65\n") == 1);
  std::string dir = fresh_dir("parts");
  JitCache c(tiny(dir));
  JitLibrary lib = c.load(kTwoParts, "two parts");
  CHECK(c.compiles() == 1);
  CHECK(answer(lib) == 102);
  CHECK(reinterpret_cast<int (*)()>(lib.symbol("part_zero"))() == 0);
  // No part's object or log is left behind: only the entry's .cpp, .so and .meta.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    std::string ext = e.path().extension().string();
    CHECK((ext == ".cpp" || ext == ".so" || ext == ".meta"));
  }
  CHECK(files == 3);
  JitCache again(tiny(dir));
  CHECK(answer(again.load(kTwoParts, "two parts")) == 102);
  CHECK(again.hits() == 1);
}

TEST_CASE("a failing part or link names the part and shows the compiler's log", "[cpu][jit]") {
  std::string dir = fresh_dir("parts_error");
  JitCache c(tiny(dir));
  std::string bad_part = std::string(kTwoParts) + "#if DNNC_PART == 1\nint broken = nope;\n#endif\n";
  std::string what = load_error(c, bad_part, "split unit");
  CHECK(what.find("compiling split unit (part 1 of 2) failed") != std::string::npos);
  CHECK(what.find("nope") != std::string::npos);
  CHECK(what.find("-DDNNC_PART=1") != std::string::npos);
  // Both parts compile, but both define answer(): the link fails.
  std::string bad_link = std::string(kTwoParts) + "#if DNNC_PART == 1\nextern \"C\" int answer() { return 1; }\n#endif\n";
  what = load_error(c, bad_link, "split unit");
  CHECK(what.find("compiling split unit (linking its 2 parts) failed") != std::string::npos);
  CHECK(what.find("answer") != std::string::npos);
  // The failed builds leave their sources (for the message's path) and nothing else: no part
  // objects, logs or half-linked library.
  for (const auto& e : fs::directory_iterator(dir)) {
    INFO(e.path().filename().string());
    CHECK(e.path().extension() == ".cpp");
  }
}
