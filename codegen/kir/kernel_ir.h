// KernelIR: a small, target-free loop/expression tree for one generated kernel (loops, loads,
// stores, scalar math, reductions through mutable locals). Printers turn it into C++ or CUDA.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace dnnc::codegen {

/// Element and scalar types of KernelIR. `boolean` only appears as the type of comparisons.
enum class ScalarType : uint8_t { boolean, i64, u64, f32, f64 };
const char* scalar_type_name(ScalarType t);  // "bool", "i64", "u64", "f32", "f64"
int scalar_type_bytes(ScalarType t);         // 1, 8, 8, 4, 8
bool is_float(ScalarType t);
bool is_int(ScalarType t);  // i64 or u64

enum class ExprKind : uint8_t { int_const, float_const, var, load, unary, binary, select, cast };

enum class UnaryOp : uint8_t { neg, exp, log, tanh, erf, sqrt, abs, is_nan, logical_not, floor };
/// min/max mean exactly std::min/std::max: `max(a, b) = a < b ? b : a`, `min(a, b) = b < a ? b : a`.
/// shr/shl/bit_xor are for u64 only; mod is C's % on integers.
enum class BinaryOp : uint8_t {
  add,
  sub,
  mul,
  div,
  mod,
  min,
  max,
  pow,
  lt,
  le,
  gt,
  ge,
  eq,
  ne,
  logical_and,
  logical_or,
  bit_xor,
  shr,
  shl,
};
const char* unary_op_name(UnaryOp op);
const char* binary_op_name(BinaryOp op);
/// The C infix operator of `op` (both printers emit C syntax), or nullptr for min, max and pow,
/// which are printed as a conditional or a call.
const char* binary_op_c_token(BinaryOp op);

struct ExprNode;

/// An immutable expression (a shared tree; cheap to copy). Arithmetic operators build nodes and
/// fold integer constants (`i + 0` is `i`, `2 * 3` is `6`); operands must have the same type,
/// except that a plain number next to an Expr takes the Expr's type. Type mismatches assert.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  const ExprNode& operator*() const { return *node_; }
  const ExprNode* operator->() const { return node_.get(); }
  explicit operator bool() const { return node_ != nullptr; }
  ScalarType type() const;

 private:
  std::shared_ptr<const ExprNode> node_;
};

struct ExprNode {
  ExprKind kind = ExprKind::int_const;
  ScalarType type = ScalarType::i64;
  int64_t int_value = 0;   // int_const (u64 constants keep their bits here)
  double float_value = 0;  // float_const (f32 constants hold a value exactly representable in float)
  std::string name;        // var
  int param = -1;          // load: index of the kernel parameter (buffer) read
  UnaryOp unary = UnaryOp::neg;
  BinaryOp binary = BinaryOp::add;
  std::vector<Expr> args;  // unary: 1, binary: 2, select: cond/then/else, load: index, cast: 1
};

// ---- expression builders ---------------------------------------------------------------------
Expr i64c(int64_t v);
Expr u64c(uint64_t v);
Expr f32c(double v);  // rounded to float first
Expr f64c(double v);
Expr constant(ScalarType t, double v);  // a constant of type t (ints truncate)
Expr var(const std::string& name, ScalarType t);
Expr unary(UnaryOp op, Expr a);
Expr binary(BinaryOp op, Expr a, Expr b);
Expr select(Expr cond, Expr then_value, Expr else_value);
Expr cast(ScalarType t, Expr a);  // no-op if `a` already has type t

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator+(Expr a, double b);
Expr operator-(Expr a, double b);
Expr operator*(Expr a, double b);
Expr operator/(Expr a, double b);
Expr operator%(Expr a, int64_t b);
Expr operator+(double a, Expr b);
Expr operator-(double a, Expr b);
Expr operator*(double a, Expr b);
Expr operator/(double a, Expr b);
Expr lt(Expr a, Expr b);
Expr le(Expr a, Expr b);
Expr gt(Expr a, Expr b);
Expr ge(Expr a, Expr b);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr exp(Expr a);
Expr log(Expr a);
Expr sqrt(Expr a);
/// Integer constant value if `e` is an int_const.
bool is_int_const(const Expr& e, int64_t* value = nullptr);

// ---- statements ------------------------------------------------------------------------------

enum class StmtKind : uint8_t { loop, store, let, assign, if_, fail };

struct StmtNode;
using Stmt = std::shared_ptr<StmtNode>;
using Block = std::vector<Stmt>;

struct StmtNode {
  StmtKind kind = StmtKind::store;
  // loop: `for (var = begin; var < end; ++var) body`; `parallel` asks for the iterations to be
  // spread over threads (they must be independent; only loops outside any parallel loop may be).
  std::string var;
  Expr begin, end;
  bool parallel = false;
  // store: params[param][index] = value (or += value if `accumulate`).
  int param = -1;
  Expr index, value;
  bool accumulate = false;
  // let: declares mutable local `var` of `type` initialised to `value`; assign: var = value.
  ScalarType type = ScalarType::f32;
  // if_: if (cond) body; fail: if (cond) the kernel stops and reports Kernel::errors[code - 1].
  Expr cond;
  int code = 0;
  Block body;
};

/// A buffer the kernel reads or writes, passed by pointer. Shapes are concrete (batch bound).
struct KernelParam {
  std::string name;  // a C identifier, unique within the kernel
  ScalarType type = ScalarType::f32;
  bool written = false;
  int64_t numel = 0;
};

/// One generated kernel: parameters and a body of statements.
struct Kernel {
  std::string name;  // a C identifier, unique within its program
  /// i64 scalars passed by value before the buffers (read as `var(name, i64)`): a GEMM
  /// epilogue's element range `[begin, end)`, which the GEMM's threads split. Usually empty.
  std::vector<std::string> index_params;
  std::vector<KernelParam> params;
  Block body;
  std::vector<std::string> errors;  // messages of the fail statements, by code - 1
};

/// Builds a Kernel with a stack of open blocks; loops and ifs take their body as a callback.
/// Variable names are made unique per kernel by `fresh`.
class KernelBuilder {
 public:
  explicit KernelBuilder(std::string name);
  /// Adds a parameter, returns its index.
  int param(const std::string& name, ScalarType type, bool written, int64_t numel);
  ScalarType param_type(int p) const;
  /// Marks param p as written too (a buffer updated in place).
  void set_written(int p);
  /// Adds an i64 scalar parameter (Kernel::index_params); returns it as a var Expr.
  Expr index_param(const std::string& name);

  /// A load of params[p][index].
  Expr load(int p, Expr index) const;
  void store(int p, Expr index, Expr value);
  void accumulate(int p, Expr index, Expr value);  // params[p][index] += value
  /// Declares a mutable local initialised to `value`; returns it as a var Expr.
  Expr let(const std::string& base, Expr value);
  /// Same, with an explicit type (value is cast).
  Expr let(const std::string& base, ScalarType t, Expr value);
  void assign(const Expr& var, Expr value);
  /// for (v = begin; v < end; ++v) body(v). Extents are i64 expressions.
  void loop(const std::string& base, Expr begin, Expr end, bool parallel, const std::function<void(Expr)>& body);
  void loop(const std::string& base, int64_t extent, bool parallel, const std::function<void(Expr)>& body);
  void if_(Expr cond, const std::function<void()>& body);
  /// if (cond) the kernel stops and reports `message` (must not be inside a parallel loop).
  void fail(Expr cond, std::string message);

  /// A variable name not used yet in this kernel: base, base1, base2, ...
  std::string fresh(const std::string& base);
  Kernel finish();

 private:
  void push(Stmt s);
  Kernel k_;
  std::vector<Block*> stack_;
  // Names given out, and per base the smallest suffix not yet known to be taken (names are
  // never released, so it only grows): a kernel with hundreds of `t` locals (col2im gathers)
  // scanned a list from t1 up for each new one.
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int> next_suffix_;
  int parallel_depth_ = 0;
};

}  // namespace dnnc::codegen
