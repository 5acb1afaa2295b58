// Every GEMM of every model as cuBLASLt sees it (codegen/cuda/cuda_gemm.h), run through a
// column-major matmul written from cuBLASLt's documented semantics, equals the row-major GEMM
// its GemmCall describes (codegen/kir/program.h), on the Program's own buffers. Transposes, leading
// dimensions, batch strides, the operand swap and summed batches are checked without a GPU.
#include "codegen/cuda/cuda_gemm.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <stdexcept>

#include "codegen/cuda/cuda_printer.h"
#include "codegen/lower/lower.h"
#include "tests/support/files.h"
#include "tests/support/models.h"

using namespace dnnc;
using namespace dnnc::codegen;

namespace {

struct Span {
  float* data;
  int64_t size;
  float& at(int64_t i) const {  // the layout must stay inside the buffer
    if (i < 0 || i >= size) throw std::out_of_range(fmt::format("element {} of a buffer of {}", i, size));
    return data[i];
  }
};

// cuBLASLt: D = alpha·op(A)·op(B) + beta·C, column-major, C = D, for each of the layouts'
// batch, matrices `stride` elements apart.
void lt_matmul(const LtProblem& p, Span A, Span B, Span C, int64_t a_off, int64_t b_off, float beta) {
  const int64_t m = p.c.rows, n = p.c.cols;
  const int64_t k = p.trans_a ? p.a.rows : p.a.cols;
  REQUIRE((p.trans_a ? p.a.cols : p.a.rows) == m);
  REQUIRE((p.trans_b ? p.b.cols : p.b.rows) == k);
  REQUIRE((p.trans_b ? p.b.rows : p.b.cols) == n);
  for (const LtMatrix* l : {&p.a, &p.b, &p.c}) {
    REQUIRE(l->ld >= l->rows);  // cuBLASLt rejects a leading dimension below the row count
    REQUIRE(l->batch == p.c.batch);
  }
  for (int64_t bt = 0; bt < p.c.batch; ++bt) {
    int64_t ao = a_off + bt * p.a.stride, bo = b_off + bt * p.b.stride, co = bt * p.c.stride;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) {
          double av = p.trans_a ? A.at(ao + q + i * p.a.ld) : A.at(ao + i + q * p.a.ld);
          double bv = p.trans_b ? B.at(bo + j + q * p.b.ld) : B.at(bo + q + j * p.b.ld);
          s += av * bv;
        }
        float& d = C.at(co + i + j * p.c.ld);
        d = static_cast<float>(p.alpha * s + beta * d);
      }
  }
}

// program.h: C[M,N] = alpha·op(A)·op(B) + beta·C row-major, `batch` problems `stride_*` apart;
// with accumulate_batches their products are summed into one C.
void row_major_gemm(const GemmCall& g, Span A, Span B, Span C, float beta) {
  std::vector<double> sum(static_cast<size_t>(g.m * g.n), 0.0);
  for (int64_t bt = 0; bt < g.batch; ++bt) {
    int64_t ao = bt * g.stride_a, bo = bt * g.stride_b, co = g.accumulate_batches ? 0 : bt * g.stride_c;
    if (!g.accumulate_batches) std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < g.k; ++q) {
          double av = g.trans_a ? A.at(ao + q * g.lda + i) : A.at(ao + i * g.lda + q);
          double bv = g.trans_b ? B.at(bo + j * g.ldb + q) : B.at(bo + q * g.ldb + j);
          s += av * bv;
        }
        sum[static_cast<size_t>(i * g.n + j)] += s;
      }
    if (g.accumulate_batches && bt + 1 < g.batch) continue;
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        float& c = C.at(co + i * g.ldc + j);
        c = static_cast<float>(g.alpha * sum[static_cast<size_t>(i * g.n + j)] + beta * c);
      }
  }
}

int64_t numel(const Program& p, int b) {
  const Buffer& buf = p.buffers.at(static_cast<size_t>(b));
  return p.buffers.at(static_cast<size_t>(buf.kind == BufferKind::alias ? buf.alias_of : b)).numel();
}

void check_program(const Program& p, const std::string& label) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  int gemms = 0;
  for (size_t s = 0; s < p.steps.size(); ++s) {
    if (p.steps[s].kind != Step::Kind::gemm) continue;
    const GemmCall& g = p.steps[s].gemm;
    INFO(label << " step " << s << ": m=" << g.m << " n=" << g.n << " k=" << g.k << " batch=" << g.batch
               << (g.accumulate_batches ? " summed" : "") << " ta=" << g.trans_a << " tb=" << g.trans_b);
    ++gemms;
    std::vector<float> a(static_cast<size_t>(numel(p, g.a))), b(static_cast<size_t>(numel(p, g.b)));
    std::vector<float> c0(static_cast<size_t>(numel(p, g.c)));
    for (auto* v : {&a, &b, &c0})
      for (float& x : *v) x = d(rng);
    LtProblem lt = lt_problem(g);
    // Both from the same C (a bias fill or the old value under beta).
    std::vector<float> want = c0, got = c0;
    float beta = lt.beta_first;
    row_major_gemm(g, {a.data(), static_cast<int64_t>(a.size())}, {b.data(), static_cast<int64_t>(b.size())},
                   {want.data(), static_cast<int64_t>(want.size())}, beta);
    for (int64_t i = 0; i < lt.matmuls; ++i)  // cuBLASLt's A is our B, its B our A
      lt_matmul(lt, {b.data(), static_cast<int64_t>(b.size())}, {a.data(), static_cast<int64_t>(a.size())},
                {got.data(), static_cast<int64_t>(got.size())}, i * lt.a_step, i * lt.b_step,
                i == 0 ? lt.beta_first : 1.0f);
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      num += (got[i] - want[i]) * static_cast<double>(got[i] - want[i]);
      den += want[i] * static_cast<double>(want[i]);
    }
    REQUIRE(den > 0);
    CHECK(std::sqrt(num / den) <= 1e-6);
  }
  CHECK(gemms > 0);
}

}  // namespace

TEST_CASE("cuBLASLt's column-major view of every model's GEMMs computes the row-major GEMM", "[codegen][cuda]") {
  for (const char* path :
       {"models/mnist_mlp.dnn", "models/mnist_mlp_adam.dnn", "models/lenet5.dnn", "models/cifar_cnn.dnn",
        "models/cifar_strided.dnn", "tests/cpu/models/mlp_acts.dnn", "tests/cpu/models/conv_pool_shapes.dnn"}) {
    ir::Module m = test::compiled_model(path);
    for (const char* graph : {"train_step", "infer"})
      for (int64_t batch : {1, 3}) {
        // Direct convs off: every conv becomes im2col + batched or summed GEMMs.
        LowerOptions o = cuda_lower_options();
        o.direct_conv_max_k = 0;
        check_program(lower_graph(m, *m.graph(graph), batch, o), fmt::format("{}.{} b{}", m.name, graph, batch));
      }
  }
}

TEST_CASE("a transposed, batched and a summed GEMM map to the cuBLASLt layouts by hand", "[codegen][cuda]") {
  // y = x·Wᵀ (linear), x[4,6], W[5,6]: cuBLASLt D[5,4] = op(A)·B with A = W seen column-major
  // as 6×5 (transposed), B = x seen as 6×4.
  GemmCall g;
  g.m = 4, g.n = 5, g.k = 6, g.trans_b = true, g.lda = 6, g.ldb = 6, g.ldc = 5;
  LtProblem p = lt_problem(g);
  CHECK(p.trans_a);
  CHECK_FALSE(p.trans_b);
  CHECK((p.a.rows == 6 && p.a.cols == 5 && p.a.ld == 6));
  CHECK((p.b.rows == 6 && p.b.cols == 4 && p.b.ld == 6));
  CHECK((p.c.rows == 5 && p.c.cols == 4 && p.c.ld == 5));
  // Weight gradient summed over 3 images: one matmul each, A and B advancing by their strides.
  GemmCall w;
  w.m = 2, w.n = 7, w.k = 9, w.trans_b = true, w.lda = 9, w.ldb = 9, w.ldc = 7;
  w.batch = 3, w.stride_a = 18, w.stride_b = 63, w.accumulate_batches = true;
  LtProblem q = lt_problem(w);
  CHECK(q.matmuls == 3);
  CHECK(q.a_step == 63);  // cuBLASLt's A is our B
  CHECK(q.b_step == 18);
  CHECK(q.c.batch == 1);
  // 63 floats = 252 bytes apart: cuBLASLt may assume only 4-byte alignment of its A; 18 floats
  // = 72 bytes: 8 for its B; C is one matrix at a 256-byte aligned buffer.
  CHECK(q.a_align == 4);
  CHECK(q.b_align == 8);
  CHECK(q.c_align == 256);
  CHECK(p.a_align == 256);
  // A strided batch of 3 matrices 64 floats apart, sharing one B (stride 0).
  GemmCall b3;
  b3.m = 4, b3.n = 4, b3.k = 4, b3.lda = 4, b3.ldb = 4, b3.ldc = 4;
  b3.batch = 3, b3.stride_a = 64, b3.stride_b = 0, b3.stride_c = 16;
  LtProblem r = lt_problem(b3);
  CHECK(r.b_align == 256);  // our A: 256 bytes apart
  CHECK(r.a_align == 256);  // our B: the same matrix
  CHECK(r.c_align == 64);
}
