// The CUDA printer's decisions on small hand-built kernels and on the seed models: which
// mapping each kernel gets, exact literals, warp-shuffle reductions, float4 access, GEMM bias
// fills, and a clear error for a KernelIR node kind it does not know.
#include <catch2/catch.hpp>

#include "codegen/kir/kernel_ir.h"
#include "cuda_test_util.h"
#include "ir/check.h"

using namespace dnnc;
using namespace dnnc::codegen;

namespace {

Program one_kernel_program(Kernel k) {
  Program p;
  p.module_name = "t";
  p.graph_name = "g";
  for (const KernelParam& kp : k.params) {
    Buffer b;
    b.name = kp.name;
    b.dtype = kp.type;
    b.shape = {kp.numel};
    p.buffers.push_back(b);
  }
  Step s;
  s.kernel = 0;
  s.comment = {"%y = test_op(%x)"};
  for (size_t i = 0; i < k.params.size(); ++i) s.args.push_back(static_cast<int>(i));
  p.kernels.push_back(std::move(k));
  p.steps.push_back(s);
  return p;
}

const CudaKernel& only(const CudaProgram& cp) {
  REQUIRE(cp.kernels.size() == 1);
  return cp.kernels[0];
}

}  // namespace

TEST_CASE("a flat map becomes a float4 grid-stride loop with exact literals", "[cuda][printer]") {
  KernelBuilder kb("k0_scale");
  int x = kb.param("x", ScalarType::f32, false, 1030);
  int y = kb.param("y", ScalarType::f32, true, 1030);
  kb.loop("i", 1030, true, [&](Expr i) { kb.store(y, i, kb.load(x, i) * f32c(0.1)); });
  CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
  const CudaKernel& k = only(cp);
  INFO(cp.source);
  CHECK(k.mapping == CudaMapping::grid_vec4);
  CHECK(k.launch.grid == 2);  // 258 threads of four elements
  CHECK(cp.source.find("extern \"C\" __global__ void k0_scale(") != std::string::npos);
  CHECK(cp.source.find("reinterpret_cast<const float4*>(x)[dnnc_q]") != std::string::npos);
  CHECK(cp.source.find("0x1.99999ap-4f") != std::string::npos);
  CHECK(cp.source.find("// %y = test_op(%x)") != std::string::npos);
  CHECK(cp.source.find("for (i64 i = 1028 + dnnc_tid") != std::string::npos);  // the 2-element tail
}

TEST_CASE("a row reduction inside a parallel loop uses a warp per row and shuffles", "[cuda][printer]") {
  KernelBuilder kb("k0_rowmax");
  int x = kb.param("x", ScalarType::f32, false, 64 * 100);
  int y = kb.param("y", ScalarType::f32, true, 64);
  kb.loop("r", 64, true, [&](Expr r) {
    Expr mx = kb.let("mx", f32c(-INFINITY));
    kb.loop("c", 100, false, [&](Expr c) { kb.assign(mx, max(mx, kb.load(x, r * 100 + c))); });
    kb.store(y, r, mx);
  });
  CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
  INFO(cp.source);
  CHECK(only(cp).mapping == CudaMapping::grid_warp);
  // 64 warps: one per block, so that they spread over 64 multiprocessors, not 8.
  CHECK(only(cp).launch.block == 32);
  CHECK(only(cp).launch.grid == 64);
  CHECK(cp.source.find("dnnc_warp_allreduce(dnnc_part0, dnnc_op_max())") != std::string::npos);
  CHECK(cp.source.find("for (i64 c = 0 + dnnc_lane; c < 100; c += 32)") != std::string::npos);
  CHECK(cp.source.find("if (dnnc_lane == 0) y[r] = mx;") != std::string::npos);
  CHECK(cp.source.find("__int_as_float(0xff800000)") != std::string::npos);  // -inf, exactly
}

TEST_CASE("a kernel with phases runs in one block with barriers and a block reduction", "[cuda][printer]") {
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
  CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
  INFO(cp.source);
  const CudaKernel& k = only(cp);
  CHECK(k.mapping == CudaMapping::block);
  CHECK(k.launch.grid == 1);
  CHECK(k.launch.shared_bytes == 256);
  CHECK(cp.source.find("__shared__ u64 dnnc_smem[32];") != std::string::npos);
  CHECK(cp.source.find("dnnc_block_allreduce(dnnc_part0, dnnc_op_add(), dnnc_smem)") != std::string::npos);
  // y[k] += ... is spread over the block inside the sequential r loop; not the r loop itself.
  CHECK(cp.source.find("for (i64 k = 0 + (i64)threadIdx.x; k < 10; k += (i64)blockDim.x)") != std::string::npos);
  CHECK(cp.source.find("for (i64 r = 0; r < 100; ++r)") != std::string::npos);
  CHECK(cp.source.find("if ((i64)threadIdx.x == 0) s[0] = total;") != std::string::npos);
}

TEST_CASE("a scatter whose index is not injective in the loop variable is not spread", "[cuda][printer]") {
  KernelBuilder kb("k0_scatter");
  int x = kb.param("x", ScalarType::f32, false, 100);
  int y = kb.param("y", ScalarType::f32, true, 50);
  kb.loop("o", 50, false, [&](Expr o) { kb.store(y, o, f32c(0)); });
  kb.loop("i", 100, false, [&](Expr i) { kb.accumulate(y, i / 2, kb.load(x, i)); });
  CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
  INFO(cp.source);
  CHECK(only(cp).mapping == CudaMapping::block);
  CHECK(cp.source.find("for (i64 i = 0; i < 100; ++i)") != std::string::npos);
  CHECK(cp.source.find("if ((i64)threadIdx.x == 0) y[(i / 2)] += x[i];") != std::string::npos);
}

TEST_CASE("failed checks report the program-wide error code", "[cuda][printer]") {
  KernelBuilder kb("k0_check");
  int l = kb.param("label", ScalarType::i64, false, 4);
  int y = kb.param("y", ScalarType::f32, true, 4);
  kb.loop("b", 4, false, [&](Expr b) { kb.fail(ge(kb.load(l, b), i64c(10)), "label out of range"); });
  kb.loop("i", 4, true, [&](Expr i) { kb.store(y, i, cast(ScalarType::f32, kb.load(l, i))); });
  CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
  INFO(cp.source);
  CHECK(only(cp).mapping == CudaMapping::grid_thread);
  CHECK(cp.source.find("atomicCAS(dnnc_err, 0, dnnc_err_base + 1); return;") != std::string::npos);
}

TEST_CASE("an unknown KernelIR statement kind is an error naming the kernel", "[cuda][printer]") {
  KernelBuilder kb("k0_future");
  int y = kb.param("y", ScalarType::f32, true, 4);
  kb.store(y, i64c(0), f32c(1));
  Kernel k = kb.finish();
  k.body[0]->kind = static_cast<StmtKind>(200);
  try {
    print_program_cuda(one_kernel_program(std::move(k)));
    FAIL("printed an unknown statement kind");
  } catch (const InternalError& e) {
    CHECK_THAT(e.component(), Catch::Contains("CUDA printer, kernel k0_future"));
    CHECK_THAT(e.message(), Catch::Contains("statement kind 200"));
  }
}

TEST_CASE("seed models: GEMMs are not kernels, elementwise ops are vectorized", "[cuda][printer]") {
  ir::Module m = test::cuda_pipeline_model("models/mnist_mlp.dnn");
  Program p = test::cuda_lower(m, "train_step", 128);
  CudaProgram cp = print_program_cuda(p);
  int kernel_steps = 0, gemm_steps = 0, bias_fills = 0, epilogues = 0, col_sums = 0;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (p.steps[i].kind == Step::Kind::kernel) {
      ++kernel_steps;
      REQUIRE(cp.step_kernel[i] >= 0);
      CHECK(cp.kernels[static_cast<size_t>(cp.step_kernel[i])].name ==
            p.kernels[static_cast<size_t>(p.steps[i].kernel)].name);
    } else {
      ++gemm_steps;
      if (cp.step_epilogue[i] >= 0) ++epilogues;  // a map over C (relu) fused into the GEMM step
      if (cp.step_col_sums[i] >= 0) ++col_sums;   // a bias gradient of C
      if (cp.step_kernel[i] >= 0)
        ++bias_fills;
      else
        CHECK((p.steps[i].gemm.bias < 0 || cuda_gemm_bias_epilogue(p.steps[i].gemm)));
    }
  }
  CHECK(gemm_steps == 8);  // 3 forward, 2 input gradients, 3 weight gradients
  CHECK(bias_fills == 0);  // every linear's bias is a cuBLASLt epilogue
  CHECK(col_sums == 2);    // fc2's and fc1's bias gradients, after relu_backward
  CHECK(static_cast<int>(cp.kernels.size()) == kernel_steps + bias_fills + epilogues + col_sums);
  for (const CudaKernel& k : cp.kernels) {
    INFO(k.name);
    bool flat_map = k.name.find("relu") != std::string::npos || k.name.find("sgd_update") != std::string::npos;
    if (flat_map && k.scalars.empty()) CHECK(k.mapping == CudaMapping::grid_vec4);
    if (!k.scalars.empty()) CHECK(k.scalars.size() == 2);  // an epilogue's [begin, end) of C
  }
  CHECK(print_program_cuda(p).source == cp.source);  // deterministic
}

TEST_CASE("a strided loop around a unit-stride loop spreads the inner one (coalesced)", "[cuda][printer]") {
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
  CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
  INFO(cp.source);
  CHECK(only(cp).mapping == CudaMapping::grid_warp);
  CHECK(cp.source.find("for (i64 oh = 0; oh < 30; ++oh)") != std::string::npos);
  CHECK(cp.source.find("for (i64 ow = 0 + dnnc_lane; ow < 30; ow += 32)") != std::string::npos);
}

// col2im: y[b, ow + kj] += x[b, kj, ow]. For a fixed ow two values of kj store to different
// elements, but lane kj at ow = t and lane kj + 1 at ow = t - 1 add into the same one: kj must
// not be spread over the lanes (a lost update), the inner ow loop may.
TEST_CASE("a loop is not spread over threads when an inner loop's variable lets two of its iterations meet",
          "[cuda][printer]") {
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
  CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
  INFO(cp.source);
  CHECK(cp.source.find("kj = 0 + dnnc_lane") == std::string::npos);
  CHECK(cp.source.find("ow = 0 + dnnc_lane") != std::string::npos);
}

TEST_CASE("a flat loop storing under a condition is not vectorized (its float4 would write unset lanes)",
          "[cuda][printer]") {
  KernelBuilder kb("k0_cond");
  int x = kb.param("x", ScalarType::f32, false, 64);
  int y = kb.param("y", ScalarType::f32, true, 64);
  kb.loop("i", 64, true, [&](Expr i) {
    Expr v = kb.load(x, i);
    kb.if_(gt(v, f32c(0)), [&] { kb.store(y, i, v); });
  });
  CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
  INFO(cp.source);
  CHECK(only(cp).mapping == CudaMapping::grid_thread);
}

TEST_CASE("a loop storing one buffer at two indices is not spread (y[v + 1] of one iteration is y[v] of the next)",
          "[cuda][printer]") {
  KernelBuilder kb("k0_two");
  int y = kb.param("y", ScalarType::f32, true, 65);
  kb.loop("v", 64, false, [&](Expr v) {
    Expr t = kb.let("t", kb.load(y, v));
    kb.store(y, v, t + f32c(1));
    kb.store(y, v + 1, t);
  });
  CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
  INFO(cp.source);
  CHECK(cp.source.find("v = 0 + dnnc_tid") == std::string::npos);
  CHECK(cp.source.find("v = 0 + (i64)threadIdx.x") == std::string::npos);
  CHECK(cp.source.find("v = 0 + dnnc_lane") == std::string::npos);
}

// The index analysis (IndexForm): y[2v] and y[2v + 1] never meet across iterations, y[v] and
// y[v + 1] do (above); a row loop storing y[v*C + c] for an inner c in [0, C) owns its row,
// also through locals (base = v*C) and an inner loop whose bounds are min/max of locals.
TEST_CASE("a loop storing one buffer at offsets that stay within its own stride is spread", "[cuda][printer]") {
  KernelBuilder kb("k0_pairs");
  int x = kb.param("x", ScalarType::f32, false, 128);
  int y = kb.param("y", ScalarType::f32, true, 128);
  kb.loop("v", 64, false, [&](Expr v) {
    kb.store(y, v * 2, kb.load(x, v));
    kb.store(y, v * 2 + 1, kb.load(x, v + 64));
  });
  CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
  INFO(cp.source);
  CHECK(only(cp).mapping == CudaMapping::grid_thread);
}

TEST_CASE("rows through locals and bounded inner loops are spread; one element too many is not", "[cuda][printer]") {
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
    CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
    INFO("width " << width << "\n" << cp.source);
    CHECK(only(cp).mapping == CudaMapping::block);
    CHECK((cp.source.find("r = 0 + (i64)threadIdx.x") != std::string::npos) == (width == 15));
  }
}

// The fused conv's shape: each row r of the output is 30 wide, written in two overlapping
// chunks of 16 columns. Lanes on rows would each touch their own cache line per load; lanes on
// the columns of a chunk touch neighbouring elements, so the inner loop is spread.
TEST_CASE("an inner unit-stride loop of at least 16 iterations is spread instead of its strided outer loop",
          "[cuda][printer]") {
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
  CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
  INFO(cp.source);
  CHECK(only(cp).mapping == CudaMapping::block);
  CHECK(cp.source.find("r = 0 + (i64)threadIdx.x") == std::string::npos);
  CHECK(cp.source.find("ow = ow0 + (i64)threadIdx.x") != std::string::npos);
}

TEST_CASE("a loop reading what an earlier phase wrote (but not writing it) is spread", "[cuda][printer]") {
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
  CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
  INFO(cp.source);
  CHECK(only(cp).mapping == CudaMapping::block);
  CHECK(cp.source.find("c = 0 + (i64)threadIdx.x") != std::string::npos);
}

TEST_CASE("an in-place update is vectorized when each element is read before it is written", "[cuda][printer]") {
  KernelBuilder kb("k0_axpy");
  int w = kb.param("w", ScalarType::f32, true, 1024);
  int g = kb.param("g", ScalarType::f32, false, 1024);
  kb.loop("i", 1024, true, [&](Expr i) { kb.store(w, i, kb.load(w, i) - kb.load(g, i) * f32c(0.5)); });
  CudaProgram cp = print_program_cuda(one_kernel_program(kb.finish()));
  INFO(cp.source);
  CHECK(only(cp).mapping == CudaMapping::grid_vec4);
  CHECK(cp.source.find("const float4 dnnc_l_w = reinterpret_cast<const float4*>(w)[dnnc_q];") != std::string::npos);
  CHECK(cp.source.find("reinterpret_cast<float4*>(w)[dnnc_q] = dnnc_s_w;") != std::string::npos);
  CHECK(only(cp).min_bytes == 3 * 1024 * 4);  // w read and written, g read: its bandwidth floor

  // Written, then read again in the same iteration: float4 loads up front would read stale data.
  KernelBuilder kb2("k0_twice");
  int v = kb2.param("v", ScalarType::f32, true, 1024);
  kb2.loop("i", 1024, true, [&](Expr i) {
    kb2.store(v, i, kb2.load(v, i) * f32c(2));
    kb2.store(v, i, kb2.load(v, i) + f32c(1));
  });
  CHECK(only(print_program_cuda(one_kernel_program(kb2.finish()))).mapping == CudaMapping::grid_thread);
}

namespace {

// The GEMM steps of `p` in order, with the activation epilogue planned for each.
std::vector<std::pair<const GemmCall*, CudaGemmAct>> gemm_acts(const Program& p, const CudaProgram& cp) {
  std::vector<std::pair<const GemmCall*, CudaGemmAct>> out;
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].kind == Step::Kind::gemm) out.emplace_back(&p.steps[i].gemm, cp.step_act[i]);
  return out;
}

}  // namespace

TEST_CASE("MLP: relu and relu_backward GEMM epilogues are planned as cuBLASLt RELU_AUX_BIAS and DRELU_BGRAD",
          "[cuda][printer][epilogue]") {
  ir::Module m = test::cuda_pipeline_model("models/mnist_mlp.dnn");
  Program p = test::cuda_lower(m, "train_step", 128);
  CudaProgram cp = print_program_cuda(p);
  auto acts = gemm_acts(p, cp);
  REQUIRE(acts.size() == 8);
  // Forward: fc1 (n 512) and fc2 (n 256) with relu write masks 0 and 1; fc3 has no activation.
  CHECK(acts[0].second.act == CudaLtAct::relu_aux);
  CHECK(acts[0].second.mask == 0);
  CHECK(acts[1].second.act == CudaLtAct::relu_aux);
  CHECK(acts[1].second.mask == 1);
  CHECK(acts[2].second.act == CudaLtAct::none);
  REQUIRE(cp.relu_masks.size() == 2);
  CHECK(cp.relu_masks[0].rows == 512);  // C's columns: cuBLASLt's column-major rows
  CHECK(cp.relu_masks[0].cols == 128);
  CHECK(cp.relu_masks[0].ld == 512);
  CHECK(cp.relu_masks[0].bytes() == 512 / 8 * 128);
  CHECK(cp.relu_masks[1].rows == 256);
  // Backward: dh2 = dlogits·W3 (n 256) reads mask 1, dh1 = d2·W2 (n 512) mask 0, each with
  // its bias gradient; the weight gradients have no epilogue.
  CHECK(acts[3].first->n == 256);
  CHECK(acts[3].second.act == CudaLtAct::drelu_bgrad);
  CHECK(acts[3].second.mask == 1);
  CHECK(acts[3].first->col_sums >= 0);
  // Its column-sum kernel (run when cuBLASLt has no DRELU_BGRAD) reads C and writes the sums.
  int cs = -1;
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (&p.steps[i].gemm == acts[3].first) cs = cp.step_col_sums[i];
  REQUIRE(cs >= 0);
  CHECK(cp.kernels[static_cast<size_t>(cs)].min_bytes == 4 * (128 * 256 + 256));
  CHECK(acts[5].first->n == 512);
  CHECK(acts[5].second.act == CudaLtAct::drelu_bgrad);
  CHECK(acts[5].second.mask == 0);
  for (size_t i : {size_t{4}, size_t{6}, size_t{7}}) CHECK(acts[i].second.act == CudaLtAct::none);
  CHECK(std::string(cuda_lt_act_name(acts[0].second.act, cuda_gemm_bias_epilogue(*acts[0].first))) == "RELU_AUX_BIAS");

  // Inference has no backward: plain RELU_BIAS, no masks.
  Program ip = test::cuda_lower(m, "infer", 128);
  CudaProgram icp = print_program_cuda(ip);
  auto iacts = gemm_acts(ip, icp);
  REQUIRE(iacts.size() == 3);
  CHECK(iacts[0].second.act == CudaLtAct::relu);
  CHECK(iacts[1].second.act == CudaLtAct::relu);
  CHECK(iacts[2].second.act == CudaLtAct::none);
  CHECK(icp.relu_masks.empty());
  // An odd width: the mask's leading dimension is rounded up to 128 bits.
  Program p6 = test::cuda_lower(m, "train_step", 6);
  CudaProgram cp6 = print_program_cuda(p6);
  REQUIRE(cp6.relu_masks.size() == 2);
  CHECK(cp6.relu_masks[1].rows == 256);
  CHECK(cp6.relu_masks[1].cols == 6);
}

TEST_CASE("a DRELU is planned only when its mask is the last write of a relu GEMM of C's shape",
          "[cuda][printer][epilogue]") {
  ir::Module m = test::cuda_pipeline_model("models/mnist_mlp.dnn");
  Program base = test::cuda_lower(m, "train_step", 128);
  std::vector<size_t> gemm_steps;
  for (size_t i = 0; i < base.steps.size(); ++i)
    if (base.steps[i].kind == Step::Kind::gemm) gemm_steps.push_back(i);
  REQUIRE(gemm_steps.size() == 8);
  const size_t fc2 = gemm_steps[1], dh2 = gemm_steps[3];
  REQUIRE(base.steps[dh2].gemm.act == GemmCall::Act::relu_backward);
  REQUIRE(base.steps[dh2].gemm.act_mask >= 0);

  SECTION("the forward GEMM's epilogue is not a relu") {
    Program p = base;
    p.steps[fc2].gemm.act = GemmCall::Act::none;
    CudaProgram cp = print_program_cuda(p);
    CHECK(cp.step_act[fc2].act == CudaLtAct::none);
    CHECK(cp.step_act[dh2].act == CudaLtAct::none);
    CHECK(cp.step_act[gemm_steps[5]].act == CudaLtAct::drelu_bgrad);  // fc1's pair is untouched
    CHECK(cp.relu_masks.size() == 1);
  }
  SECTION("a kernel between them writes the mask buffer") {
    Program p = base;
    bool rebound = false;
    for (size_t i = fc2 + 1; i < dh2 && !rebound; ++i) {
      Step& s = p.steps[i];
      if (s.kind != Step::Kind::kernel) continue;
      const Kernel& k = p.kernels[static_cast<size_t>(s.kernel)];
      for (size_t a = 0; a < k.params.size() && !rebound; ++a)
        if (k.params[a].written && k.params[a].type == ScalarType::f32) {
          s.args[a] = p.steps[dh2].gemm.act_mask;
          rebound = true;
        }
    }
    REQUIRE(rebound);
    CudaProgram cp = print_program_cuda(p);
    CHECK(cp.step_act[dh2].act == CudaLtAct::none);
    CHECK(cp.step_act[fc2].act == CudaLtAct::relu);  // no reader of its mask: plain RELU_BIAS
  }
  SECTION("shapes differ") {
    Program p = base;
    p.steps[fc2].gemm.m = 64;
    CudaProgram cp = print_program_cuda(p);
    CHECK(cp.step_act[dh2].act == CudaLtAct::none);
  }
  SECTION("no bias gradient: DRELU without BGRAD, and the column-sum kernel is absent") {
    Program p = base;
    p.steps[dh2].gemm.col_sums = -1;
    CudaProgram cp = print_program_cuda(p);
    CHECK(cp.step_act[dh2].act == CudaLtAct::drelu);
    CHECK(cp.step_col_sums[dh2] == -1);
  }
}

// The seed CNN at batch 4 has 64 (image, channel) planes: too few warps for a GPU (the H200's
// 132 SMs ran the whole-plane conv in 38 us). Each warp takes one pooled row and its two conv
// rows instead (conv_row_bands), lanes along the row (coalesced).
TEST_CASE("seed CNN: the fused conv/pool runs one warp per pooled row of each plane", "[cuda][printer]") {
  ir::Module m = test::cuda_pipeline_model("models/cifar_cnn.dnn");
  Program p = test::cuda_lower(m, "train_step", 4);
  CudaProgram cp = print_program_cuda(p);
  const CudaKernel* conv = nullptr;
  for (const CudaKernel& k : cp.kernels)
    if (k.name.find("conv2d_pool") != std::string::npos) conv = &k;
  REQUIRE(conv != nullptr);
  INFO(cp.source);
  CHECK(conv->mapping == CudaMapping::grid_warp);
  CHECK(conv->launch.grid * conv->launch.block / 32 == 4 * 16 * 15);  // images x channels x pooled rows
  CHECK(cp.source.find("bq < 960; bq += (dnnc_nthreads >> 5)") != std::string::npos);
  CHECK(cp.source.find("for (i64 ow = ow0 + dnnc_lane;") != std::string::npos);
}
