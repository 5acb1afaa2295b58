// Tests of training-time augmentation (runtime/data/augment.h): the exact pixels of a crop
// and a flip, the draws' range, balance and determinism, and the batch built from them.
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "runtime/data/augment.h"

using namespace dnnc::runtime;

namespace {

// A 2-channel 3x4 image whose pixel (ch, y, x) is 100*ch + 10*y + x + 1 (never 0).
std::vector<uint8_t> ramp() {
  std::vector<uint8_t> v;
  for (int ch = 0; ch < 2; ++ch)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 4; ++x) v.push_back(static_cast<uint8_t>(100 * ch + 10 * y + x + 1));
  return v;
}

}  // namespace

TEST_CASE("augment_image crops the zero-padded image at the offsets, then mirrors it", "[data][augment]") {
  std::vector<uint8_t> src = ramp(), dst(src.size());
  // Padding 1, offsets (0, 2): the crop starts one row above the image and one column in.
  augment_image(src.data(), dst.data(), 2, 3, 4, 1, {0, 2, false});
  CHECK(dst == std::vector<uint8_t>{0,   0,   0,   0,   2,   3,   4,   0,   12,  13,  14,  0,    // ch 0
                                    0,   0,   0,   0,   102, 103, 104, 0,   112, 113, 114, 0});  // ch 1
  augment_image(src.data(), dst.data(), 2, 3, 4, 1, {0, 2, true});
  CHECK(dst == std::vector<uint8_t>{0, 0,   0,   0,   0, 4,   3,   2,   0, 14,  13,  12,
                                    0, 0,   0,   0,   0, 104, 103, 102, 0, 114, 113, 112});
  // The centre offset (P, P) without a flip is the image itself; with one, its mirror.
  augment_image(src.data(), dst.data(), 2, 3, 4, 1, {1, 1, false});
  CHECK(dst == src);
  augment_image(src.data(), dst.data(), 2, 3, 4, 0, {0, 0, true});
  CHECK(dst[0] == 4);
  CHECK(dst[3] == 1);
  CHECK(dst[23] == 121);
}

TEST_CASE("augment draws cover every offset, flip at rate p, and repeat for the same key", "[data][augment]") {
  Augmentation a{4, 0.5};
  std::map<std::pair<int64_t, int64_t>, int> offsets;
  int flips = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    AugmentDraw d = augment_draw(a, 7, 3, i);
    REQUIRE(d.dy >= 0);
    REQUIRE(d.dy <= 8);
    REQUIRE(d.dx >= 0);
    REQUIRE(d.dx <= 8);
    ++offsets[{d.dy, d.dx}];
    flips += d.flip;
    AugmentDraw again = augment_draw(a, 7, 3, i);
    REQUIRE((again.dy == d.dy && again.dx == d.dx && again.flip == d.flip));
  }
  CHECK(offsets.size() == 81);
  for (const auto& [o, count] : offsets) CHECK(count > n / 81 / 2);  // ~247 each
  CHECK(flips > n * 0.47);
  CHECK(flips < n * 0.53);
  // Another epoch or seed draws otherwise (for most images).
  int same_epoch = 0, same_seed = 0;
  for (int i = 0; i < 1000; ++i) {
    AugmentDraw d = augment_draw(a, 7, 3, i), e = augment_draw(a, 7, 4, i), s = augment_draw(a, 8, 3, i);
    same_epoch += d.dy == e.dy && d.dx == e.dx && d.flip == e.flip;
    same_seed += d.dy == s.dy && d.dx == s.dx && d.flip == s.flip;
  }
  CHECK(same_epoch < 30);  // chance: 1000 / 162
  CHECK(same_seed < 30);
  // The draws of a fixed key, pinned: a change of the generator changes every run's batches.
  AugmentDraw pinned = augment_draw(a, 1, 0, 0);
  CHECK(std::vector<int64_t>{pinned.dy, pinned.dx, pinned.flip} == std::vector<int64_t>{6, 3, 0});
  // Flip only, or crop only.
  CHECK(augment_draw({0, 1.0}, 1, 0, 5).flip);
  CHECK(augment_draw({0, 1.0}, 1, 0, 5).dx == 0);
  CHECK(!augment_draw({2, 0}, 1, 0, 5).flip);
}

TEST_CASE("augmented_batch augments each image with its own draw and keeps its label", "[data][augment]") {
  Dataset ds;
  ds.n = 3, ds.c = 2, ds.h = 3, ds.w = 4;
  for (int k = 0; k < 3; ++k) {
    std::vector<uint8_t> img = ramp();
    for (auto& v : img) v = static_cast<uint8_t>(v + k);
    ds.images.insert(ds.images.end(), img.begin(), img.end());
  }
  ds.labels = {5, 6, 7};
  Augmentation a{1, 0.5};
  std::vector<int64_t> idx{2, 0};
  Dataset b = augmented_batch(ds, idx, a, 11, 2);
  REQUIRE(b.n == 2);
  CHECK(b.labels == std::vector<int64_t>{7, 5});
  for (size_t k = 0; k < idx.size(); ++k) {
    std::vector<uint8_t> want(24);
    augment_image(ds.images.data() + idx[k] * 24, want.data(), 2, 3, 4, 1, augment_draw(a, 11, 2, idx[k]));
    CHECK(std::vector<uint8_t>(b.images.begin() + static_cast<long>(k) * 24,
                               b.images.begin() + static_cast<long>(k + 1) * 24) == want);
  }
  std::vector<int64_t> bad{3};
  CHECK_THROWS_AS(augmented_batch(ds, bad, a, 11, 2), std::invalid_argument);
}
