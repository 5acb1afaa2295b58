// The text form of the kernel IR (`dnnc compile --emit=kir`): a Program's buffers, its steps in
// order (kernels with their statements, GEMM calls with their flags and epilogues), outputs and
// updates. Target-free and deterministic; tests check lowering patterns against it with
// CHECK lines (tests/codegen/check/, docs/codegen.md has the grammar).
#pragma once
#include <functional>
#include <string>

#include "codegen/kir/program.h"

namespace dnnc::codegen {

/// Target annotations for the text: called with (kernel, nullptr) for comment lines printed
/// above a kernel, and with (kernel, statement) for a comment after a statement's first line
/// (e.g. the CUDA thread mapping). Empty strings print nothing.
using KirNotes = std::function<std::string(const Kernel&, const StmtNode*)>;

/// One expression, with C precedence (parentheses only where needed).
std::string print_expr_kir(const Expr& e, const Kernel& k);

/// One kernel: `kernel name(params) { statements }`, lines indented by `indent` levels.
std::string print_kernel_kir(const Kernel& k, int indent = 0, const KirNotes& notes = {});

/// The whole program.
std::string print_kir(const Program& p, const KirNotes& notes = {});

}  // namespace dnnc::codegen
