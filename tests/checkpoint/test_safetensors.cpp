// safetensors: round trip, the independently written fixture, byte layout, every corruption.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "runtime/checkpoint/safetensors.h"
#include "tests/data/test_files.h"

using namespace dnnc::runtime;
using namespace dnnc::testing;
using Catch::Matchers::Contains;

namespace {

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

const Tensor& find(const NamedTensors& ts, const std::string& name) {
  for (const auto& [n, t] : ts)
    if (n == name) return t;
  FAIL("no tensor " << name);
  throw std::logic_error("unreachable");
}

// A safetensors file from a header text and a data buffer, laid out by hand.
std::vector<uint8_t> raw_file(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  for (size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<uint8_t>(i));
  return out;
}

std::string read_error(const std::string& path) {
  try {
    read_safetensors(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("safetensors round trip keeps f32, i64, scalars, empty tensors and metadata", "[safetensors]") {
  TempDir t;
  NamedTensors in;
  in.emplace_back("fc2.weight", Tensor::from_f32({2, 3}, {1.5f, -0.0f, 3.25f, 1e-30f, -7.0f, 1e30f}));
  in.emplace_back("a.step", Tensor::from_i64({}, {-9000000000LL}));
  in.emplace_back("labels", Tensor::from_i64({3}, {0, -1, 1LL << 50}));
  in.emplace_back("scale", Tensor::scalar(0.125f));
  in.emplace_back("nothing", Tensor(dnnc::ir::DType::f32, {0, 5}));
  const std::map<std::string, std::string> meta = {{"epoch", "3"}, {"model", "SimpleCNN"}};
  write_safetensors(t.file("ck.safetensors"), in, meta);
  SafetensorsFile out = read_safetensors_file(t.file("ck.safetensors"));
  CHECK(out.metadata == meta);
  REQUIRE(out.tensors.size() == in.size());
  for (const auto& [name, tensor] : in) {
    INFO(name);
    CHECK(same_bytes(find(out.tensors, name), tensor));
  }
  // Data is laid out in name order.
  std::vector<std::string> names;
  for (const auto& nt : out.tensors) names.push_back(nt.first);
  CHECK(names == std::vector<std::string>{"a.step", "fc2.weight", "labels", "nothing", "scale"});
}

TEST_CASE("write_safetensors lays out the header per the spec", "[safetensors]") {
  TempDir t;
  NamedTensors in;
  in.emplace_back("w", Tensor::from_f32({3}, {1, 2, 3}));
  in.emplace_back("n", Tensor::from_i64({1}, {5}));
  write_safetensors(t.file("x.safetensors"), in, {{"k", "v"}});
  auto bytes = read_bytes(t.file("x.safetensors"));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  CHECK(n % 8 == 0);  // data starts 8-byte aligned
  REQUIRE(bytes.size() == 8 + n + 12 + 8);
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(n));
  CHECK(header.find_last_not_of(' ') + 1 >= header.size() - 7);  // padding is at most 7 spaces
  auto j = nlohmann::json::parse(header);
  CHECK(j["__metadata__"]["k"] == "v");
  CHECK(j["n"]["dtype"] == "I64");
  CHECK(j["n"]["shape"] == nlohmann::json::array({1}));
  CHECK(j["n"]["data_offsets"] == nlohmann::json::array({0, 8}));
  CHECK(j["w"]["dtype"] == "F32");
  CHECK(j["w"]["data_offsets"] == nlohmann::json::array({8, 20}));
  float w1 = 0;
  std::memcpy(&w1, bytes.data() + 8 + n + 8 + 4, 4);
  CHECK(w1 == 2.0f);
}

TEST_CASE("read_safetensors reads the fixture written independently by make_fixture.py", "[safetensors]") {
  SafetensorsFile f = read_safetensors_file("tests/checkpoint/fixture.safetensors");
  CHECK(f.metadata == std::map<std::string, std::string>{{"format", "pt"}, {"producer", "make_fixture.py"}});
  REQUIRE(f.tensors.size() == 5);
  const Tensor& w = find(f.tensors, "fc.weight");
  REQUIRE(w.shape() == std::vector<int64_t>{3, 4});
  for (int i = 0; i < 12; ++i) CHECK(w.f32()[i] == static_cast<float>(i) * 0.25f - 1.5f);
  const Tensor& b = find(f.tensors, "fc.bias");
  REQUIRE(b.shape() == std::vector<int64_t>{3});
  CHECK(b.f32()[0] == 0.1f);
  CHECK(b.f32()[1] == -2.5f);
  CHECK(b.f32()[2] == 3e38f);
  CHECK(find(f.tensors, "empty").shape() == std::vector<int64_t>{0, 4});
  const Tensor& l = find(f.tensors, "labels");
  REQUIRE(l.dtype() == dnnc::ir::DType::i64);
  CHECK(std::vector<int64_t>(l.i64(), l.i64() + 5) == std::vector<int64_t>{-3, 0, 7, 1LL << 40, -(1LL << 62)});
  const Tensor& s = find(f.tensors, "step");
  CHECK(s.rank() == 0);
  CHECK(s.i64()[0] == 12345678901LL);
}

TEST_CASE("read_safetensors rejects a file too short for the header length", "[safetensors]") {
  TempDir t;
  write_bytes(t.file("short"), {1, 0, 0});
  CHECK_THAT(read_error(t.file("short")), Contains("short") && Contains("3 bytes"));
}

TEST_CASE("read_safetensors rejects a header length past the end of the file", "[safetensors]") {
  TempDir t;
  auto bytes = raw_file("{}      ", 0);
  bytes[0] = 200;
  write_bytes(t.file("long_header"), bytes);
  CHECK_THAT(read_error(t.file("long_header")),
             Contains("long_header") && Contains("header length 200") && Contains("16 bytes"));
  bytes[0] = 0;
  bytes[7] = 0x80;  // 2^63
  write_bytes(t.file("huge_header"), bytes);
  CHECK_THAT(read_error(t.file("huge_header")), Contains("past the end"));
}

TEST_CASE("read_safetensors rejects a header nested too deep, without recursing through it", "[safetensors]") {
  // Regression: a metadata value nested 200,000 deep overflowed the stack while its error
  // message was built (json::dump is recursive).
  TempDir t;
  const int depth = 200000;
  std::string header = "{\"__metadata__\":{\"k\":";
  for (int i = 0; i < depth; ++i) header += "{\"x\":";
  header += "1";
  header += std::string(depth, '}');
  header += "}}";
  write_bytes(t.file("deep"), raw_file(header, 0));
  CHECK_THAT(read_error(t.file("deep")),
             Contains("deep") && Contains("header nests JSON") && Contains("a safetensors header needs 3"));
}

TEST_CASE("read_safetensors rejects a header that is not a JSON object", "[safetensors]") {
  TempDir t;
  write_bytes(t.file("notjson"), raw_file("{\"a\": {\"dtype\": ", 0));
  CHECK_THAT(read_error(t.file("notjson")), Contains("notjson") && Contains("not valid JSON"));
  write_bytes(t.file("array"), raw_file("[1, 2] ", 0));
  CHECK_THAT(read_error(t.file("array")), Contains("array") && Contains("not an object"));
}

TEST_CASE("read_safetensors rejects a number too large for JSON's types as its own error", "[safetensors]") {
  // Regression (fuzz, issue 23): nlohmann-json throws out_of_range.406, not parse_error, for a
  // number that overflows while parsing; it escaped the reader as a bare library exception.
  TempDir t;
  write_bytes(t.file("overflow"),
              raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,1844674407370955E1612]}})", 4));
  CHECK_THAT(read_error(t.file("overflow")),
             Contains("overflow") && Contains("not valid JSON") && Contains("number overflow"));
}

TEST_CASE("read_safetensors rejects unsupported dtypes, naming tensor and dtype", "[safetensors]") {
  TempDir t;
  write_bytes(t.file("f16"), raw_file(R"({"half.w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4));
  CHECK_THAT(read_error(t.file("f16")), Contains("f16") && Contains("half.w") && Contains("F16"));
}

TEST_CASE("read_safetensors rejects malformed entries and metadata", "[safetensors]") {
  TempDir t;
  write_bytes(t.file("no_offsets"), raw_file(R"({"w":{"dtype":"F32","shape":[1]}})", 4));
  CHECK_THAT(read_error(t.file("no_offsets")), Contains("'w'") && Contains("data_offsets"));
  write_bytes(t.file("neg_shape"), raw_file(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4));
  CHECK_THAT(read_error(t.file("neg_shape")), Contains("'w'") && Contains("shape"));
  // A size of 2^63 next to a 0 needs no bytes; it must not wrap into a negative dim.
  write_bytes(t.file("wrap_shape"),
              raw_file(R"({"w":{"dtype":"F32","shape":[0,9223372036854775808],"data_offsets":[0,0]}})", 0));
  CHECK_THAT(read_error(t.file("wrap_shape")), Contains("'w'") && Contains("larger than 2^63 - 1"));
  write_bytes(t.file("reversed"), raw_file(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", 4));
  CHECK_THAT(read_error(t.file("reversed")), Contains("'w'") && Contains("[4, 0]"));
  write_bytes(t.file("meta"), raw_file(R"({"__metadata__":{"epoch":3}})", 0));
  CHECK_THAT(read_error(t.file("meta")), Contains("meta") && Contains("epoch") && Contains("not a string"));
}

TEST_CASE("read_safetensors rejects offsets past the data", "[safetensors]") {
  TempDir t;
  write_bytes(t.file("oob"), raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4));
  CHECK_THAT(read_error(t.file("oob")), Contains("oob") && Contains("'w'") && Contains("past the end"));
}

TEST_CASE("read_safetensors rejects overlapping tensors", "[safetensors]") {
  TempDir t;
  write_bytes(t.file("overlap"), raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                          R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                          12));
  CHECK_THAT(read_error(t.file("overlap")), Contains("overlap") && Contains("'a'") && Contains("'b'"));
}

TEST_CASE("read_safetensors rejects data bytes that belong to no tensor", "[safetensors]") {
  TempDir t;
  write_bytes(t.file("gap"), raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                      12));
  CHECK_THAT(read_error(t.file("gap")), Contains("gap") && Contains("[4, 8)") && Contains("'b'"));
  write_bytes(t.file("trailing"), raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 6));
  CHECK_THAT(read_error(t.file("trailing")), Contains("trailing") && Contains("[4, 6)"));
}

TEST_CASE("read_safetensors rejects a shape whose size differs from the byte length", "[safetensors]") {
  TempDir t;
  write_bytes(t.file("size"), raw_file(R"({"w":{"dtype":"I64","shape":[2,2],"data_offsets":[0,16]}})", 16));
  CHECK_THAT(read_error(t.file("size")), Contains("size") && Contains("'w'") && Contains("32 bytes") && Contains("16"));
}

TEST_CASE("read_safetensors rejects a tensor name given twice", "[safetensors]") {
  TempDir t;
  write_bytes(t.file("dup"), raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                      R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                      8));
  CHECK_THAT(read_error(t.file("dup")), Contains("dup") && Contains("'w'") && Contains("twice"));
}

TEST_CASE("write_safetensors rejects bad names and unwritable paths, keeping the old file", "[safetensors]") {
  TempDir t;
  const std::string path = t.file("keep.safetensors");
  NamedTensors good;
  good.emplace_back("x", Tensor::scalar(1.0f));
  write_safetensors(path, good);
  NamedTensors dup = good;
  dup.emplace_back("x", Tensor::scalar(2.0f));
  CHECK_THROWS_WITH(write_safetensors(path, dup), Contains("keep.safetensors") && Contains("'x'"));
  NamedTensors reserved;
  reserved.emplace_back("__metadata__", Tensor::scalar(1.0f));
  CHECK_THROWS_WITH(write_safetensors(path, reserved), Contains("__metadata__"));
  NamedTensors hollow;
  hollow.emplace_back("h", Tensor());
  CHECK_THROWS_WITH(write_safetensors(path, hollow), Contains("'h'"));
  CHECK_THROWS_WITH(write_safetensors((t.path() / "missing" / "ck.safetensors").string(), good),
                    Contains("ck.safetensors"));
  auto back = read_safetensors(path);
  REQUIRE(back.size() == 1);
  CHECK(back[0].second.f32()[0] == 1.0f);
  // No temporary files are left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(t.path())) files += e.is_regular_file();
  CHECK(files == 1);
}

TEST_CASE("read_safetensors reads the project's PyTorch golden files", "[safetensors]") {
  const std::filesystem::path dir = "tests/golden";
  if (!std::filesystem::exists(dir)) {
    WARN("SKIPPED: " << dir << " not found");
    return;
  }
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    INFO(e.path());
    CHECK_NOTHROW(read_safetensors_file(e.path().string()));
    ++files;
  }
  CHECK(files > 0);
}
