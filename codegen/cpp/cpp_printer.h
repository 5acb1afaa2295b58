// The C++ printer: KernelIR kernels and GEMM steps of a codegen::Program as one header-free
// translation unit (OpenMP outer loops, OpenBLAS calls) exporting `dnnc_run`.
#pragma once
#include <string>
#include <vector>

#include "codegen/kir/program.h"

namespace dnnc::codegen {

struct CDialect;
/// C++'s spellings for the C-family renderer (codegen/c): `__builtin_` math, no headers.
const CDialect& cpp_dialect();

/// An exact C++ literal: a hex float with an `f` suffix (`0x1.99999ap-4f`), `__builtin_inff()`,
/// `-__builtin_inff()` or `__builtin_nanf("")`; never fails.
std::string cpp_float_literal(float v);
/// The same for double (no suffix; `__builtin_inf()`, `__builtin_nan("")`).
std::string cpp_double_literal(double v);

/// One expression of kernel `k` as C++ (fully parenthesised).
std::string print_expr_cpp(const Expr& e, const Kernel& k);

/// One kernel as `DNNC_STEP int <name>(<params>)`: returns 0, or the code of the first failed
/// check. `comment` lines are printed above it.
std::string print_kernel_cpp(const Kernel& k, const std::vector<std::string>& comment);

/// The translation unit of a program. It exports:
///   extern "C" void dnnc_set_threads(int n);  // OpenMP threads per parallel region (>= 1)
///   extern "C" int dnnc_run(void** buffers);  // one pointer per Program buffer (aliases and
///                                             // scratch included: the runtime passes nullptr
///                                             // for aliases); 0 or 1 + an index into
///                                             // program_errors(p)
/// The runtime appends `extern "C" const char dnnc_key[]` (its cache key) before compiling.
/// Deterministic: the same program always prints the same bytes.
/// A unit of more than about 64 kB is split into parts: its second line is `#define DNNC_PARTS n`,
/// each step function sits in `#if DNNC_PART < 0 || DNNC_PART == i` (declared in part 0 when in
/// another), dnnc_run in part 0. The JIT compiles part i with -DDNNC_PART=i, all parts side by side,
/// and links them into one library; compiled without -DDNNC_PART the file is the whole unit.
std::string print_program_cpp(const Program& p);

/// The prelude every generated translation unit starts with: typedefs, the CBLAS declarations,
/// the thread and profiler hooks, dnnc_erff (the vectorizable f32 erf the C++ printer calls).
const char* cpp_prelude();

}  // namespace dnnc::codegen
