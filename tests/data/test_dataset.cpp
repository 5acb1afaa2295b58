// Dataset -> tensors: normalization values (hand-computed and torch's bits), batching by index.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/data/dataset.h"

using dnnc::runtime::Dataset;
using dnnc::runtime::labels_tensor;
using dnnc::runtime::Tensor;
using dnnc::runtime::to_tensor;

namespace {

// n images of c x 2 x 2 whose pixels are given; labels i % 10.
Dataset tiny(int64_t n, int64_t c, std::vector<uint8_t> pixels) {
  Dataset ds;
  ds.n = n;
  ds.c = c;
  ds.h = 2;
  ds.w = 2;
  ds.images = std::move(pixels);
  for (int64_t i = 0; i < n; ++i) ds.labels.push_back(i % 10);
  return ds;
}

}  // namespace

TEST_CASE("to_tensor normalizes like (x/255 - mean)/std, hand-computed", "[dataset]") {
  Dataset ds = tiny(1, 1, {0, 255, 51, 102});
  std::vector<int64_t> idx = {0};
  Tensor t = to_tensor(ds, {0.5}, {0.5}, idx);
  REQUIRE(t.shape() == std::vector<int64_t>{1, 1, 2, 2});
  // 0 -> -1, 255 -> 1, 51/255 = 0.2 -> -0.6, 102/255 = 0.4 -> -0.2
  const double want[] = {-1.0, 1.0, -0.6, -0.2};
  for (int i = 0; i < 4; ++i) CHECK(std::abs(t.f32()[i] - want[i]) <= 1e-6);
  // MNIST's constants: 0 -> -0.1307/0.3081 = -0.424212917..., 255 -> 0.8693/0.3081 = 2.821486530...
  Tensor m = to_tensor(ds, {0.1307}, {0.3081}, idx);
  CHECK(std::abs(m.f32()[0] - -0.4242129178838039) <= 1e-6);
  CHECK(std::abs(m.f32()[1] - 2.8214865303472897) <= 1e-6);
}

TEST_CASE("to_tensor uses one mean and std per channel", "[dataset]") {
  Dataset ds = tiny(1, 3, {255, 255, 255, 255, 0, 0, 0, 0, 51, 51, 51, 51});
  std::vector<int64_t> idx = {0};
  Tensor t = to_tensor(ds, {0.5, 0.25, 0.2}, {0.5, 0.25, 0.1}, idx);
  // R: (1 - 0.5)/0.5 = 1; G: (0 - 0.25)/0.25 = -1; B: (0.2 - 0.2)/0.1 = 0
  const double want[] = {1.0, -1.0, 0.0};
  for (int ch = 0; ch < 3; ++ch)
    for (int p = 0; p < 4; ++p) CHECK(std::abs(t.f32()[ch * 4 + p] - want[ch]) <= 1e-6);
}

TEST_CASE("to_tensor matches torch's ToTensor+Normalize bit for bit", "[dataset]") {
  std::ifstream f("tests/data/normalize_torch.txt");
  REQUIRE(f);
  std::vector<uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[i] = static_cast<uint8_t>(i);
  Dataset ds = tiny(64, 1, all);  // 64 images of 2x2 = bytes 0..255 in order
  std::vector<int64_t> idx(64);
  for (int64_t i = 0; i < 64; ++i) idx[i] = i;
  std::string line;
  int pairs = 0;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    double mean = 0, std = 0;
    std::istringstream(line) >> mean >> std;
    REQUIRE(std::getline(f, line));
    std::istringstream bits(line);
    Tensor t = to_tensor(ds, {mean}, {std}, idx);
    int mismatches = 0;
    for (int x = 0; x < 256; ++x) {
      uint32_t want = 0, got = 0;
      bits >> std::hex >> want;
      std::memcpy(&got, t.f32() + x, 4);
      if (got != want && mismatches++ < 3) FAIL_CHECK("mean " << mean << " std " << std << " x=" << x);
    }
    CHECK(mismatches == 0);
    ++pairs;
  }
  CHECK(pairs == 4);
}

TEST_CASE("to_tensor and labels_tensor gather the given indices in order", "[dataset]") {
  std::vector<uint8_t> px(5 * 4);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 10);
  Dataset ds = tiny(5, 1, px);
  ds.labels = {4, 3, 2, 1, 0};
  std::vector<int64_t> idx = {3, 0, 3};
  Tensor x = to_tensor(ds, {0.0}, {1.0}, idx);
  Tensor y = labels_tensor(ds, idx);
  REQUIRE(x.shape() == std::vector<int64_t>{3, 1, 2, 2});
  REQUIRE(y.shape() == std::vector<int64_t>{3});
  CHECK(y.dtype() == dnnc::ir::DType::i64);
  for (int k = 0; k < 3; ++k) {
    for (int p = 0; p < 4; ++p) CHECK(x.f32()[k * 4 + p] == static_cast<float>(px[idx[k] * 4 + p]) / 255.0f);
    CHECK(y.i64()[k] == ds.labels[idx[k]]);
  }
}

TEST_CASE("to_tensor and labels_tensor reject bad arguments", "[dataset]") {
  Dataset ds = tiny(2, 3, std::vector<uint8_t>(2 * 3 * 4));
  std::vector<int64_t> ok = {1}, bad = {2}, neg = {-1};
  CHECK_THROWS_AS(to_tensor(ds, {0.5, 0.5}, {0.5, 0.5, 0.5}, ok), std::invalid_argument);
  CHECK_THROWS_AS(to_tensor(ds, {0.5}, {0.5, 0.0, 0.5}, ok), std::invalid_argument);
  CHECK_THROWS_AS(to_tensor(ds, {0.5}, {0.5}, bad), std::invalid_argument);
  CHECK_THROWS_AS(labels_tensor(ds, neg), std::invalid_argument);
  CHECK_NOTHROW(to_tensor(ds, {0.5}, {0.5}, ok));
}
