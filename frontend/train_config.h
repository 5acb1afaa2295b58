// Lowering of the `train` block to ir::TrainConfig (data set, batch, epochs, seed, optimizer
// with every PyTorch default filled in).
#pragma once
#include <string>

#include "frontend/ast.h"
#include "ir/graph.h"

namespace dnnc::frontend {

/// Fills `m.train` from `f.train` (leaves it absent when the file has no train block) and
/// checks the data set against the model's inputs. Throws ir::CompileError for a name that
/// is not the model's, unknown/duplicate/missing settings, ill-typed or out-of-range values,
/// unknown data sets or optimizers, and inputs that do not match the data set.
void lower_train(const ast::File& f, ir::Module& m, const std::string& file);

}  // namespace dnnc::frontend
