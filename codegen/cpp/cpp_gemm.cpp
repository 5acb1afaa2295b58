// The GEMM steps of a Program as C++ (cpp_gemm.h).
#include "codegen/cpp/cpp_gemm.h"

#include <fmt/format.h>

#include "codegen/c/c_printer.h"
#include "codegen/cpp/cpp_printer.h"
#include "ir/check.h"

namespace dnnc::codegen {

const char* cpp_gemm_helpers() {
  return R"(// No IPA-CP clones of the GEMM helpers: GCC would otherwise specialize them for the constant
// shapes of every call site, which doubles the compile time of a model with many GEMMs and
// gains nothing measurable (the work is in the micro-kernel, whose loops have runtime bounds).
#define DNNC_NOCLONE __attribute__((noclone))
#if defined(__AVX512F__) && !defined(DNNC_GEMM_OPENBLAS)
// dnnc's own single-threaded sgemm (OpenBLAS may be pinned to its AVX2 kernels, e.g.
// OPENBLAS_CORETYPE=Haswell, at half an AVX-512 machine's peak): op(B) packed in panels of
// dnnc_nr columns, op(A) in panels of dnnc_mr rows (zero-padded), a dnnc_mr x dnnc_nr register
// tile over K blocks of at most 256. AVX-512: an 8 x 48 tile of 24 zmm accumulators.
#define DNNC_OWN_GEMM 512
typedef float dnnc_vec __attribute__((vector_size(64)));
typedef float dnnc_vecu __attribute__((vector_size(64), aligned(4)));
enum { dnnc_vl = 16, dnnc_mr = 8, dnnc_nr = 48, dnnc_kc = 256, dnnc_mc = 96, dnnc_nc = 1536 };
#elif defined(__AVX2__) && defined(__FMA__) && !defined(DNNC_GEMM_OPENBLAS)
// AVX2 + FMA: a 6 x 16 tile of 12 ymm accumulators (the 16 registers hold them, two B vectors
// and a broadcast), used for the products OpenBLAS runs slower (dnnc_sgemm).
#define DNNC_OWN_GEMM 256
typedef float dnnc_vec __attribute__((vector_size(32)));
typedef float dnnc_vecu __attribute__((vector_size(32), aligned(4)));
enum { dnnc_vl = 8, dnnc_mr = 6, dnnc_nr = 16, dnnc_kc = 256, dnnc_mc = 96, dnnc_nc = 1536 };
#endif
#ifdef DNNC_OWN_GEMM

// Rows [i0, i0 + mc) x k [p0, p0 + kc) of op(A) as dnnc_mr-row panels ap[panel][p][dnnc_mr].
DNNC_NOCLONE static void dnnc_pack_a(bool ta, const float* a, i64 lda, i64 i0, i64 mc, i64 p0, i64 kc, float* ap) {
  for (i64 ir = 0; ir < mc; ir += dnnc_mr) {
    const i64 rows = mc - ir < dnnc_mr ? mc - ir : dnnc_mr;
    float* dst = ap + ir * kc;
    if (!ta) {
      for (int r = 0; r < dnnc_mr; ++r) {
        if (r < rows) {
          const float* src = a + (i0 + ir + r) * lda + p0;
          for (i64 p = 0; p < kc; ++p) dst[p * dnnc_mr + r] = src[p];
        } else {
          for (i64 p = 0; p < kc; ++p) dst[p * dnnc_mr + r] = 0.0f;
        }
      }
    } else {  // op(A)[i][p] = a[p][i]
      for (i64 p = 0; p < kc; ++p) {
        const float* src = a + (p0 + p) * lda + i0 + ir;
        for (int r = 0; r < dnnc_mr; ++r) dst[p * dnnc_mr + r] = r < rows ? src[r] : 0.0f;
      }
    }
  }
}

// k [p0, p0 + kc) x columns [j0, j0 + nc) of op(B) as dnnc_nr-column panels bp[panel][p][dnnc_nr].
DNNC_NOCLONE static void dnnc_pack_b(bool tb, const float* b, i64 ldb, i64 p0, i64 kc, i64 j0, i64 nc, float* bp) {
  for (i64 jr = 0; jr < nc; jr += dnnc_nr) {
    const i64 cols = nc - jr < dnnc_nr ? nc - jr : dnnc_nr;
    float* dst = bp + jr * kc;
    if (!tb) {
      for (i64 p = 0; p < kc; ++p) {
        const float* src = b + (p0 + p) * ldb + j0 + jr;
        float* d = dst + p * dnnc_nr;
        if (cols == dnnc_nr) __builtin_memcpy(d, src, sizeof(float) * dnnc_nr);
        else for (int c = 0; c < dnnc_nr; ++c) d[c] = c < cols ? src[c] : 0.0f;
      }
      continue;
    }
    const float* src = b + (j0 + jr) * ldb + p0;  // op(B)[p][j] = b[j][p], 8 values of p at a time
    i64 p = 0;
    for (; p + 8 <= kc; p += 8) {
      for (i64 c = 0; c < cols; ++c) {
#pragma GCC unroll 8
        for (int q = 0; q < 8; ++q) dst[(p + q) * dnnc_nr + c] = src[c * ldb + p + q];
      }
      for (i64 c = cols; c < dnnc_nr; ++c)
        for (int q = 0; q < 8; ++q) dst[(p + q) * dnnc_nr + c] = 0.0f;
    }
    for (; p < kc; ++p)
      for (i64 c = 0; c < dnnc_nr; ++c) dst[p * dnnc_nr + c] = c < cols ? src[c * ldb + p] : 0.0f;
  }
}

// C tile (rows x cols, at most dnnc_mr x dnnc_vl W) = alpha ap-panel · bp-panel + beta C over kc.
template <int W>
static inline void dnnc_tile(i64 kc, const float* __restrict__ ap, const float* __restrict__ bp, float* __restrict__ c,
                             i64 ldc, int rows, int cols, float alpha, float beta) {
  dnnc_vec acc[dnnc_mr][W];
#pragma GCC unroll 8
  for (int i = 0; i < dnnc_mr; ++i)
#pragma GCC unroll 3
    for (int j = 0; j < W; ++j) acc[i][j] = (dnnc_vec){};
  for (i64 p = 0; p < kc; ++p) {
    dnnc_vec bv[W];
#pragma GCC unroll 3
    for (int j = 0; j < W; ++j) bv[j] = *(const dnnc_vec*)(bp + p * dnnc_nr + j * dnnc_vl);
#pragma GCC unroll 8
    for (int i = 0; i < dnnc_mr; ++i) {
      const float av = ap[p * dnnc_mr + i];
#pragma GCC unroll 3
      for (int j = 0; j < W; ++j) acc[i][j] += av * bv[j];
    }
  }
  if (rows == dnnc_mr && cols == W * dnnc_vl) {
#pragma GCC unroll 8
    for (int i = 0; i < dnnc_mr; ++i)
#pragma GCC unroll 3
      for (int j = 0; j < W; ++j) {
        dnnc_vecu* cp = (dnnc_vecu*)(c + i * ldc + j * dnnc_vl);
        *cp = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * *cp;
      }
    return;
  }
  if (cols > W * dnnc_vl) __builtin_unreachable();  // (GCC warned of reading t out of bounds)
  for (int i = 0; i < rows; ++i) {
    float t[W * dnnc_vl];
#pragma GCC unroll 3
    for (int j = 0; j < W; ++j) *(dnnc_vecu*)(t + j * dnnc_vl) = alpha * acc[i][j];
    float* row = c + i * ldc;
    for (int j = 0; j < cols; ++j) row[j] = beta == 0.0f ? t[j] : t[j] + beta * row[j];
  }
}

// C[m,n] = alpha op(A) op(B) + beta C (row-major; beta 0 does not read C), single-threaded.
DNNC_NOCLONE static void dnnc_own_sgemm(bool ta, bool tb, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda,
                           const float* b, i64 ldb, float beta, float* c, i64 ldc) {
  const i64 kblocks = (k + dnnc_kc - 1) / dnnc_kc, kc_max = (k + kblocks - 1) / kblocks;
  const i64 nc_max = n < dnnc_nc ? (n + dnnc_nr - 1) / dnnc_nr * dnnc_nr : dnnc_nc;
  const i64 mc_max = m < dnnc_mc ? (m + dnnc_mr - 1) / dnnc_mr * dnnc_mr : dnnc_mc;
  char* raw = (char*)__builtin_malloc(sizeof(float) * kc_max * (nc_max + mc_max) + 64);
  float* bp = (float*)(((__UINTPTR_TYPE__)raw + 63) & ~(__UINTPTR_TYPE__)63);
  float* ap = bp + kc_max * nc_max;
  for (i64 j0 = 0; j0 < n; j0 += dnnc_nc) {
    const i64 nc = n - j0 < dnnc_nc ? n - j0 : dnnc_nc;
    for (i64 p0 = 0; p0 < k; p0 += kc_max) {
      const i64 kc = k - p0 < kc_max ? k - p0 : kc_max;
      const float be = p0 == 0 ? beta : 1.0f;
      dnnc_pack_b(tb, b, ldb, p0, kc, j0, nc, bp);
      for (i64 i0 = 0; i0 < m; i0 += dnnc_mc) {
        const i64 mc = m - i0 < dnnc_mc ? m - i0 : dnnc_mc;
        dnnc_pack_a(ta, a, lda, i0, mc, p0, kc, ap);
        for (i64 jr = 0; jr < nc; jr += dnnc_nr) {
          const int cols = nc - jr < dnnc_nr ? (int)(nc - jr) : dnnc_nr;
          for (i64 ir = 0; ir < mc; ir += dnnc_mr) {
            const int rows = mc - ir < dnnc_mr ? (int)(mc - ir) : dnnc_mr;
            float* ct = c + (i0 + ir) * ldc + j0 + jr;
            const float *at = ap + ir * kc, *bt = bp + jr * kc;
            if (cols > 2 * dnnc_vl) dnnc_tile<dnnc_nr / dnnc_vl>(kc, at, bt, ct, ldc, rows, cols, alpha, be);
            else if (cols > dnnc_vl) dnnc_tile<2>(kc, at, bt, ct, ldc, rows, cols, alpha, be);
            else dnnc_tile<1>(kc, at, bt, ct, ldc, rows, cols, alpha, be);
          }
        }
      }
    }
  }
  __builtin_free(raw);
}

typedef float dnnc_v8 __attribute__((vector_size(32)));
typedef float dnnc_v4 __attribute__((vector_size(16)));
typedef int dnnc_ivec __attribute__((vector_size(dnnc_vl * 4)));
#if DNNC_OWN_GEMM == 512
static const dnnc_ivec dnnc_lanes = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
enum { dnnc_dot_r = 4, dnnc_dot_cn = 6 };  // 24 of the 32 zmm registers accumulate
static inline dnnc_v8 dnnc_halves(dnnc_vec v) {
  return __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) + __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
}
#else
static const dnnc_ivec dnnc_lanes = {0, 1, 2, 3, 4, 5, 6, 7};
enum { dnnc_dot_r = 2, dnnc_dot_cn = 6 };  // 12 of the 16 ymm registers accumulate
static inline dnnc_v8 dnnc_halves(dnnc_vec v) { return v; }
#endif
static inline float dnnc_hsum(dnnc_vec v) {
  const dnnc_v8 a = dnnc_halves(v);
  dnnc_v4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
  dnnc_v4 c = b + __builtin_shufflevector(b, b, 2, 3, 0, 1);
  c += __builtin_shufflevector(c, c, 1, 0, 3, 2);
  return c[0];
}
// The R x CN dot products of rows ar[i] and br[j] over [0, k), k >= dnnc_vl; the last k % dnnc_vl
// as the dnnc_vl elements ending at k with the lanes already summed masked off.
template <int R, int CN>
static inline void dnnc_dot_tile(i64 k, const float* const* ar, const float* const* br, float* out) {
  dnnc_vec acc[R][CN];
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 6
    for (int j = 0; j < CN; ++j) acc[i][j] = (dnnc_vec){};
  i64 p = 0;
  for (; p + dnnc_vl <= k; p += dnnc_vl) {
    dnnc_vec av[R];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) av[i] = *(const dnnc_vecu*)(ar[i] + p);
#pragma GCC unroll 6
    for (int j = 0; j < CN; ++j) {
      const dnnc_vec bv = *(const dnnc_vecu*)(br[j] + p);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) acc[i][j] += av[i] * bv;
    }
  }
  if (p < k) {  // the last k % dnnc_vl: the dnnc_vl elements ending at k, those before p masked off
    const int skip = (int)(dnnc_vl - (k - p));
    const dnnc_ivec keep = dnnc_lanes >= skip;
    const i64 q = k - dnnc_vl;
    dnnc_vec av[R];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) av[i] = keep ? *(const dnnc_vecu*)(ar[i] + q) : (dnnc_vec){};
#pragma GCC unroll 6
    for (int j = 0; j < CN; ++j) {
      const dnnc_vec bv = *(const dnnc_vecu*)(br[j] + q);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) acc[i][j] += av[i] * bv;
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 6
    for (int j = 0; j < CN; ++j) out[i * CN + j] = dnnc_hsum(acc[i][j]);
}

// C[m,n] = alpha A·Bᵀ + beta C for A m x k and B n x k row-major (k >= dnnc_vl), without packing:
// dot products along k in dnnc_vl lanes, a dnnc_dot_r x dnnc_dot_cn tile of them at a time, k in
// blocks of at most 1024 (the tile's rows of B stay in L1). For the weight gradients of
// convolutions and linears (small C, long k), where packing op(B)ᵀ costs more than the product.
DNNC_NOCLONE static void dnnc_sgemm_dot(i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda, const float* b, i64 ldb,
                           float beta, float* c, i64 ldc) {
  enum { R = dnnc_dot_r, CN = dnnc_dot_cn, KB = 1024 };
  const i64 kblocks = (k + KB - 1) / KB, kb_max = (k + kblocks - 1) / kblocks;
  for (i64 p0 = 0; p0 < k; p0 += kb_max) {
    const i64 kb = k - p0 < kb_max ? k - p0 : kb_max;
    const float be = p0 == 0 ? beta : 1.0f;
    for (i64 j0 = 0; j0 < n; j0 += CN) {
      const float* br[CN];
      for (int j = 0; j < CN; ++j) br[j] = b + (j0 + j < n ? j0 + j : n - 1) * ldb + p0;
      for (i64 i0 = 0; i0 < m; i0 += R) {
        const float* ar[R];
        for (int i = 0; i < R; ++i) ar[i] = a + (i0 + i < m ? i0 + i : m - 1) * lda + p0;
        float t[R * CN];
        dnnc_dot_tile<R, CN>(kb, ar, br, t);
        for (int i = 0; i < R && i0 + i < m; ++i)
          for (int j = 0; j < CN && j0 + j < n; ++j) {
            float* cp = c + (i0 + i) * ldc + j0 + j;
            *cp = be == 0.0f ? alpha * t[i * CN + j] : alpha * t[i * CN + j] + be * *cp;
          }
      }
    }
  }
}
#endif

// C[m,n] = alpha op(A) op(B) + beta C (row-major); rows or columns of one go to sgemv. With
// AVX2 only, op(A) = Aᵀ with a short k (8..64) and a large C (the column GEMMs of a
// convolution's input gradient, Wᵀ·dy) goes to dnnc_own_sgemm, which runs them 1.1-1.45x
// faster than OpenBLAS's Zen kernels in a one-thread microbenchmark (288x1024x32 47 -> 54-68
// GFLOP/s, 144x784x16 36-40 -> 45-55, 288x196x32 47-49 -> 69-70, 576x256x64 72 -> 78-82);
// OpenBLAS stays faster on the others (16x784x144, 32x288x196, 1000x64x64). A·Bᵀ with a long
// k and at most 32 columns (the first convolution's weight gradient) goes to dnnc_sgemm_dot
// (6x25x784 14-20 -> 35-45 GFLOP/s, 16x9x784 18-25 -> 38-43, 32x27x1024 29-35 -> 40). With AVX-512,
// A·Bᵀ with a long k and a small C goes to dnnc_sgemm_dot (measured on Zen 5:
// 6x25x784 29 -> 96 GFLOP/s, 16x144x784 92 -> 111, 32x288x1024 99 -> 112; 128x256x512 and
// 32x288x196 stay packed), all but tiny other products to dnnc_own_sgemm.
DNNC_NOCLONE static void dnnc_sgemm(bool ta, bool tb, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda, const float* b,
                       i64 ldb, float beta, float* c, i64 ldc) {
  const int row_major = 101, no_trans = 111, trans = 112;
  if (m <= 0 || n <= 0) return;
#if DNNC_OWN_GEMM == 512
  if (!ta && tb && k >= 128 && (m <= 16 || (k >= 512 && m * n <= 16384))) {
    dnnc_sgemm_dot(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (m >= 4 && n >= 16 && k >= 8 && m * n * k >= 32768) {
    dnnc_own_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#elif DNNC_OWN_GEMM == 256
  if (!ta && tb && k >= 256 && n <= 32 && m <= 64) {
    dnnc_sgemm_dot(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (ta && !tb && k >= 8 && k <= 64 && m >= 96 && n >= 192) {
    dnnc_own_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#endif
  if (m == 1) {  // c = op(B)ᵀ · (row 0 of op(A))
    if (tb) cblas_sgemv(row_major, no_trans, n, k, alpha, b, ldb, a, ta ? lda : 1, beta, c, 1);
    else cblas_sgemv(row_major, trans, k, n, alpha, b, ldb, a, ta ? lda : 1, beta, c, 1);
    return;
  }
  if (n == 1) {  // c = op(A) · (column 0 of op(B))
    if (ta) cblas_sgemv(row_major, trans, k, m, alpha, a, lda, b, tb ? 1 : ldb, beta, c, ldc);
    else cblas_sgemv(row_major, no_trans, m, k, alpha, a, lda, b, tb ? 1 : ldb, beta, c, ldc);
    return;
  }
  cblas_sgemm(row_major, ta ? trans : no_trans, tb ? trans : no_trans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// The same GEMM with its rows (or columns, if there are more) split over the threads.
DNNC_NOCLONE static void dnnc_sgemm_split(bool ta, bool tb, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda,
                             const float* b, i64 ldb, float beta, float* c, i64 ldc) {
  const int t = dnnc_threads;
  if (t <= 1) {
    dnnc_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const bool by_rows = m >= n;
#pragma omp parallel for num_threads(t) schedule(static)
  for (int i = 0; i < t; ++i) {
    if (by_rows) {
      i64 r0 = m * i / t, r1 = m * (i + 1) / t;
      dnnc_sgemm(ta, tb, r1 - r0, n, k, alpha, ta ? a + r0 : a + r0 * lda, lda, b, ldb, beta, c + r0 * ldc, ldc);
    } else {
      i64 c0 = n * i / t, c1 = n * (i + 1) / t;
      dnnc_sgemm(ta, tb, m, c1 - c0, k, alpha, a, lda, tb ? b + c0 * ldb : b + c0, ldb, beta, c + c0, ldc);
    }
  }
}

// Co-scheduled GEMMs (g*_group): the first row of a GEMM whose rows each weigh `w` (of the
// group's work) at work offset `x` into it; 0 before it, `m` past it.
static inline i64 dnnc_row_at(i64 x, i64 w, i64 m) {
  if (x <= 0) return 0;
  const i64 r = (x + w - 1) / w;
  return r < m ? r : m;
}

// C = alpha op(A) op(B) (beta = 0) with K split over the threads: for a small C and a long K
// (weight gradients summed over a batch). Thread 0 writes C, the others partial sums added after.
DNNC_NOCLONE static void dnnc_sgemm_split_k(bool ta, bool tb, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda,
                               const float* b, i64 ldb, float* c, i64 ldc) {
  const int t = dnnc_threads;
  if (t <= 1 || k < 64 * t) {
    dnnc_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc);
    return;
  }
  float* part = (float*)__builtin_malloc(sizeof(float) * (t - 1) * m * n);
#pragma omp parallel for num_threads(t) schedule(static)
  for (int i = 0; i < t; ++i) {
    i64 k0 = k * i / t, k1 = k * (i + 1) / t;
    float* out = i == 0 ? c : part + (i - 1) * m * n;
    dnnc_sgemm(ta, tb, m, n, k1 - k0, alpha, ta ? a + k0 * lda : a + k0, lda, tb ? b + k0 : b + k0 * ldb, ldb, 0.0f, out,
               i == 0 ? ldc : n);
  }
  for (int i = 1; i < t; ++i)
    for (i64 r = 0; r < m; ++r)
      for (i64 j = 0; j < n; ++j) c[r * ldc + j] += part[((i - 1) * m + r) * n + j];
  __builtin_free(part);
}
)";
}

void print_cpp_comment(std::string& out, const std::vector<std::string>& lines) {
  for (const auto& l : lines) out += "// " + l + "\n";
}

namespace {

// The offset of problem `bi` of a batched GEMM's operand: " + bi * stride", or nothing.
std::string batch_offset(int64_t stride) { return stride == 0 ? std::string() : fmt::format(" + bi * {}", stride); }

// What an epilogue GEMM computes, for its comment.
std::string epilogue_gemm_product(const GemmCall& g) {
  const char* ta = g.trans_a ? "ᵀ" : "";
  const char* tb = g.trans_b ? "ᵀ" : "";
  if (g.first_step >= 0)
    return fmt::format("C[{},{}] = α A{} · B{} + β C (α, β = {}, {} on the first step, else {}, {})", g.m, g.n, ta, tb,
                       g.alpha_first, g.beta_first, g.alpha, g.beta);
  return fmt::format("C[{},{}] = A{} · B{}{}", g.m, g.n, ta, tb,
                     g.bias_kind == GemmCall::Bias::per_col   ? " + bias per column"
                     : g.bias_kind == GemmCall::Bias::per_row ? " + bias per row"
                                                              : "");
}

// The parameters (C type, name) of an epilogue GEMM's function, in the order dnnc_run passes
// them: a, b, [bias], c, the epilogue's buffers other than c, [step], [col_sums]. `call_args`
// receives the epilogue kernel's arguments (c where the kernel takes C).
std::vector<std::pair<std::string, std::string>> epilogue_gemm_params(const Program& p, const Step& s,
                                                                      std::vector<std::string>& call_args) {
  const GemmCall& g = s.gemm;
  const Kernel& k = p.kernels.at(static_cast<size_t>(g.epilogue));
  std::vector<std::pair<std::string, std::string>> params{{"const float*", "a"}, {"const float*", "b"}};
  if (g.bias_kind != GemmCall::Bias::none) params.emplace_back("const float*", "bias");
  params.emplace_back("float*", "c");
  for (size_t e = 0; e < s.args.size(); ++e) {
    if (root_buffer(p, s.args[e]) == root_buffer(p, g.c)) {
      call_args.push_back("c");
      continue;
    }
    const KernelParam& kp = k.params.at(e);
    params.emplace_back(fmt::format("{}{}*", kp.written ? "" : "const ", c_type_name(kp.type)), fmt::format("e{}", e));
    call_args.push_back(params.back().second);
  }
  if (g.first_step >= 0) params.emplace_back("const float*", "step");
  if (g.col_sums >= 0) params.emplace_back("float*", "col_sums");
  return params;
}

std::string param_list(const std::vector<std::pair<std::string, std::string>>& params, const std::string& suffix) {
  std::string out;
  for (const auto& [type, name] : params)
    out += fmt::format("{}{} __restrict__ {}{}", out.empty() ? "" : ", ", type, name, suffix);
  return out;
}

// The α and β of an epilogue GEMM's product: constants, or (step-dependent scaling) the locals
// the lines appended to `out` define.
std::pair<std::string, std::string> epilogue_gemm_scaling(const GemmCall& g, std::string& out) {
  bool bias = g.bias_kind != GemmCall::Bias::none;
  if (g.first_step < 0) return {cpp_float_literal(g.alpha), cpp_float_literal(bias ? 1.0f : g.beta)};
  out += "  const bool first = step[0] == 0x1p+0f;\n";
  out +=
      fmt::format("  const float alpha = first ? {} : {}, beta = first ? {} : {};\n", cpp_float_literal(g.alpha_first),
                  cpp_float_literal(g.alpha), cpp_float_literal(g.beta_first), cpp_float_literal(g.beta));
  return {"alpha", "beta"};
}

// Rows [r0, r1) of an epilogue GEMM: bias, product, epilogue; each line indented by `pad`.
std::string epilogue_gemm_rows(const GemmCall& g, const Kernel& k, const std::vector<std::string>& call_args,
                               const std::pair<std::string, std::string>& scaling, const std::string& pad) {
  std::string out;
  if (g.bias_kind != GemmCall::Bias::none)
    out += fmt::format("{1}for (i64 r = r0; r < r1; ++r)\n{1}  for (i64 j = 0; j < {0}; ++j) c[r * {0} + j] = bias[{2}];\n",
                       g.n, pad, g.bias_kind == GemmCall::Bias::per_row ? "r" : "j");
  out += fmt::format("{}dnnc_sgemm({}, {}, r1 - r0, {}, {}, {}, a + {}, {}, b, {}, {}, c + r0 * {}, {});\n", pad,
                     g.trans_a ? "true" : "false", g.trans_b ? "true" : "false", g.n, g.k, scaling.first,
                     g.trans_a ? "r0" : fmt::format("r0 * {}", g.lda), g.lda, g.ldb, scaling.second, g.ldc, g.ldc);
  out += fmt::format("{}{}(r0 * {}, r1 * {}, {});\n", pad, k.name, g.n, g.n, fmt::join(call_args, ", "));
  return out;
}

// A GEMM with an epilogue: each thread computes a block of rows of C (bias first), then runs the
// epilogue kernel on those rows while they are in its cache. The function takes the epilogue's
// buffers after c (c itself once), then the step buffer of a step-dependent alpha/beta, then the
// column-sum buffer (each thread sums the columns of its rows into its own partial sums).
// A batch of GEMMs with an epilogue (a convolution's images, each with the chain after it):
// each problem's bias, product and epilogue on one thread, problems over the threads
// (over_batch) or in turn. C is dense: problem bi's elements are [bi·m·n, (bi+1)·m·n).
std::string gemm_batched_epilogue_function(const Program& p, const Step& s, const std::string& name) {
  const GemmCall& g = s.gemm;
  DNNC_CHECK(g.ldc == g.n && g.stride_c == g.m * g.n && !g.accumulate_batches && g.first_step < 0 && g.col_sums < 0 &&
                 g.bias_kind != GemmCall::Bias::per_col &&
                 (g.threads == GemmCall::Threads::over_batch || g.threads == GemmCall::Threads::single),
             "batched epilogue GEMMs are dense, one thread per problem, without step-dependent scaling or column sums");
  const Kernel& k = p.kernels.at(static_cast<size_t>(g.epilogue));
  std::string out = print_kernel_cpp(k, {fmt::format("epilogue of {}: elements [begin, end) of C", name)});
  print_cpp_comment(out, s.comment);
  out += fmt::format("// {}, {} problems, then {} on each problem's C\n", epilogue_gemm_product(g), g.batch, k.name);
  std::vector<std::string> call_args;
  out += fmt::format("DNNC_STEP void {}({}) {{\n", name, param_list(epilogue_gemm_params(p, s, call_args), ""));
  const bool bias = g.bias_kind != GemmCall::Bias::none;
  if (g.threads == GemmCall::Threads::over_batch)
    out += "#pragma omp parallel for num_threads(dnnc_threads) schedule(static)\n";
  out += fmt::format("  for (i64 bi = 0; bi < {}; ++bi) {{\n", g.batch);
  out += fmt::format("    float* cb = c + bi * {};\n", g.stride_c);
  if (bias)
    out += fmt::format("    for (i64 r = 0; r < {0}; ++r)\n      for (i64 j = 0; j < {1}; ++j) cb[r * {1} + j] = bias[r];\n",
                       g.m, g.n);
  out += fmt::format("    dnnc_sgemm({}, {}, {}, {}, {}, {}, a{}, {}, b{}, {}, {}, cb, {});\n", g.trans_a ? "true" : "false",
                     g.trans_b ? "true" : "false", g.m, g.n, g.k, cpp_float_literal(g.alpha), batch_offset(g.stride_a),
                     g.lda, batch_offset(g.stride_b), g.ldb, cpp_float_literal(bias ? 1.0f : g.beta), g.ldc);
  out += fmt::format("    {}(bi * {}, (bi + 1) * {}, {});\n", k.name, g.stride_c, g.stride_c, fmt::join(call_args, ", "));
  out += "  }\n}\n";
  return out;
}

std::string gemm_epilogue_function(const Program& p, const Step& s, const std::string& name) {
  const GemmCall& g = s.gemm;
  if (g.batch > 1) return gemm_batched_epilogue_function(p, s, name);
  DNNC_CHECK(g.batch == 1 && g.ldc == g.n, "epilogue GEMMs are single, dense");
  const Kernel& k = p.kernels.at(static_cast<size_t>(g.epilogue));
  std::string out = print_kernel_cpp(k, {fmt::format("epilogue of {}: elements [begin, end) of C", name)});
  print_cpp_comment(out, s.comment);
  bool sums = g.col_sums >= 0;
  out += fmt::format("// {}, then {} on each thread's rows{}\n", epilogue_gemm_product(g), k.name,
                     sums ? ", then the column sums of C" : "");
  std::vector<std::string> call_args;
  out += fmt::format("DNNC_STEP void {}({}) {{\n", name, param_list(epilogue_gemm_params(p, s, call_args), ""));
  auto scaling = epilogue_gemm_scaling(g, out);
  bool split = g.threads == GemmCall::Threads::split;
  out += fmt::format("  const int t = {};\n", split ? "dnnc_threads" : "1");
  // Column sums (a bias gradient over the batch rows) in double per thread, added in thread
  // order and rounded once: exact to fp32 at any batch size (docs/ops.md, "Accuracy of sums").
  if (sums) out += fmt::format("  double* part = (double*)__builtin_malloc(sizeof(double) * t * {});\n", g.n);
  if (split) out += "#pragma omp parallel for num_threads(t) schedule(static)\n";
  out += "  for (int i = 0; i < t; ++i) {\n";
  out += fmt::format("    const i64 r0 = {} * i / t, r1 = {} * (i + 1) / t;\n", g.m, g.m);
  out += epilogue_gemm_rows(g, k, call_args, scaling, "    ");
  if (sums) {
    out += fmt::format("    double* sum = part + i * {};\n", g.n);
    out += fmt::format("    for (i64 j = 0; j < {}; ++j) sum[j] = 0.0;\n", g.n);
    out += fmt::format(
        "    for (i64 r = r0; r < r1; ++r)\n      for (i64 j = 0; j < {0}; ++j) sum[j] += (double)c[r * {0} + j];\n",
        g.n);
  }
  out += "  }\n";
  if (sums) {
    out += fmt::format(
        "  for (i64 j = 0; j < {0}; ++j) {{\n    double s = part[j];\n    for (int i = 1; i < t; ++i) s += part[i * {0} + j];\n"
        "    col_sums[j] = (float)s;\n  }}\n",
        g.n);
    out += "  __builtin_free(part);\n";
  }
  out += "}\n";
  return out;
}

// A co-scheduled GEMM's rows [r0, r1): bias, product and epilogue (no column sums).
std::string gemm_rows_function(const Program& p, const Step& s, const std::string& name) {
  const GemmCall& g = s.gemm;
  DNNC_CHECK(g.col_sums < 0 && g.batch == 1 && g.ldc == g.n && g.bias_kind != GemmCall::Bias::per_row,
             "a co-scheduled GEMM is single and dense, without column sums or a per-row bias");
  const Kernel& k = p.kernels.at(static_cast<size_t>(g.epilogue));
  std::string out = print_kernel_cpp(k, {fmt::format("epilogue of {}: elements [begin, end) of C", name)});
  print_cpp_comment(out, s.comment);
  out += fmt::format("// {}, then {}: rows [r0, r1) of C\n", epilogue_gemm_product(g), k.name);
  std::vector<std::string> call_args;
  out += fmt::format("static void {}(i64 r0, i64 r1, {}) {{\n", name,
                     param_list(epilogue_gemm_params(p, s, call_args), ""));
  auto scaling = epilogue_gemm_scaling(g, out);
  out += epilogue_gemm_rows(g, k, call_args, scaling, "  ") + "}\n";
  return out;
}

// Co-scheduled GEMM steps [first, last]: one parallel region; the rows of all of them, weighted
// by n·k each, are split evenly over the threads, so independent GEMMs run side by side.
std::string gemm_group_function(const Program& p, size_t first, size_t last, const std::string& name) {
  std::string out, params, body;
  int64_t total = 0;
  std::vector<std::string> names;
  for (size_t i = first; i <= last; ++i) {
    const GemmCall& g = p.steps[i].gemm;
    out += "\n" + gemm_rows_function(p, p.steps[i], fmt::format("g{}_rows", i));
    names.push_back(fmt::format("g{}", i));
    std::vector<std::string> unused, args;
    auto member = epilogue_gemm_params(p, p.steps[i], unused);
    params += (params.empty() ? "" : ", ") + param_list(member, fmt::format("_{}", i));
    for (const auto& pr : member) args.push_back(fmt::format("{}_{}", pr.second, i));
    int64_t w = g.n * g.k;
    body += fmt::format("    r0 = dnnc_row_at(lo - {0}, {1}, {2});\n    r1 = dnnc_row_at(hi - {0}, {1}, {2});\n", total,
                        w, g.m);
    body += fmt::format("    if (r0 < r1) g{}_rows(r0, r1, {});\n", i, fmt::join(args, ", "));
    total += g.m * w;
  }
  out += fmt::format("\n// {} at once: their rows, weighted by n·k, split evenly over the threads\n",
                     fmt::join(names, ", "));
  out += fmt::format("DNNC_STEP void {}({}) {{\n  const int t = dnnc_threads;\n", name, params);
  out += "#pragma omp parallel for num_threads(t) schedule(static)\n  for (int i = 0; i < t; ++i) {\n";
  out += fmt::format("    const i64 lo = {0} * i / t, hi = {0} * (i + 1) / t;\n    i64 r0, r1;\n", total);
  out += body + "  }\n}\n";
  return out;
}

std::string gemm_function(const Program& p, const Step& s, const std::string& name) {
  const GemmCall& g = s.gemm;
  if (g.epilogue >= 0) return gemm_epilogue_function(p, s, name);
  DNNC_CHECK(g.first_step < 0 && g.col_sums < 0, "step-dependent scaling and column sums need an epilogue");
  std::string out;
  print_cpp_comment(out, s.comment);
  std::string prod = fmt::format("C[{},{}] = A{} · B{}", g.m, g.n, g.trans_a ? "ᵀ" : "", g.trans_b ? "ᵀ" : "");
  if (g.batch > 1) prod += fmt::format(", {} problems{}", g.batch, g.accumulate_batches ? " summed" : "");
  if (g.bias_kind != GemmCall::Bias::none)
    prod += g.bias_kind == GemmCall::Bias::per_col ? " + bias per column" : " + bias per row";
  out += "// " + prod + "\n";
  bool bias = g.bias_kind != GemmCall::Bias::none;
  out += fmt::format(
      "DNNC_STEP void {}(const float* __restrict__ a, const float* __restrict__ b, {}float* __restrict__ c) {{\n", name,
      bias ? "const float* __restrict__ bias, " : "");
  float beta = g.beta;
  if (bias) {
    int64_t rows = g.accumulate_batches ? g.m : g.batch * g.m;
    bool par = rows > 1 && rows * g.n >= (int64_t{1} << 15);
    if (par) out += "#pragma omp parallel for num_threads(dnnc_threads) schedule(static)\n";
    out += fmt::format("  for (i64 r = 0; r < {}; ++r) {{\n", rows);
    out += fmt::format("    float* row = c + r / {} * {} + r % {} * {};\n", g.m, g.accumulate_batches ? 0 : g.stride_c,
                       g.m, g.ldc);
    out += fmt::format("    for (i64 j = 0; j < {}; ++j) row[j] = bias[{}];\n", g.n,
                       g.bias_kind == GemmCall::Bias::per_col ? "j" : fmt::format("r % {}", g.m));
    out += "  }\n";
    beta = 1.0f;
  }
  if (g.threads == GemmCall::Threads::split_k) {
    DNNC_CHECK(g.batch == 1 && !bias && g.beta == 0.0f, "split_k takes one problem, no bias, beta 0");
    out += fmt::format("  dnnc_sgemm_split_k({}, {}, {}, {}, {}, {}, a, {}, b, {}, c, {});\n}}\n",
                       g.trans_a ? "true" : "false", g.trans_b ? "true" : "false", g.m, g.n, g.k,
                       cpp_float_literal(g.alpha), g.lda, g.ldb, g.ldc);
    return out;
  }
  bool split = g.threads == GemmCall::Threads::split;
  const char* fn = split ? "dnnc_sgemm_split" : "dnnc_sgemm";
  auto call = [&](const std::string& ia, const std::string& ib, const std::string& ic, const std::string& beta_s) {
    return fmt::format("{}({}, {}, {}, {}, {}, {}, a{}, {}, b{}, {}, {}, c{}, {});", fn, g.trans_a ? "true" : "false",
                       g.trans_b ? "true" : "false", g.m, g.n, g.k, cpp_float_literal(g.alpha), ia, g.lda, ib, g.ldb,
                       beta_s, ic, g.ldc);
  };
  if (g.batch == 1) {
    out += "  " + call("", "", "", cpp_float_literal(beta)) + "\n";
  } else {
    if (g.threads == GemmCall::Threads::over_batch) {
      fn = "dnnc_sgemm";
      out += "#pragma omp parallel for num_threads(dnnc_threads) schedule(static)\n";
    }
    out += fmt::format("  for (i64 bi = 0; bi < {}; ++bi) {{\n", g.batch);
    std::string beta_s = g.accumulate_batches && !bias
                             ? fmt::format("bi == 0 ? {} : {}", cpp_float_literal(beta), cpp_float_literal(1.0f))
                             : cpp_float_literal(g.accumulate_batches ? 1.0f : beta);
    out += "    " + call(batch_offset(g.stride_a), batch_offset(g.stride_b), batch_offset(g.stride_c), beta_s) + "\n";
    out += "  }\n";
  }
  out += "}\n";
  (void)p;
  return out;
}

}  // namespace

std::string cpp_gemm_function(const Program& p, const Step& s, const std::string& name) {
  return gemm_function(p, s, name);
}

std::string cpp_gemm_group_function(const Program& p, size_t first, size_t last, const std::string& name) {
  return gemm_group_function(p, first, last, name);
}

std::string cpp_gemm_call_args(const Program& p, const Step& s) {
  const GemmCall& g = s.gemm;
  std::string args =
      p.buffers.at(static_cast<size_t>(g.a)).name + ", " + p.buffers.at(static_cast<size_t>(g.b)).name + ", ";
  if (g.bias_kind != GemmCall::Bias::none) args += p.buffers.at(static_cast<size_t>(g.bias)).name + ", ";
  args += p.buffers.at(static_cast<size_t>(g.c)).name;
  if (g.epilogue >= 0)
    for (int b : s.args)
      if (root_buffer(p, b) != root_buffer(p, g.c)) args += ", " + p.buffers.at(static_cast<size_t>(b)).name;
  if (g.first_step >= 0) args += ", " + p.buffers.at(static_cast<size_t>(g.first_step)).name;
  if (g.col_sums >= 0) args += ", " + p.buffers.at(static_cast<size_t>(g.col_sums)).name;
  return args;
}

}  // namespace dnnc::codegen
