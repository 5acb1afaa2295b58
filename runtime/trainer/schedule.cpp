// Per-epoch sample order and batching (runtime/trainer/schedule.h).
#include "runtime/trainer/schedule.h"

#include <numeric>
#include <random>

#include "ir/check.h"

namespace dnnc::runtime {

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle) {
  DNNC_CHECK(n >= 0, "sample count must be non-negative");
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!shuffle) return order;
  std::mt19937_64 rng(splitmix64(seed ^ splitmix64(static_cast<uint64_t>(epoch) + 1)));
  for (int64_t i = n - 1; i > 0; --i) {
    // j uniform in [0, i] (multiply-shift; the bias is below 2^-40 for any data set size here).
    auto j = static_cast<int64_t>((static_cast<unsigned __int128>(rng()) * static_cast<uint64_t>(i + 1)) >> 64);
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

int64_t batches_per_epoch(int64_t n, int64_t batch) {
  DNNC_CHECK(batch >= 1, "batch size must be positive");
  return (n + batch - 1) / batch;
}

std::span<const int64_t> batch_indices(const std::vector<int64_t>& order, int64_t batch, int64_t b) {
  auto n = static_cast<int64_t>(order.size());
  DNNC_CHECK(b >= 0 && b < batches_per_epoch(n, batch), "batch index out of range");
  int64_t begin = b * batch;
  int64_t end = std::min(n, begin + batch);
  return {order.data() + begin, static_cast<size_t>(end - begin)};
}

}  // namespace dnnc::runtime
