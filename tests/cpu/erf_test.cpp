// dnnc_erff, the f32 erf of the generated C++ (codegen/cpp/cpp_printer.cpp's prelude), against
// the math library's erff: compiled by the JIT with the cpu backend's own flags, then compared on
// every 7th float bit pattern, on every pattern near its branch points (|a| = 0.927734375, the
// clamp at 4, zero, the smallest normals) and on the specials. Within 1 ulp everywhere (glibc's
// erff is itself within 1 ulp of erf), NaN exactly where erff gives NaN, odd, erf(±inf) = ±1.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "codegen/cpp/cpp_printer.h"
#include "runtime/cpu/jit_cache.h"

using namespace dnnc;

namespace {

const char* kCheck = R"(
extern "C" float erff(float);
static double dnnc_ulps(float got, float want) {
  if (__builtin_isnan(want) || __builtin_isnan(got)) return __builtin_isnan(want) == __builtin_isnan(got) ? 0.0 : 1e30;
  const float aw = __builtin_fabsf(want);
  double ulp = (double)__builtin_nextafterf(aw, __builtin_inff()) - (double)aw;
  if (ulp < 0x1p-149) ulp = 0x1p-149;
  const double d = (double)got - (double)want;
  return (d < 0 ? -d : d) / ulp;
}
// The worst ulp error over bit patterns begin, begin + stride, ... below end; its pattern in *at.
extern "C" double dnnc_erf_check(unsigned long long begin, unsigned long long end, unsigned long long stride,
                                 unsigned* at) {
  double worst = 0;
  unsigned worst_at = 0;
#pragma omp parallel num_threads(2)
  {
    double w = 0;
    unsigned wa = 0;
#pragma omp for schedule(static)
    for (long long i = 0; i < (long long)((end - begin + stride - 1) / stride); ++i) {
      const unsigned bits = (unsigned)(begin + (unsigned long long)i * stride);
      float x;
      __builtin_memcpy(&x, &bits, 4);
      const double e = dnnc_ulps(dnnc_erff(x), erff(x));
      if (e > w) w = e, wa = bits;
    }
#pragma omp critical
    if (w > worst) worst = w, worst_at = wa;
  }
  *at = worst_at;
  return worst;
}
extern "C" float dnnc_erf_at(float x) { return dnnc_erff(x); }
)";

struct Erf {
  runtime::cpu::JitLibrary lib;
  double (*check)(unsigned long long, unsigned long long, unsigned long long, unsigned*);
  float (*at)(float);
};

const Erf& erf_lib() {
  static Erf e = [] {
    runtime::cpu::JitOptions o;
    o.cache_dir = DNNC_TEST_CACHE_DIR;
    runtime::cpu::JitCache cache(o);
    Erf r;
    r.lib = cache.load(std::string(codegen::cpp_prelude()) + kCheck, "erf check");
    r.check = reinterpret_cast<decltype(r.check)>(r.lib.symbol("dnnc_erf_check"));
    r.at = reinterpret_cast<decltype(r.at)>(r.lib.symbol("dnnc_erf_at"));
    return r;
  }();
  return e;
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

void check_range(uint64_t begin, uint64_t end, uint64_t stride) {
  unsigned at = 0;
  double worst = erf_lib().check(begin, end, stride, &at);
  float x;
  std::memcpy(&x, &at, 4);
  INFO("patterns [" << begin << ", " << end << ") step " << stride << ": worst " << worst << " ulp at " << x);
  CHECK(worst <= 1.0);
}

}  // namespace

TEST_CASE("dnnc_erff is within 1 ulp of erff on every 7th float", "[cpu][erf]") {
  check_range(0, uint64_t{1} << 32, 7);
}

TEST_CASE("dnnc_erff is within 1 ulp of erff at every float near its branch points", "[cpu][erf]") {
  for (float p : {0.927734375f, 4.0f, 0.0f, 1.17549435e-38f, 0.5f, 1.0f, 2.0f, 3.5f})
    for (float sign : {1.0f, -1.0f}) {
      uint64_t b = bits_of(sign * p);
      check_range(b > 65536 ? b - 65536 : 0, std::min<uint64_t>(b + 65536, uint64_t{1} << 32), 1);
    }
}

TEST_CASE("dnnc_erff: specials, sign and saturation", "[cpu][erf]") {
  const Erf& e = erf_lib();
  CHECK(e.at(INFINITY) == 1.0f);
  CHECK(e.at(-INFINITY) == -1.0f);
  CHECK(std::isnan(e.at(NAN)));
  CHECK(std::signbit(e.at(-0.0f)));
  CHECK(e.at(0.0f) == 0.0f);
  CHECK(e.at(10.0f) == 1.0f);
  for (float x : {1e-30f, 0.1f, 0.927734375f, 1.3f, 2.7f, 3.99f}) CHECK(e.at(-x) == -e.at(x));
}
