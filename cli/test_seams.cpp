// Test seams of the dnnc binary (test_seams.h).
#include "cli/test_seams.h"

#include <chrono>
#include <cstdlib>
#include <thread>

namespace dnnc::cli {

const runtime::SaveHooks* test_save_hooks() {
  static const runtime::SaveHooks hooks = [] {
    runtime::SaveHooks h;
    const char* s = std::getenv("DNNC_TEST_SLOW_SAVE_MS");
    const int ms = s ? std::atoi(s) : 0;
    if (ms > 0) h.halfway = [ms] { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
    return h;
  }();
  return hooks.halfway ? &hooks : nullptr;
}

}  // namespace dnnc::cli
