// The GEMM steps of a Program as C++ (internal to the C++ printer): OpenBLAS calls split over
// OpenMP threads, GEMMs with a row-wise epilogue kernel, co-scheduled groups of GEMMs, and the
// helper functions every generated translation unit carries for them.
#pragma once
#include <string>

#include "codegen/kir/program.h"

namespace dnnc::codegen {

/// The helper functions (dnnc_sgemm, its split, split-K and co-scheduling forms) the generated
/// translation unit defines after its prelude.
const char* cpp_gemm_helpers();

/// The function `name` computing GEMM step `s` of `p` (with its epilogue and column sums).
std::string cpp_gemm_function(const Program& p, const Step& s, const std::string& name);

/// The function `name` running co-scheduled GEMM steps [first, last] of `p` in one parallel region.
std::string cpp_gemm_group_function(const Program& p, size_t first, size_t last, const std::string& name);

/// The arguments dnnc_run passes to a GEMM step's function: a, b, [bias], c, the epilogue's
/// buffers other than c, [step], [col_sums].
std::string cpp_gemm_call_args(const Program& p, const Step& s);

/// `// line` for each line.
void print_cpp_comment(std::string& out, const std::vector<std::string>& lines);

}  // namespace dnnc::codegen
