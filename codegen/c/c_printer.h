// The C-family renderer, in the spirit of tinygrad's CStyleLanguage: KernelIR expressions, C type
// names, buffer parameters and the statements one thread runs in order are printed here once for
// every C dialect. A target printer (cpp/, cuda/) derives from CPrinter and overrides the hooks
// where its dialect differs: how builtins and special float values are spelled, how a failed
// check leaves the kernel, how a loop is opened, and loads/stores it renders its own way.
#pragma once
#include <string>

#include "codegen/kir/kernel_ir.h"

namespace dnnc::codegen {

/// The spellings that differ between C dialects.
struct CDialect {
  std::string builtin_prefix;                 // math and classification calls: "__builtin_" (C++, no headers) or ""
  std::string neg_i64_suffix;                 // after a negative i64 literal: "" or "LL"
  std::string inf_f32, neg_inf_f32, nan_f32;  // the float specials (a quiet NaN)
  std::string inf_f64, neg_inf_f64, nan_f64;  // the double specials
  std::string erf_f32;                        // f32 erf: a function the target defines, or "" (the math library's)
};

/// The C type of a KernelIR scalar in generated code: bool, i64, u64, float, double (the
/// generated source typedefs i64 and u64).
const char* c_type_name(ScalarType t);

/// An exact literal: a hex float (`0x1.99999ap-4f`, negatives parenthesized) or the dialect's
/// spelling of an infinity or NaN. Never fails.
std::string c_float_literal(float v, const CDialect& d);
std::string c_double_literal(double v, const CDialect& d);

/// `const float* __restrict__ name` (const unless the kernel writes the buffer).
std::string c_param_decl(const KernelParam& p);

class CPrinter {
 public:
  /// Prints parts of kernel `k` (which must outlive the printer) in dialect `d`.
  CPrinter(const Kernel& k, const CDialect& d) : k_(k), d_(d) {}
  virtual ~CPrinter() = default;
  CPrinter(const CPrinter&) = delete;
  CPrinter& operator=(const CPrinter&) = delete;

  /// One expression, fully parenthesized. A node kind no case handles is an InternalError.
  std::string expr(const Expr& e);
  /// Statements that one thread runs in order, lines indented by two spaces per level.
  void block(std::string& out, const Block& b, int indent);
  void stmt(std::string& out, const StmtNode& s, int indent);

 protected:
  /// A load: `name[index]`, unless the target renders it from elsewhere (CUDA's float4 lanes).
  virtual std::string load(const ExprNode& n);
  /// A store statement without indent: `name[index] = value;` or `+=`.
  virtual std::string store(const StmtNode& s);
  /// What follows `if (cond) ` when a check fails: leave the kernel reporting `s.code`.
  virtual std::string fail_exit(const StmtNode& s) = 0;
  /// A loop statement; the default is a sequential `for` around its body.
  virtual void loop(std::string& out, const StmtNode& s, int indent);

  /// `for (i64 v = begin; v < end; ++v) {` (no indent, no newline).
  std::string for_header(const StmtNode& s);
  static std::string pad(int indent) { return std::string(static_cast<size_t>(indent) * 2, ' '); }
  /// A math builtin for the float type of its argument: expf / __builtin_expf, exp for double.
  std::string math(const char* name, ScalarType t) const;

  const Kernel& k_;
  const CDialect& d_;
};

}  // namespace dnnc::codegen
