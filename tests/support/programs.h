// Shared test helper: a Program of one kernel step, for tests of the printers and the verifier.
#pragma once
#include <map>
#include <string>
#include <utility>

#include "codegen/kir/program.h"

namespace dnnc::test {

/// A program "t.g" whose one step runs `k`, each param bound to a buffer of its own named like
/// it, of its type and element count: an intermediate, or the kind `kinds` gives its name.
inline codegen::Program one_kernel_program(codegen::Kernel k,
                                           const std::map<std::string, codegen::BufferKind>& kinds = {}) {
  codegen::Program p;
  p.module_name = "t";
  p.graph_name = "g";
  for (const codegen::KernelParam& kp : k.params) {
    codegen::Buffer b;
    b.name = kp.name;
    b.dtype = kp.type;
    b.shape = {kp.numel};
    if (auto it = kinds.find(kp.name); it != kinds.end()) b.kind = it->second;
    p.buffers.push_back(b);
  }
  codegen::Step s;
  s.kernel = 0;
  s.comment = {"%y = test_op(%x)"};
  for (size_t i = 0; i < k.params.size(); ++i) s.args.push_back(static_cast<int>(i));
  p.kernels.push_back(std::move(k));
  p.steps.push_back(s);
  return p;
}

}  // namespace dnnc::test
