// Registers Catch2 test cases at static-initialisation time from data found on disk (one test
// per golden file), through Catch2 v2's public registration API (what REGISTER_TEST_CASE uses).
#pragma once
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <utility>

namespace dnnc::golden {

/// A Catch2 test body that is a std::function (so it can capture the golden file's path).
class FunctionInvoker : public Catch::ITestInvoker {
 public:
  explicit FunctionInvoker(std::function<void()> body) : body_(std::move(body)) {}
  void invoke() const override { body_(); }

 private:
  std::function<void()> body_;
};

/// Registers a test case `name` with `tags` (e.g. "[golden][op]") reported at `where` (pass
/// CATCH_INTERNAL_LINEINFO). Catch copies the strings and owns the invoker. Call it only during
/// static initialisation (before Catch's session starts).
inline void register_test(const Catch::SourceLineInfo& where, const std::string& name, const std::string& tags,
                          std::function<void()> body) {
  Catch::AutoReg(new FunctionInvoker(std::move(body)), where, Catch::StringRef(), Catch::NameAndTags{name, tags});
}

}  // namespace dnnc::golden
