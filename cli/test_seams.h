// Test seams of the dnnc binary: fault injection that tests drive through the environment.
// Nothing here is for users; the library takes these hooks as explicit parameters
// (runtime::SaveHooks) and reads no environment variable itself.
#pragma once
#include "runtime/checkpoint/safetensors.h"

namespace dnnc::cli {

/// With $DNNC_TEST_SLOW_SAVE_MS=N (N > 0), hooks that pause every checkpoint save for N ms
/// halfway through its tensor data, so tests/trainer/fault_test.cpp can SIGKILL the writer
/// while a partial temporary file exists (docs/reliability.md). nullptr when unset.
const runtime::SaveHooks* test_save_hooks();

}  // namespace dnnc::cli
