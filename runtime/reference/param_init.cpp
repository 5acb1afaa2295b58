// Parameter initialisation from each param's ir::InitSpec with a documented, portable RNG
// (docs/init.md): one std::mt19937_64 per param, seeded from (seed, name).
#include <fmt/format.h>

#include <random>
#include <stdexcept>

#include "runtime/reference/interpreter.h"

namespace dnnc::runtime::reference {

namespace {

uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

[[noreturn]] void init_error(const ir::Param& p, const std::string& msg) {
  throw std::runtime_error(fmt::format("init_params: param '{}': {}", p.name, msg));
}

}  // namespace

uint64_t param_seed(uint64_t seed, const std::string& name) { return splitmix64(seed + fnv1a64(name)); }

namespace {

// Bytes of a param's storage, as a double so that no shape can overflow it.
double param_bytes(const ir::Param& p) {
  double n = p.type.dtype == ir::DType::i64 ? 8 : 4;
  for (ir::Dim d : p.type.shape) n *= static_cast<double>(d);
  return n;
}

// Fails with the sizes at fault, before allocating anything, if the params cannot fit in the
// memory this machine has available (rather than dying in the allocator or the OOM killer).
void check_fits_in_memory(const ir::Module& m) {
  int64_t avail = available_memory_bytes();
  if (avail < 0) return;
  double total = 0;
  const ir::Param* largest = nullptr;
  for (const ir::Param& p : m.params) {
    total += param_bytes(p);
    if (!largest || param_bytes(p) > param_bytes(*largest)) largest = &p;
  }
  if (total <= static_cast<double>(avail) || !largest) return;
  throw OutOfMemory(fmt::format(
      "model {}: its {} parameters and optimizer state need {}, but only {} of memory is available; the largest is "
      "'{}' {} ({})",
      m.name, m.params.size(), format_bytes(total), format_bytes(static_cast<double>(avail)), largest->name,
      ir::to_string(largest->type, m.batch_symbol), format_bytes(param_bytes(*largest))));
}

}  // namespace

ParamStore init_params(const ir::Module& m, uint64_t seed) {
  ParamStore store;
  for (const ir::Param& p : m.params)
    for (ir::Dim d : p.type.shape)
      if (d < 0) init_error(p, "shape " + ir::to_string(p.type, m.batch_symbol) + " is not concrete");
  check_fits_in_memory(m);
  for (const ir::Param& p : m.params) {
    Tensor t;
    try {
      t = Tensor(p.type.dtype, p.type.shape);
    } catch (const OutOfMemory& e) {
      throw OutOfMemory(fmt::format("init_params: param '{}': {}", p.name, e.what()));
    }
    const std::string& kind = p.init.kind;
    if (kind == "zeros") {
      // Tensor is zero-filled already.
    } else if (kind == "ones") {
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (t.dtype() == ir::DType::i64) t.i64()[i] = 1;
        else t.f32()[i] = 1.0f;
      }
    } else if (kind == "uniform") {
      if (t.dtype() != ir::DType::f32) init_error(p, "\"uniform\" init needs an f32 param, found " + describe(t));
      if (!(p.init.bound >= 0)) init_error(p, fmt::format("uniform bound must be >= 0, found {}", p.init.bound));
      std::mt19937_64 rng(param_seed(seed, p.name));
      double b = p.init.bound;
      for (int64_t i = 0; i < t.numel(); ++i) {
        double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1), 53 random bits
        t.f32()[i] = static_cast<float>(-b + 2.0 * b * u);
      }
    } else {
      init_error(p, "unknown init kind \"" + kind + "\" (expected uniform, zeros or ones)");
    }
    store.tensors[p.name] = std::move(t);
  }
  return store;
}

}  // namespace dnnc::runtime::reference
