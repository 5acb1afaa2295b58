// How each functional op of docs/ops.md is called from a .dnn file: its tensor operands and
// the attributes that may follow them positionally or as `key: value`. Defaults are not
// repeated here: ir::complete_attrs fills them from the op registry.
#pragma once
#include <string>
#include <vector>

#include "frontend/call_args.h"
#include "frontend/const_eval.h"
#include "ir/attrs.h"

namespace dnnc::frontend {

enum class AttrConv : uint8_t {
  int_,    // an integer
  float_,  // a number
  bool_,   // true / false
  pair,    // an integer v (= (v, v)) or a pair (a, b): kernel, stride, padding
  dims,    // integers, given as the remaining positionals or one tuple; the batch symbol is -1
};

struct AttrArg {
  std::string name;
  AttrConv conv;
};

struct OpSurface {
  std::string name;
  std::vector<std::string> operands;  // tensor operands, always positional-first and required
  std::vector<AttrArg> attrs;         // optional, in positional order
  bool varargs = false;               // the last attr (a `dims` one) also takes extra positionals
};

/// nullptr if `name` is not callable as a function from a .dnn file.
const OpSurface* find_surface(const std::string& name);
/// Every callable op name, for suggestions and docs.
std::vector<std::string> surface_names();
/// The signature `bind_args` checks calls against: operands then attrs.
Signature signature_of(const OpSurface& s);

/// Converts the given attribute arguments (slots after the operands, plus varargs) to IR attrs.
/// Throws ir::CompileError at an argument of the wrong kind. `batch_symbol` is accepted in
/// `dims` attributes as kBatch (-1); other negative dims there are errors.
ir::Attrs convert_attrs(const OpSurface& s, const Bound& b, const ConstEval& ev, const std::string& batch_symbol,
                        const std::string& file);

}  // namespace dnnc::frontend
