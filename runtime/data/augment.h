// Training-time data augmentation on the uint8 images, as torchvision's RandomCrop(size,
// padding) followed by RandomHorizontalFlip(p): each image is padded with zero (black) pixels,
// cropped back to its size at a random offset, then mirrored left-right with probability p.
// The draws are a pure function of (seed, epoch, image index), so a run and its resume see the
// same augmented batches, whatever the batch size of evaluation or the device.
#pragma once
#include <cstdint>
#include <span>

#include "runtime/data/dataset.h"

namespace dnnc::runtime {

struct Augmentation {
  int64_t crop_padding = 0;  // random_crop(padding: P): offsets in [0, 2P] on each axis; 0: no crop
  double flip_p = 0;         // random_horizontal_flip(p): 0: no flip
  bool active() const { return crop_padding > 0 || flip_p > 0; }
};

/// One image's draw: the crop's offsets into the padded image (`dy`, `dx` in [0, 2P]) and
/// whether it is flipped.
struct AugmentDraw {
  int64_t dy = 0, dx = 0;
  bool flip = false;
};

/// The draw for image `index` in epoch `epoch` (0-based) of a run with seed `seed`.
AugmentDraw augment_draw(const Augmentation& a, uint64_t seed, int64_t epoch, int64_t index);

/// Writes the augmented c x h x w image `src` to `dst` (same size): dst[ch][y][x] is the padded
/// image's pixel (y + dy, x' + dx) with x' = w-1-x if flipped, else x; 0 outside the image.
void augment_image(const uint8_t* src, uint8_t* dst, int64_t c, int64_t h, int64_t w, int64_t padding,
                   const AugmentDraw& d);

/// The images at `indices`, augmented with the draws of epoch `epoch`, as a data set of
/// indices.size() images (labels copied) for to_tensor. Throws std::invalid_argument for an
/// index outside [0, n).
Dataset augmented_batch(const Dataset& ds, std::span<const int64_t> indices, const Augmentation& a, uint64_t seed,
                        int64_t epoch);

}  // namespace dnnc::runtime
