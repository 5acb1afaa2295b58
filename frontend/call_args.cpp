// Argument binding with arity / keyword diagnostics.
#include "frontend/call_args.h"

#include <algorithm>
#include <fmt/format.h>

#include "frontend/const_eval.h"
#include "frontend/suggest.h"

namespace dnnc::frontend {

std::string param_list(const Signature& sig) {
  std::string out = "(";
  for (size_t i = 0; i < sig.params.size(); ++i) out += (i ? ", " : "") + sig.params[i];
  if (sig.varargs) out += sig.params.empty() ? "..." : ", ...";
  return out + ")";
}

static std::string plural(size_t n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

Bound bind_args(const ast::Expr& call, const Signature& sig, const std::string& file) {
  auto fail = [&](ir::SourceLoc at, const std::string& msg) { throw ir::CompileError(file, at, msg); };
  Bound b;
  b.slots.assign(sig.params.size(), nullptr);
  std::vector<ir::SourceLoc> given_at(sig.params.size());
  size_t positional = 0;
  bool seen_keyword = false;
  for (const ast::Arg& a : call.args) {
    if (a.key.empty()) {
      if (seen_keyword)
        fail(expr_start(*a.value), fmt::format("positional argument after keyword arguments in {}", sig.callee));
      if (positional < sig.params.size()) {
        given_at[positional] = expr_start(*a.value);
        b.slots[positional++] = a.value.get();
        continue;
      }
      if (sig.varargs) {
        b.rest.push_back(a.value.get());
        continue;
      }
      fail(expr_start(*a.value), fmt::format("{} takes at most {} {}, found {}", sig.callee,
                                             plural(sig.params.size(), "argument"), param_list(sig), call.args.size()));
    }
    seen_keyword = true;
    size_t idx = 0;
    while (idx < sig.params.size() && sig.params[idx] != a.key) ++idx;
    if (idx == sig.params.size()) {
      std::string hint = did_you_mean(a.key, sig.params);
      // PyTorch's names for dnnc's arguments (nn.Conv2d's kernel_size, softmax's dim).
      static const std::vector<std::pair<std::string, std::string>> torch_names = {
          {"kernel_size", "kernel"}, {"dim", "axis"}};
      for (const auto& [torch, ours] : torch_names)
        if (hint.empty() && a.key == torch && std::find(sig.params.begin(), sig.params.end(), ours) != sig.params.end())
          hint = fmt::format("; did you mean '{}'? (PyTorch's '{}' is '{}' in .dnn)", ours, torch, ours);
      if (hint.empty()) hint = fmt::format("; expected one of {}", param_list(sig));
      fail(a.key_loc, fmt::format("{} has no argument '{}'{}", sig.callee, a.key, hint));
    }
    if (b.slots[idx])
      fail(a.key_loc, fmt::format("argument '{}' of {} is given twice (first at {}:{})", a.key, sig.callee,
                                  given_at[idx].line, given_at[idx].col));
    given_at[idx] = a.key_loc;
    b.slots[idx] = a.value.get();
  }
  for (size_t i = 0; i < sig.required; ++i) {
    if (b.slots[i]) continue;
    fail(call.loc, fmt::format("{} is missing argument '{}'; it takes {}", sig.callee, sig.params[i], param_list(sig)));
  }
  return b;
}

}  // namespace dnnc::frontend
