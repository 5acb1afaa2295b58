// IDX reader: plain and gzip input, and every header/size validation.
#include <catch2/catch.hpp>

#include "runtime/data/idx.h"
#include "tests/data/test_files.h"

using dnnc::runtime::read_idx;
using namespace dnnc::testing;
using Catch::Matchers::Contains;

namespace {
std::vector<uint8_t> seq(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + 7);
  return v;
}
}  // namespace

TEST_CASE("read_idx reads a plain rank-3 file", "[idx]") {
  TempDir t;
  auto payload = seq(2 * 3 * 4);
  write_bytes(t.file("a"), idx_bytes(0x803, {2, 3, 4}, payload));
  auto a = read_idx(t.file("a"));
  CHECK(a.magic == 0x803);
  CHECK(a.dims == std::vector<int64_t>{2, 3, 4});
  CHECK(a.data == payload);
}

TEST_CASE("read_idx gunzips, detecting gzip by magic bytes and not by name", "[idx]") {
  TempDir t;
  auto payload = seq(5 * 7);
  auto bytes = idx_bytes(0x802, {5, 7}, payload);
  write_gzip(t.file("compressed_without_suffix"), bytes);
  write_bytes(t.file("plain_with_suffix.gz"), bytes);
  auto a = read_idx(t.file("compressed_without_suffix"));
  auto b = read_idx(t.file("plain_with_suffix.gz"));
  CHECK(a.dims == std::vector<int64_t>{5, 7});
  CHECK(a.data == payload);
  CHECK(b.data == payload);
}

TEST_CASE("read_idx rejects a magic that is not unsigned-byte IDX", "[idx]") {
  TempDir t;
  write_bytes(t.file("float.idx"), idx_bytes(0x00000D01, {4}, seq(16)));  // type 0x0D (float)
  CHECK_THROWS_WITH(read_idx(t.file("float.idx")), Contains("float.idx") && Contains("0x00000d01"));
  write_bytes(t.file("text"), {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'});
  CHECK_THROWS_WITH(read_idx(t.file("text")), Contains("text") && Contains("magic"));
  write_bytes(t.file("rank0"), idx_bytes(0x800, {}, {}));
  CHECK_THROWS_WITH(read_idx(t.file("rank0")), Contains("rank"));
}

TEST_CASE("read_idx rejects files shorter than the magic or the dims", "[idx]") {
  TempDir t;
  write_bytes(t.file("empty"), {});
  CHECK_THROWS_WITH(read_idx(t.file("empty")), Contains("empty") && Contains("0 bytes"));
  auto bytes = idx_bytes(0x803, {2, 3, 4}, {});
  bytes.resize(9);  // magic + 1 dim + 1 byte
  write_bytes(t.file("short_header"), bytes);
  CHECK_THROWS_WITH(read_idx(t.file("short_header")), Contains("short_header") && Contains("16-byte header") &&
                                                          Contains("holds 9 bytes"));
}

TEST_CASE("read_idx reports truncated data with expected and found sizes", "[idx]") {
  TempDir t;
  auto bytes = idx_bytes(0x803, {5, 28, 28}, seq(3 * 784));  // claims 5 images, holds 3
  write_bytes(t.file("trunc"), bytes);
  write_gzip(t.file("trunc.gz"), bytes);
  const std::string expected = std::to_string(16 + 5 * 784), found = std::to_string(16 + 3 * 784);
  CHECK_THROWS_WITH(read_idx(t.file("trunc")), Contains("trunc") && Contains(expected) && Contains(found));
  CHECK_THROWS_WITH(read_idx(t.file("trunc.gz")), Contains("trunc.gz") && Contains(expected) && Contains(found));
}

TEST_CASE("read_idx reports data beyond what the header says", "[idx]") {
  TempDir t;
  auto bytes = idx_bytes(0x801, {10}, seq(13));
  write_bytes(t.file("long"), bytes);
  write_gzip(t.file("long.gz"), bytes);
  CHECK_THROWS_WITH(read_idx(t.file("long")), Contains("long") && Contains("18 bytes") && Contains("21 bytes"));
  CHECK_THROWS_WITH(read_idx(t.file("long.gz")), Contains("long.gz") && Contains("18 bytes") && Contains("21 bytes"));
}

TEST_CASE("read_idx refuses a hostile header before allocating for it", "[idx]") {
  TempDir t;
  // 4e9 x 4e9 bytes: beyond any limit, rejected from the header alone.
  write_bytes(t.file("huge"), idx_bytes(0x802, {4000000000u, 4000000000u}, seq(10)));
  CHECK_THROWS_WITH(read_idx(t.file("huge")), Contains("huge") && Contains("refusing"));
  // 3.9 GB claimed, 10 bytes present: plain checked by file size, gzip by the data that arrives.
  auto bytes = idx_bytes(0x801, {3900000000u}, seq(10));
  write_bytes(t.file("claims_more"), bytes);
  write_gzip(t.file("claims_more.gz"), bytes);
  CHECK_THROWS_WITH(read_idx(t.file("claims_more")), Contains("3900000008") && Contains("holds 18 bytes"));
  CHECK_THROWS_WITH(read_idx(t.file("claims_more.gz")), Contains("3900000008") && Contains("holds 18 bytes"));
}

TEST_CASE("read_idx reports a corrupt or cut gzip stream", "[idx]") {
  TempDir t;
  auto gz = gzip_bytes(idx_bytes(0x803, {20, 28, 28}, seq(20 * 784)));
  auto cut = gz;
  cut.resize(gz.size() / 2);
  write_bytes(t.file("cut.gz"), cut);
  CHECK_THROWS_WITH(read_idx(t.file("cut.gz")), Contains("cut.gz"));
  auto garbage = gz;
  for (size_t i = 12; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(garbage[i] ^ 0x5a);
  write_bytes(t.file("garbage.gz"), garbage);
  CHECK_THROWS_WITH(read_idx(t.file("garbage.gz")), Contains("garbage.gz"));
}

TEST_CASE("read_idx names a missing file", "[idx]") {
  TempDir t;
  CHECK_THROWS_WITH(read_idx(t.file("nope")), Contains("nope") && Contains("cannot open"));
}
