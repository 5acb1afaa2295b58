// Training-time augmentation of uint8 images (runtime/data/augment.h).
#include "runtime/data/augment.h"

#include <fmt/format.h>

#include <stdexcept>

namespace dnnc::runtime {
namespace {

// splitmix64's finalizer: a bijective mix of 64 bits.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

AugmentDraw augment_draw(const Augmentation& a, uint64_t seed, int64_t epoch, int64_t index) {
  uint64_t r = mix(mix(mix(seed ^ 0x6175676d656e7421ULL) + static_cast<uint64_t>(epoch)) + static_cast<uint64_t>(index));
  uint64_t r2 = mix(r + 0x9e3779b97f4a7c15ULL);
  AugmentDraw d;
  if (a.crop_padding > 0) {
    uint64_t span = static_cast<uint64_t>(2 * a.crop_padding + 1);
    d.dy = static_cast<int64_t>((r >> 32) % span);
    d.dx = static_cast<int64_t>((r & 0xffffffffULL) % span);
  }
  // A uniform double in [0, 1) from 53 bits; flipped when below p (torch: rand(1) < p).
  if (a.flip_p > 0) d.flip = static_cast<double>(r2 >> 11) * 0x1.0p-53 < a.flip_p;
  return d;
}

void augment_image(const uint8_t* src, uint8_t* dst, int64_t c, int64_t h, int64_t w, int64_t padding,
                   const AugmentDraw& d) {
  for (int64_t ch = 0; ch < c; ++ch) {
    const uint8_t* plane = src + ch * h * w;
    for (int64_t y = 0; y < h; ++y) {
      int64_t sy = y + d.dy - padding;  // row in the unpadded image
      uint8_t* row = dst + (ch * h + y) * w;
      if (sy < 0 || sy >= h) {
        for (int64_t x = 0; x < w; ++x) row[x] = 0;
        continue;
      }
      for (int64_t x = 0; x < w; ++x) {
        int64_t sx = (d.flip ? w - 1 - x : x) + d.dx - padding;
        row[x] = sx < 0 || sx >= w ? 0 : plane[sy * w + sx];
      }
    }
  }
}

Dataset augmented_batch(const Dataset& ds, std::span<const int64_t> indices, const Augmentation& a, uint64_t seed,
                        int64_t epoch) {
  Dataset out;
  out.n = static_cast<int64_t>(indices.size());
  out.c = ds.c, out.h = ds.h, out.w = ds.w, out.num_classes = ds.num_classes;
  out.images.resize(static_cast<size_t>(out.n * ds.image_size()));
  out.labels.resize(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    int64_t i = indices[k];
    if (i < 0 || i >= ds.n)
      throw std::invalid_argument(fmt::format("augment: sample index {} is outside the data set of {}", i, ds.n));
    augment_image(ds.images.data() + i * ds.image_size(), out.images.data() + static_cast<int64_t>(k) * ds.image_size(),
                  ds.c, ds.h, ds.w, a.crop_padding, augment_draw(a, seed, epoch, i));
    out.labels[k] = ds.labels[static_cast<size_t>(i)];
  }
  return out;
}

}  // namespace dnnc::runtime
