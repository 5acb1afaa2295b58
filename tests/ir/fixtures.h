// Hand-built modules shared by the verifier, text and dot tests.
#pragma once
#include "ir/graph.h"

namespace dnnc::ir::test {

/// A small MNIST MLP as the frontend would build it: flatten -> linear -> relu -> linear ->
/// cross_entropy, four weight params, an SGD train config. Verifies.
Module mlp_module();

/// A module that exercises the text form: every param role, nhwc and col_major layouts,
/// multi-output nodes (batchnorm2d, dropout, sgd_update, adam_update), updates, names with dots,
/// a quoted name, unknown locs, optimizer attrs of every kind. Verifies.
Module rich_module();

}  // namespace dnnc::ir::test
