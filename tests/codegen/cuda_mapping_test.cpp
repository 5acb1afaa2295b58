// The thread mapping of CUDA kernels (codegen/cuda/cuda_mapping.h), tested on its own: which
// mapping each hand-built kernel gets and its launch, which loops a team spreads, splits as a
// reduction or runs sequentially, which stores are lane 0's, and where the barriers go. No
// CUDA source is looked at here; tests/cuda/printer_test.cpp checks that the printer renders it.
#include "codegen/cuda/cuda_mapping.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "codegen/lower/lower.h"
#include "tests/support/files.h"
#include "tests/support/models.h"

using namespace dnnc;
using namespace dnnc::codegen;

namespace {

// The loop of `k` whose variable is `var` (anywhere in the body).
const StmtNode* find_loop(const Block& b, const std::string& var) {
  for (const Stmt& s : b) {
    if (s->kind == StmtKind::loop && s->var == var) return s.get();
    if (const StmtNode* inner = find_loop(s->body, var)) return inner;
  }
  return nullptr;
}

// The role the plan gives loop `var` of `k`.
CudaLoopRole role(const CudaKernelPlan& plan, const Kernel& k, const std::string& var) {
  const StmtNode* l = find_loop(k.body, var);
  REQUIRE(l);
  return plan.at(*l).role;
}

// Every store statement of `b`, in order.
void stores_of(const Block& b, std::vector<const StmtNode*>& out) {
  for (const Stmt& s : b) {
    if (s->kind == StmtKind::store) out.push_back(s.get());
    stores_of(s->body, out);
  }
}

using Syncs = std::vector<CudaSync>;

}  // namespace

TEST_CASE("a flat map is a float4 grid-stride loop: loads and stores at the index", "[cuda][mapping]") {
  KernelBuilder kb("k0_scale");
  int x = kb.param("x", ScalarType::f32, false, 1030);
  int y = kb.param("y", ScalarType::f32, true, 1030);
  kb.loop("i", 1030, true, [&](Expr i) { kb.store(y, i, kb.load(x, i) * f32c(0.1)); });
  Kernel k = kb.finish();
  CudaKernelPlan plan = plan_cuda_kernel(k);
  CHECK(plan.mapping == CudaMapping::grid_vec4);
  CHECK(plan.grid_loop == k.body[0].get());
  CHECK(plan.launch.grid == 2);  // 258 threads of four elements
  CHECK(plan.launch.block == kCudaBlock);
  CHECK(plan.vec4_loads == std::set<int>{x});
  CHECK(plan.vec4_stores == std::set<int>{y});
  CHECK(plan.team.empty());
  CHECK(plan.min_bytes == 2 * 1030 * 4);
}

TEST_CASE("a row reduction inside a parallel loop: a warp per row, the reduction split over lanes", "[cuda][mapping]") {
  KernelBuilder kb("k0_rowmax");
  int x = kb.param("x", ScalarType::f32, false, 64 * 100);
  int y = kb.param("y", ScalarType::f32, true, 64);
  kb.loop("r", 64, true, [&](Expr r) {
    Expr mx = kb.let("mx", f32c(-INFINITY));
    kb.loop("c", 100, false, [&](Expr c) { kb.assign(mx, max(mx, kb.load(x, r * 100 + c))); });
    kb.store(y, r, mx);
  });
  Kernel k = kb.finish();
  CudaKernelPlan plan = plan_cuda_kernel(k);
  CHECK(plan.mapping == CudaMapping::grid_warp);
  // 64 warps: one per block, so that they spread over 64 multiprocessors, not 8.
  CHECK(plan.launch.block == 32);
  CHECK(plan.launch.grid == 64);
  CHECK(plan.launch.shared_bytes == 0);  // warp reductions shuffle
  const CudaTeamStmt& c = plan.at(*find_loop(k.body, "c"));
  CHECK(c.role == CudaLoopRole::reduction);
  REQUIRE(c.reduction);
  CHECK(c.reduction->var == "mx");
  CHECK(c.reduction->op == BinaryOp::max);
  std::vector<const StmtNode*> st;
  stores_of(k.body, st);
  REQUIRE(st.size() == 1);
  CHECK(plan.at(*st[0]).lane0);
  CHECK(plan.at(*st[0]).before.empty());
  CHECK(plan.at(*st[0]).after.empty());  // y is not read back
}

TEST_CASE("a kernel with phases runs as one block: spread phases, a block reduction, barriers", "[cuda][mapping]") {
  KernelBuilder kb("k0_total");
  int x = kb.param("x", ScalarType::f32, false, 1000);
  int y = kb.param("y", ScalarType::f32, true, 10);
  int s = kb.param("s", ScalarType::f32, true, 1);
  kb.loop("o", 10, false, [&](Expr o) { kb.store(y, o, f32c(0)); });
  kb.loop("r", 100, false,
          [&](Expr r) { kb.loop("k", 10, false, [&](Expr k) { kb.accumulate(y, k, kb.load(x, r * 10 + k)); }); });
  Expr total = kb.let("total", f32c(0));
  kb.loop("i", 1000, false, [&](Expr i) { kb.assign(total, total + kb.load(x, i)); });
  kb.store(s, i64c(0), total);
  Kernel k = kb.finish();
  CudaKernelPlan plan = plan_cuda_kernel(k);
  CHECK(plan.mapping == CudaMapping::block);
  CHECK(plan.grid_loop == nullptr);
  CHECK(plan.launch.grid == 1);
  CHECK(plan.launch.shared_bytes == kCudaReductionSmem);
  CHECK(role(plan, k, "o") == CudaLoopRole::spread);
  // y[k] += ... is spread over the block inside the sequential r loop; not the r loop itself
  // (every r adds into the same ten elements).
  CHECK(role(plan, k, "r") == CudaLoopRole::sequential);
  CHECK(role(plan, k, "k") == CudaLoopRole::spread);
  CHECK(role(plan, k, "i") == CudaLoopRole::reduction);
  CHECK(plan.at(*find_loop(k.body, "o")).after == Syncs{CudaSync::after});
  CHECK(plan.at(*find_loop(k.body, "k")).after == Syncs{CudaSync::after});
  CHECK(plan.at(*find_loop(k.body, "k")).before.empty());
  std::vector<const StmtNode*> st;
  stores_of(k.body, st);
  CHECK(plan.at(*st.back()).lane0);  // s[0] = total
  CHECK(plan.loaded == std::set<int>{x});
  CHECK(plan.written == std::set<int>{y, s});
}

TEST_CASE("a scatter whose index is not injective in the loop variable runs on every lane, stores on lane 0",
          "[cuda][mapping]") {
  KernelBuilder kb("k0_scatter");
  int x = kb.param("x", ScalarType::f32, false, 100);
  int y = kb.param("y", ScalarType::f32, true, 50);
  kb.loop("o", 50, false, [&](Expr o) { kb.store(y, o, f32c(0)); });
  kb.loop("i", 100, false, [&](Expr i) { kb.accumulate(y, i / 2, kb.load(x, i)); });
  Kernel k = kb.finish();
  CudaKernelPlan plan = plan_cuda_kernel(k);
  CHECK(plan.mapping == CudaMapping::block);
  CHECK(role(plan, k, "o") == CudaLoopRole::spread);
  CHECK(role(plan, k, "i") == CudaLoopRole::sequential);
  std::vector<const StmtNode*> st;
  stores_of(k.body, st);
  REQUIRE(st.size() == 2);
  CHECK(plan.at(*st[1]).lane0);
}

TEST_CASE("a kernel whose prefix checks its input and whose parallel loop is flat is a thread per iteration",
          "[cuda][mapping]") {
  KernelBuilder kb("k0_check");
  int l = kb.param("label", ScalarType::i64, false, 4);
  int y = kb.param("y", ScalarType::f32, true, 4);
  kb.loop("b", 4, false, [&](Expr b) { kb.fail(ge(kb.load(l, b), i64c(10)), "label out of range"); });
  kb.loop("i", 4, true, [&](Expr i) { kb.store(y, i, cast(ScalarType::f32, kb.load(l, i))); });
  Kernel k = kb.finish();
  CudaKernelPlan plan = plan_cuda_kernel(k);
  CHECK(plan.mapping == CudaMapping::grid_thread);  // i64 loads: no float4
  CHECK(plan.grid_loop == k.body[1].get());
  CHECK(plan.launch.grid == 1);
}

TEST_CASE("a strided loop around a unit-stride loop spreads the inner one (coalesced)", "[cuda][mapping]") {
  KernelBuilder kb("k0_rows");
  int x = kb.param("x", ScalarType::f32, false, 64 * 900);
  int y = kb.param("y", ScalarType::f32, true, 64 * 900);
  kb.loop("p", 64, true, [&](Expr p) {
    kb.loop("oh", 30, false, [&](Expr oh) {
      kb.loop("ow", 30, false, [&](Expr ow) {
        Expr i = p * 900 + oh * 30 + ow;
        kb.store(y, i, kb.load(x, i));
      });
    });
  });
  Kernel k = kb.finish();
  CudaKernelPlan plan = plan_cuda_kernel(k);
  CHECK(plan.mapping == CudaMapping::grid_warp);
  CHECK(role(plan, k, "oh") == CudaLoopRole::sequential);
  CHECK(role(plan, k, "ow") == CudaLoopRole::spread);
}

// col2im: y[b, ow + kj] += x[b, kj, ow]. For a fixed ow two values of kj store to different
// elements, but lane kj at ow = t and lane kj + 1 at ow = t - 1 add into the same one: kj must
// not be spread over the lanes (a lost update), the inner ow loop may.
TEST_CASE("a loop is not spread when an inner loop's variable lets two of its iterations meet", "[cuda][mapping]") {
  KernelBuilder kb("k0_col2im");
  int x = kb.param("x", ScalarType::f32, false, 4 * 5 * 10);
  int y = kb.param("y", ScalarType::f32, true, 4 * 14);
  kb.loop("b", 4, true, [&](Expr b) {
    kb.loop("kj", 5, false, [&](Expr kj) {
      kb.loop("ow", 10, false, [&](Expr ow) {
        Expr i = b * 14 + ow + kj;
        kb.store(y, i, kb.load(y, i) + kb.load(x, b * 50 + kj * 10 + ow));
      });
    });
  });
  Kernel k = kb.finish();
  CudaKernelPlan plan = plan_cuda_kernel(k);
  CHECK(plan.mapping == CudaMapping::grid_warp);
  CHECK(role(plan, k, "kj") == CudaLoopRole::sequential);
  CHECK(role(plan, k, "ow") == CudaLoopRole::spread);
  // y is read and written: the ow loop of the next kj must not run ahead of lanes still reading.
  CHECK(plan.at(*find_loop(k.body, "ow")).before == Syncs{CudaSync::before_overwrite});
}

TEST_CASE("a flat loop storing under a condition is not float4 (it would write unset lanes)", "[cuda][mapping]") {
  KernelBuilder kb("k0_cond");
  int x = kb.param("x", ScalarType::f32, false, 64);
  int y = kb.param("y", ScalarType::f32, true, 64);
  kb.loop("i", 64, true, [&](Expr i) {
    Expr v = kb.load(x, i);
    kb.if_(gt(v, f32c(0)), [&] { kb.store(y, i, v); });
  });
  CHECK(plan_cuda_kernel(kb.finish()).mapping == CudaMapping::grid_thread);
}

TEST_CASE("a loop storing one buffer at two indices is not spread (y[v + 1] of one iteration is y[v] of the next)",
          "[cuda][mapping]") {
  KernelBuilder kb("k0_two");
  int y = kb.param("y", ScalarType::f32, true, 65);
  kb.loop("v", 64, false, [&](Expr v) {
    Expr t = kb.let("t", kb.load(y, v));
    kb.store(y, v, t + f32c(1));
    kb.store(y, v + 1, t);
  });
  Kernel k = kb.finish();
  CudaKernelPlan plan = plan_cuda_kernel(k);
  CHECK(plan.mapping == CudaMapping::block);
  CHECK(role(plan, k, "v") == CudaLoopRole::sequential);
  // Both stores are lane 0's; y is read back, so each is fenced before and after.
  std::vector<const StmtNode*> st;
  stores_of(k.body, st);
  REQUIRE(st.size() == 2);
  CHECK(plan.at(*st[0]).before == Syncs{CudaSync::before_lane0});
  CHECK(plan.at(*st[0]).after == Syncs{CudaSync::after});
  CHECK(plan.at(*st[1]).before.empty());  // the barrier after the first store covers it
}

// The index analysis (IndexForm): y[2v] and y[2v + 1] never meet across iterations, y[v] and
// y[v + 1] do (above).
TEST_CASE("a loop storing one buffer at offsets that stay within its own stride is spread", "[cuda][mapping]") {
  KernelBuilder kb("k0_pairs");
  int x = kb.param("x", ScalarType::f32, false, 128);
  int y = kb.param("y", ScalarType::f32, true, 128);
  kb.loop("v", 64, false, [&](Expr v) {
    kb.store(y, v * 2, kb.load(x, v));
    kb.store(y, v * 2 + 1, kb.load(x, v + 64));
  });
  CHECK(plan_cuda_kernel(kb.finish()).mapping == CudaMapping::grid_thread);
}

// A row loop storing y[v*C + c] for an inner c in [0, C) owns its row, also through locals
// (base = v*C) and an inner loop whose bounds are min/max of locals.
TEST_CASE("rows through locals and bounded inner loops are spread; one element too many is not", "[cuda][mapping]") {
  for (int64_t width : {15, 16}) {
    // Row r stores y[r*30 + ow] for ow in [ow0, ow0 + width), ow0 = min(15, c*16), c in {0, 1}:
    // ow reaches 15 + width - 1, inside the row for width 15, into the next row for 16. (With
    // fewer than 16 iterations the inner loop is not preferred for coalescing.)
    KernelBuilder kb("k0_rows");
    int x = kb.param("x", ScalarType::f32, false, 64);
    int y = kb.param("y", ScalarType::f32, true, 30 * 32 + 64);
    int z = kb.param("z", ScalarType::f32, true, 64);
    kb.loop("q", 8, false, [&](Expr q) {  // y does not depend on q: the block mapping
      kb.store(z, q, f32c(0));
      kb.loop("r", 30, false, [&](Expr r) {
        Expr base = kb.let("base", r * i64c(30));
        kb.loop("c", 2, false, [&](Expr c) {
          Expr ow0 = kb.let("ow0", min(i64c(15), c * i64c(16)));
          kb.loop("ow", ow0, ow0 + i64c(width), false, [&](Expr ow) { kb.store(y, base + ow, kb.load(x, ow)); });
        });
      });
    });
    Kernel k = kb.finish();
    CudaKernelPlan plan = plan_cuda_kernel(k);
    INFO("width " << width);
    CHECK(plan.mapping == CudaMapping::block);
    CHECK(role(plan, k, "q") == CudaLoopRole::sequential);
    CHECK((role(plan, k, "r") == CudaLoopRole::spread) == (width == 15));
    // z[q] = 0 is lane 0's, not read back: the team syncs before its next spread loop.
    if (width == 15) CHECK(plan.at(*find_loop(k.body, "r")).before == Syncs{CudaSync::lane0_stores});
  }
}

// The fused conv's shape: each row r of the output is 30 wide, written in two overlapping
// chunks of 16 columns. Lanes on rows would each touch their own cache line per load; lanes on
// the columns of a chunk touch neighbouring elements, so the inner loop is spread.
TEST_CASE("an inner unit-stride loop of at least 16 iterations is spread instead of its strided outer loop",
          "[cuda][mapping]") {
  KernelBuilder kb("k0_conv_rows");
  int x = kb.param("x", ScalarType::f32, false, 32 * 32);
  int y = kb.param("y", ScalarType::f32, true, 30 * 30);
  int z = kb.param("z", ScalarType::f32, true, 8);
  kb.loop("q", 8, false, [&](Expr q) {  // y does not depend on q: the block mapping
    kb.store(z, q, f32c(0));
    kb.loop("r", 30, false, [&](Expr r) {
      Expr base = kb.let("base", r * i64c(30));
      kb.loop("c", 2, false, [&](Expr c) {
        Expr ow0 = kb.let("ow0", min(i64c(14), c * i64c(16)));
        kb.loop("ow", ow0, ow0 + i64c(16), false,
                [&](Expr ow) { kb.store(y, base + ow, kb.load(x, r * i64c(32) + ow)); });
      });
    });
  });
  Kernel k = kb.finish();
  CudaKernelPlan plan = plan_cuda_kernel(k);
  CHECK(plan.mapping == CudaMapping::block);
  CHECK(role(plan, k, "r") == CudaLoopRole::sequential);
  CHECK(role(plan, k, "c") == CudaLoopRole::sequential);
  CHECK(role(plan, k, "ow") == CudaLoopRole::spread);
}

TEST_CASE("a loop reading what an earlier phase wrote (but not writing it) is spread", "[cuda][mapping]") {
  // Column sums of a matrix the first loop wrote: each column's thread reads every row.
  KernelBuilder kb("k0_colsum");
  int x = kb.param("x", ScalarType::f32, false, 40);
  int m = kb.param("m", ScalarType::f32, true, 40);
  int s = kb.param("s", ScalarType::f32, true, 10);
  kb.loop("i", 40, false, [&](Expr i) { kb.store(m, i, kb.load(x, i) * f32c(2)); });
  kb.loop("c", 10, false, [&](Expr c) {
    Expr acc = kb.let("acc", f32c(0));
    kb.loop("r", 4, false, [&](Expr r) { kb.assign(acc, acc + kb.load(m, r * i64c(10) + c)); });
    kb.store(s, c, acc);
  });
  Kernel k = kb.finish();
  CudaKernelPlan plan = plan_cuda_kernel(k);
  CHECK(plan.mapping == CudaMapping::block);
  CHECK(role(plan, k, "i") == CudaLoopRole::spread);
  CHECK(role(plan, k, "c") == CudaLoopRole::spread);
  // m is read back: the barrier after the first phase orders its writes before the sums.
  CHECK(plan.at(*find_loop(k.body, "i")).after == Syncs{CudaSync::after});
}

TEST_CASE("lane 0's stores are fenced before the next iteration's team work", "[cuda][mapping]") {
  // Per row: lane 0 writes a scratch slot the next row's spread loop overwrites... in order.
  KernelBuilder kb("k0_iter");
  int x = kb.param("x", ScalarType::f32, false, 4 * 32);
  int y = kb.param("y", ScalarType::f32, true, 4 * 32);
  int z = kb.param("z", ScalarType::f32, true, 4);
  kb.loop("r", 4, false, [&](Expr r) {
    kb.loop("c", 32, false, [&](Expr c) { kb.store(y, r * i64c(32) + c, kb.load(x, r * i64c(32) + c)); });
    kb.store(z, i64c(0), f32c(1));
  });
  Kernel k = kb.finish();
  CudaKernelPlan plan = plan_cuda_kernel(k);
  CHECK(plan.mapping == CudaMapping::block);
  CHECK(role(plan, k, "r") == CudaLoopRole::sequential);
  CHECK(role(plan, k, "c") == CudaLoopRole::spread);
  CHECK(plan.at(*find_loop(k.body, "r")).after == Syncs{CudaSync::end_of_iteration});
  CHECK_THAT(describe_plan(plan, k), Catch::Contains("mapping block <<<1, 256>>>") &&
                                         Catch::Contains("loop r: sequential sync after: end_of_iteration") &&
                                         Catch::Contains("    loop c: spread sync after: after") &&
                                         Catch::Contains("    store lane0"));
}

TEST_CASE("an in-place update is float4 when each element is read before it is written", "[cuda][mapping]") {
  KernelBuilder kb("k0_axpy");
  int w = kb.param("w", ScalarType::f32, true, 1024);
  int g = kb.param("g", ScalarType::f32, false, 1024);
  kb.loop("i", 1024, true, [&](Expr i) { kb.store(w, i, kb.load(w, i) - kb.load(g, i) * f32c(0.5)); });
  CudaKernelPlan plan = plan_cuda_kernel(kb.finish());
  CHECK(plan.mapping == CudaMapping::grid_vec4);
  CHECK(plan.vec4_loads == std::set<int>{w, g});
  CHECK(plan.vec4_stores == std::set<int>{w});
  CHECK(plan.min_bytes == 3 * 1024 * 4);  // w read and written, g read: its bandwidth floor

  // Written, then read again in the same iteration: float4 loads up front would read stale data.
  KernelBuilder kb2("k0_twice");
  int v = kb2.param("v", ScalarType::f32, true, 1024);
  kb2.loop("i", 1024, true, [&](Expr i) {
    kb2.store(v, i, kb2.load(v, i) * f32c(2));
    kb2.store(v, i, kb2.load(v, i) + f32c(1));
  });
  CHECK(plan_cuda_kernel(kb2.finish()).mapping == CudaMapping::grid_thread);
}

TEST_CASE("a GEMM epilogue's grid covers the index range it is launched over", "[cuda][mapping]") {
  KernelBuilder kb("k0_epilogue");
  Expr begin = kb.index_param("begin"), end = kb.index_param("end");
  int c = kb.param("c", ScalarType::f32, true, 128 * 512);
  kb.loop("i", begin, end, true, [&](Expr i) { kb.store(c, i, max(kb.load(c, i), f32c(0))); });
  Kernel k = kb.finish();
  CHECK(plan_cuda_kernel(k, 128 * 512).launch.grid == 256);
  CHECK(plan_cuda_kernel(k, 128 * 512).mapping == CudaMapping::grid_thread);  // bounds not constant: no float4
  CHECK(plan_cuda_kernel(k).launch.grid == cuda_blocks_for(int64_t{1} << 20));
}

TEST_CASE("seed CNN: the fused conv/pool is a warp per pooled row of each plane, lanes along the row",
          "[cuda][mapping]") {
  ir::Module m = test::compiled_model("models/cifar_cnn.dnn");
  Program p = lower_graph(m, *m.graph("train_step"), 4, cuda_lower_options());
  const Kernel* conv = nullptr;
  for (const Kernel& k : p.kernels)
    if (k.name.find("conv2d_pool") != std::string::npos) conv = &k;
  REQUIRE(conv != nullptr);
  CudaKernelPlan plan = plan_cuda_kernel(*conv);
  INFO(describe_plan(plan, *conv));
  CHECK(plan.mapping == CudaMapping::grid_warp);
  CHECK(plan.launch.grid * plan.launch.block / 32 == 4 * 16 * 15);  // images x channels x pooled rows
  REQUIRE(plan.grid_loop);
  int64_t trips = 0;
  CHECK(is_int_const(plan.grid_loop->end, &trips));
  CHECK(trips == 960);
  CHECK(role(plan, *conv, "ow") == CudaLoopRole::spread);
}
