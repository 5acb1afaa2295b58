// The order samples are trained in: a seeded permutation per epoch (reproducible across runs
// and platforms, so resuming at any batch replays the same order) cut into batches.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace dnnc::runtime {

/// A permutation of 0..n-1 for `epoch` (0-based): Fisher-Yates driven by a std::mt19937_64
/// seeded with splitmix64(seed ^ splitmix64(epoch + 1)), with bounded draws by multiply-shift
/// (no implementation-defined std::distribution), so it is the same on every platform. With
/// `shuffle` false, the identity. Asserts n >= 0.
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle = true);

/// Number of batches of an epoch of `n` samples: the last, partial batch counts (as PyTorch's
/// DataLoader with drop_last=False). Asserts batch >= 1.
int64_t batches_per_epoch(int64_t n, int64_t batch);

/// The indices of batch `b` (0-based) of `order`: [b*batch, min((b+1)*batch, n)).
/// Asserts b is in range.
std::span<const int64_t> batch_indices(const std::vector<int64_t>& order, int64_t batch, int64_t b);

/// splitmix64's finalizer applied to x + 0x9e3779b97f4a7c15.
uint64_t splitmix64(uint64_t x);

}  // namespace dnnc::runtime
