// The sgemm helpers of the generated C++ (codegen/cpp/cpp_gemm.cpp) have one path per x86
// vector ISA: dnnc's own AVX-512 kernels, its own AVX2 kernels for the products OpenBLAS runs
// slower there, and OpenBLAS alone. The host runs only one of them (the model and op tests run
// that one), so every path is compiled here for its ISA, and each path the host can execute is
// run on products that reach all of its kernels, against a double-precision loop.
#include <catch2/catch.hpp>
#include <string>

#include "codegen/cpp/cpp_gemm.h"
#include "codegen/cpp/cpp_printer.h"
#include "runtime/cpu/jit_cache.h"

using namespace dnnc;

namespace {

// Worst relative error ‖C − ref‖/‖ref‖ over products that reach each kernel of each path
// (α = 0.5, β = 0.25 over a nonzero C): own packed sgemm (both tile widths, partial tiles,
// two K blocks, two row blocks), the short-k Aᵀ·B and dot-product routes, and the OpenBLAS
// fallbacks (tiny products, m = 1 and n = 1).
const char* kCheck = R"(
static double dnnc_check_one(bool ta, bool tb, i64 m, i64 n, i64 k) {
  float* a = (float*)__builtin_malloc(sizeof(float) * m * k);
  float* b = (float*)__builtin_malloc(sizeof(float) * k * n);
  float* c = (float*)__builtin_malloc(sizeof(float) * m * n);
  double* r = (double*)__builtin_malloc(sizeof(double) * m * n);
  unsigned s = 12345u + (unsigned)(m * 7 + n * 13 + k);
  auto next = [&] { s = s * 1664525u + 1013904223u; return (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f; };
  for (i64 i = 0; i < m * k; ++i) a[i] = next();
  for (i64 i = 0; i < k * n; ++i) b[i] = next();
  for (i64 i = 0; i < m * n; ++i) c[i] = next();
  const i64 lda = ta ? m : k, ldb = tb ? k : n;
  for (i64 i = 0; i < m; ++i)
    for (i64 j = 0; j < n; ++j) {
      double acc = 0;
      for (i64 p = 0; p < k; ++p)
        acc += (double)(ta ? a[p * lda + i] : a[i * lda + p]) * (double)(tb ? b[j * ldb + p] : b[p * ldb + j]);
      r[i * n + j] = 0.5 * acc + 0.25 * (double)c[i * n + j];
    }
  dnnc_sgemm(ta, tb, m, n, k, 0.5f, a, lda, b, ldb, 0.25f, c, n);
  double e = 0, nr = 0;
  for (i64 i = 0; i < m * n; ++i) e += (c[i] - r[i]) * (c[i] - r[i]), nr += r[i] * r[i];
  __builtin_free(a), __builtin_free(b), __builtin_free(c), __builtin_free(r);
  return __builtin_sqrt(e / nr);
}
extern "C" double dnnc_gemm_check() {
  struct { bool ta, tb; i64 m, n, k; } cases[] = {
      {false, false, 37, 53, 300}, {false, true, 37, 53, 300}, {true, false, 37, 53, 300}, {true, true, 37, 53, 300},
      {false, false, 100, 1600, 20}, {true, false, 100, 200, 40}, {true, false, 97, 1600, 9},
      {false, true, 13, 29, 300},  {false, true, 7, 11, 2100},  {false, true, 6, 25, 784},
      {false, false, 3, 5, 4},     {false, false, 1, 40, 30},   {true, true, 30, 1, 40}};
  double worst = 0;
  for (auto& t : cases) {
    const double e = dnnc_check_one(t.ta, t.tb, t.m, t.n, t.k);
    if (!(e <= worst)) worst = e;  // a NaN error wins
  }
  return worst;
}
#if defined(DNNC_OWN_GEMM)
extern "C" int dnnc_gemm_path() { return DNNC_OWN_GEMM; }
#else
extern "C" int dnnc_gemm_path() { return 0; }
#endif
)";

std::string check_source() {
  return std::string(codegen::cpp_prelude()) + codegen::cpp_gemm_helpers() + kCheck;
}

runtime::cpu::JitOptions options(const std::string& march, bool openblas) {
  runtime::cpu::JitOptions o;
  o.cache_dir = DNNC_TEST_CACHE_DIR;
  for (std::string& f : o.flags)
    if (f == "-march=native") f = "-march=" + march;
  if (openblas) o.flags.push_back("-DDNNC_GEMM_OPENBLAS");
  return o;
}

bool host_has(const char* isa) {
  __builtin_cpu_init();
  if (std::string(isa) == "avx512f") return __builtin_cpu_supports("avx512f");
  if (std::string(isa) == "avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return true;
}

}  // namespace

TEST_CASE("every sgemm helper path compiles for its ISA and matches a float64 product where the host runs it",
          "[cpu][gemm]") {
  struct Path {
    const char* march;
    const char* needs;
    bool openblas;
    int expect;  // DNNC_OWN_GEMM
  } paths[] = {{"skylake-avx512", "avx512f", false, 512}, {"haswell", "avx2", false, 256},
               {"haswell", "avx2", true, 0}, {"x86-64", "", false, 0}};
  for (const Path& p : paths) {
    INFO("-march=" << p.march << (p.openblas ? " -DDNNC_GEMM_OPENBLAS" : ""));
    runtime::cpu::JitCache cache(options(p.march, p.openblas));
    runtime::cpu::JitLibrary lib = cache.load(check_source(), std::string("gemm check ") + p.march);
    if (!host_has(p.needs)) continue;  // compiled, not runnable here
    CHECK(reinterpret_cast<int (*)()>(lib.symbol("dnnc_gemm_path"))() == p.expect);
    const double err = reinterpret_cast<double (*)()>(lib.symbol("dnnc_gemm_check"))();
    INFO("worst relative error " << err);
    CHECK(err <= 1e-6);
  }
}
