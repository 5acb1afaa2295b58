// The GEMM side of the CUDA printer (declared in cuda_printer.h): which bias and activation
// each GEMM step leaves to a cuBLASLt epilogue, what the backend asks cuBLASLt for and falls
// back to, and the launch sequence of a step given what cuBLASLt took.
#include <algorithm>

#include "codegen/cuda/cuda_printer.h"

namespace dnnc::codegen {

bool cuda_gemm_bias_epilogue(const GemmCall& g) {
  return g.bias_kind == GemmCall::Bias::per_col && g.batch == 1 && g.beta == 0.0f && !g.accumulate_batches;
}

const char* cuda_lt_act_name(CudaLtAct a, bool bias) {
  switch (a) {
    case CudaLtAct::none:
      return bias ? "BIAS" : "DEFAULT";
    case CudaLtAct::relu:
      return bias ? "RELU_BIAS" : "RELU";
    case CudaLtAct::relu_aux:
      return bias ? "RELU_AUX_BIAS" : "RELU_AUX";
    case CudaLtAct::drelu:
      return "DRELU";
    case CudaLtAct::drelu_bgrad:
      return "DRELU_BGRAD";
  }
  return "?";
}

void plan_cuda_gemm_acts(const Program& p, std::vector<CudaGemmAct>& step_act, std::vector<CudaReluMask>& masks) {
  step_act.assign(p.steps.size(), CudaGemmAct{});
  masks.clear();
  auto root = [&](int b) { return root_buffer(p, b); };
  // One product into a dense C with a generated epilogue (cuBLASLt's epilogue replaces it).
  auto single = [](const Step& s) {
    const GemmCall& g = s.gemm;
    return s.kind == Step::Kind::gemm && g.epilogue >= 0 && g.batch == 1 && !g.accumulate_batches && g.ldc == g.n &&
           g.first_step < 0;
  };
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const GemmCall& g = p.steps[i].gemm;
    if (!single(p.steps[i]) || g.act != GemmCall::Act::relu_backward || g.act_mask < 0 ||
        g.bias_kind != GemmCall::Bias::none)
      continue;
    // The last step before this one that writes the mask must be a relu GEMM of C's shape.
    const int mask = root(g.act_mask);
    for (size_t j = i; j-- > 0;) {
      if (!step_access(p, p.steps[j]).writes.count(mask)) continue;
      const GemmCall& f = p.steps[j].gemm;
      if (single(p.steps[j]) && f.act == GemmCall::Act::relu && root(f.c) == mask && f.m == g.m && f.n == g.n) {
        CudaGemmAct& fa = step_act[j];
        if (fa.act != CudaLtAct::relu_aux) {
          fa.act = CudaLtAct::relu_aux;
          fa.mask = static_cast<int>(masks.size());
          masks.push_back({.rows = f.n, .cols = f.m, .ld = (f.n + 127) / 128 * 128, .producer = static_cast<int>(j)});
        }
        step_act[i] = {g.col_sums >= 0 ? CudaLtAct::drelu_bgrad : CudaLtAct::drelu, fa.mask};
      }
      break;
    }
  }
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (single(p.steps[i]) && p.steps[i].gemm.act == GemmCall::Act::relu && step_act[i].act == CudaLtAct::none)
      step_act[i].act = CudaLtAct::relu;
  // Masks numbered in the order their relu_aux GEMMs run.
  std::vector<int> order(masks.size()), renumber(masks.size());
  for (size_t m = 0; m < masks.size(); ++m) order[m] = static_cast<int>(m);
  std::sort(order.begin(), order.end(), [&](int x, int y) { return masks[x].producer < masks[y].producer; });
  std::vector<CudaReluMask> sorted;
  for (int m : order) {
    renumber[static_cast<size_t>(m)] = static_cast<int>(sorted.size());
    sorted.push_back(masks[static_cast<size_t>(m)]);
  }
  masks = std::move(sorted);
  for (CudaGemmAct& a : step_act)
    if (a.mask >= 0) a.mask = renumber[static_cast<size_t>(a.mask)];
}

std::vector<CudaLtAct> cuda_act_fallbacks(CudaLtAct act) {
  switch (act) {
    case CudaLtAct::relu_aux:
      return {CudaLtAct::relu_aux, CudaLtAct::relu, CudaLtAct::none};
    case CudaLtAct::drelu_bgrad:
      return {CudaLtAct::drelu_bgrad, CudaLtAct::drelu, CudaLtAct::none};
    case CudaLtAct::none:
      return {CudaLtAct::none};
    case CudaLtAct::relu:
    case CudaLtAct::drelu:
      break;
  }
  return {act, CudaLtAct::none};
}

CudaLtAct cuda_act_request(const CudaProgram& cp, size_t step, const std::vector<bool>& mask_written) {
  const CudaGemmAct& planned = cp.step_act.at(step);
  const bool reads = planned.act == CudaLtAct::drelu || planned.act == CudaLtAct::drelu_bgrad;
  if (reads && !mask_written.at(static_cast<size_t>(planned.mask))) return CudaLtAct::none;
  return planned.act;
}

std::vector<CudaStreamOp> cuda_launch_sequence(const Program& p, const CudaProgram& cp,
                                               const std::vector<CudaLtAct>& taken) {
  std::vector<CudaStreamOp> out;
  auto kernel = [&](int k) { out.push_back({CudaStreamOp::Kind::kernel, k, CudaLtAct::none}); };
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (p.steps[i].kind == Step::Kind::kernel) {
      kernel(cp.step_kernel[i]);
      continue;
    }
    const CudaLtAct act = taken.at(i);
    if (cp.step_kernel[i] >= 0) kernel(cp.step_kernel[i]);  // bias fill
    out.push_back({CudaStreamOp::Kind::gemm, static_cast<int>(i), act});
    if (cp.step_epilogue[i] >= 0 && act == CudaLtAct::none) kernel(cp.step_epilogue[i]);         // map over C
    if (cp.step_col_sums[i] >= 0 && act != CudaLtAct::drelu_bgrad) kernel(cp.step_col_sums[i]);  // bias gradient
  }
  return out;
}

}  // namespace dnnc::codegen
