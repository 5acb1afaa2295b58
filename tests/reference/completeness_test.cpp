// Every op in the registry has a reference kernel, and every reference kernel is a registered op.
#include <catch2/catch.hpp>

#include "ir/op_registry.h"
#include "runtime/reference/kernel_table.h"

using namespace dnnc;

TEST_CASE("every registered op has a reference kernel", "[reference][completeness]") {
  REQUIRE(!ir::all_ops().empty());
  for (const ir::OpDef* op : ir::all_ops()) {
    INFO("op " << op->name);
    CHECK(runtime::reference::has_reference_kernel(op->name));
  }
}

TEST_CASE("every reference kernel belongs to a registered op", "[reference][completeness]") {
  for (const auto& [name, kernel] : runtime::reference::reference_kernels()) {
    INFO("kernel " << name);
    CHECK(ir::find_op(name) != nullptr);
  }
}
