// The CUDA printer on small hand-built kernels and on every model: it renders the thread
// mapping it is given (tests/codegen/cuda_mapping_test.cpp tests the mapping itself), with exact
// literals, warp-shuffle and block reductions, float4 access, GEMM bias fills and the cuBLASLt
// epilogue plan, and a clear error for a KernelIR node kind it does not know.
#include <catch2/catch.hpp>

#include "codegen/kir/kernel_ir.h"
#include "cuda_test_util.h"
#include "ir/check.h"
#include "tests/support/programs.h"

using namespace dnnc;
using namespace dnnc::codegen;

namespace {

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
  CudaProgram cp = print_program_cuda(test::one_kernel_program(kb.finish()));
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
  CudaProgram cp = print_program_cuda(test::one_kernel_program(kb.finish()));
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
  CudaProgram cp = print_program_cuda(test::one_kernel_program(kb.finish()));
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

TEST_CASE("failed checks report the program-wide error code", "[cuda][printer]") {
  KernelBuilder kb("k0_check");
  int l = kb.param("label", ScalarType::i64, false, 4);
  int y = kb.param("y", ScalarType::f32, true, 4);
  kb.loop("b", 4, false, [&](Expr b) { kb.fail(ge(kb.load(l, b), i64c(10)), "label out of range"); });
  kb.loop("i", 4, true, [&](Expr i) { kb.store(y, i, cast(ScalarType::f32, kb.load(l, i))); });
  CudaProgram cp = print_program_cuda(test::one_kernel_program(kb.finish()));
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
    print_program_cuda(test::one_kernel_program(std::move(k)));
    FAIL("printed an unknown statement kind");
  } catch (const InternalError& e) {
    CHECK_THAT(e.component(), Catch::Contains("CUDA printer, kernel k0_future"));
    CHECK_THAT(e.message(), Catch::Contains("statement kind 200"));
  }
}

TEST_CASE("seed models: GEMMs are not kernels, elementwise ops are vectorized", "[cuda][printer]") {
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
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

TEST_CASE("an in-place update is vectorized when each element is read before it is written", "[cuda][printer]") {
  KernelBuilder kb("k0_axpy");
  int w = kb.param("w", ScalarType::f32, true, 1024);
  int g = kb.param("g", ScalarType::f32, false, 1024);
  kb.loop("i", 1024, true, [&](Expr i) { kb.store(w, i, kb.load(w, i) - kb.load(g, i) * f32c(0.5)); });
  CudaProgram cp = print_program_cuda(test::one_kernel_program(kb.finish()));
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
  CHECK(only(print_program_cuda(test::one_kernel_program(kb2.finish()))).mapping == CudaMapping::grid_thread);
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
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
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
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
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

namespace {

// The source of kernel `name` in a CUDA translation unit: from its `__global__` line to the
// next kernel's comment block.
std::string kernel_source(const std::string& tu, const std::string& name) {
  size_t at = tu.find("extern \"C\" __global__ void " + name + "(");
  REQUIRE(at != std::string::npos);
  size_t end = tu.find("\n}\n", at);
  return tu.substr(at, end + 3 - at);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

// Every kernel of every model, lowered for cuda: the source has exactly the barriers, the
// lane-strided loops and the lane-0 stores its CudaKernelPlan lists, and no others.
TEST_CASE("the printer renders each kernel's thread mapping: its barriers, spread loops and lane-0 stores",
          "[cuda][printer]") {
  int kernels = 0, synced = 0;
  for (const char* model : {"models/mnist_mlp.dnn", "models/mnist_mlp_adam.dnn", "models/lenet5.dnn",
                            "models/cifar_cnn.dnn", "models/cifar_strided.dnn", "tests/trainer/tiny_bn.dnn"}) {
    ir::Module m = test::compiled_model(model);
    for (const char* graph : {"train_step", "infer"}) {
      Program p = test::cuda_lower(m, graph, 3);
      CudaProgram cp = print_program_cuda(p);
      for (const Step& s : p.steps) {
        int ki = s.kind == Step::Kind::kernel ? s.kernel : s.gemm.epilogue;
        if (ki < 0) continue;
        const Kernel& k = p.kernels[static_cast<size_t>(ki)];
        CudaKernelPlan plan = plan_cuda_kernel(k);
        std::string src = kernel_source(cp.source, k.name);
        INFO(model << " " << graph << " kernel " << k.name << "\n" << describe_plan(plan, k) << src);
        size_t syncs = 0, spread = 0, lane0 = 0;
        for (const auto& [stmt, t] : plan.team) {
          syncs += t.before.size() + t.after.size();
          spread += t.role == CudaLoopRole::spread || t.role == CudaLoopRole::reduction;
          lane0 += t.lane0;
        }
        const bool block = plan.mapping == CudaMapping::block;
        const std::string lane = block ? "(i64)threadIdx.x" : "dnnc_lane";
        CHECK(count(src, block ? "__syncthreads();" : "__syncwarp();") == syncs);
        CHECK(count(src, " + " + lane + "; ") == spread);
        CHECK(count(src, "if (" + lane + " == 0) ") == lane0);
        ++kernels;
        synced += syncs > 0;
      }
    }
  }
  CHECK(kernels > 100);
  CHECK(synced > 10);  // the test sees barriers at all
}
