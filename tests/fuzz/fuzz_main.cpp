// libFuzzer entry point for one target, chosen at compile time by DNNC_FUZZ_TARGET (a function
// of fuzz_targets.h). Built only with -DDNNC_FUZZ=ON (clang, -fsanitize=fuzzer).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dnnc::fuzz::DNNC_FUZZ_TARGET(data, size);
  return 0;
}
