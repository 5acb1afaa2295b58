// Internal invariants: checks that run in every build (release included), and the error type a
// broken one raises. A user error (a bad model, file or flag) is never reported through this.
//
//   DNNC_CHECK(cond, "what must hold: {}", value)   always on; throws dnnc::InternalError
//   DNNC_EXPENSIVE_CHECK(cond, ...)                  on in builds with DNNC_EXPENSIVE_CHECKS
//                                                    (the sanitizer test build), else compiled out
//
// The component at fault (a pass, a kernel, the lowering of a node) comes from the innermost
// CheckScope on this thread, in the spirit of LLVM's PrettyStackTrace: the pass manager opens one
// per pass, the lowering one per node, the printers one per kernel. The message names it, the
// condition and the source line.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace dnnc {

/// A broken internal invariant: a bug in dnnc, not in the user's input. what() reads
/// "internal compiler error in <component>: <message> [<condition> at <file>:<line>]".
class InternalError : public std::logic_error {
 public:
  InternalError(std::string component, std::string message, std::string where);
  /// The innermost CheckScope when the check failed ("pass fuse", "kernel k3_relu", ...), or
  /// "dnnc" outside any.
  const std::string& component() const { return component_; }
  const std::string& message() const { return message_; }

 private:
  std::string component_, message_;
};

/// Names the component running on this thread while it lives (scopes nest; the innermost wins,
/// and the outer ones are listed after it: "kernel k3_relu (in codegen lowering of train_step)").
class CheckScope {
 public:
  explicit CheckScope(std::string component);
  ~CheckScope();
  CheckScope(const CheckScope&) = delete;
  CheckScope& operator=(const CheckScope&) = delete;
};

/// The CheckScopes open on this thread, innermost last.
const std::vector<std::string>& check_scopes();

/// Whether this build runs DNNC_EXPENSIVE_CHECK (and the verifiers' expensive parts).
#ifdef DNNC_EXPENSIVE_CHECKS
inline constexpr bool kExpensiveChecks = true;
#else
inline constexpr bool kExpensiveChecks = false;
#endif

/// Throws InternalError for the innermost CheckScope. Used by the macros below.
[[noreturn]] void fail_check(const char* condition, const char* file, int line, std::string message);

}  // namespace dnnc

#define DNNC_CHECK(cond, ...)                                                    \
  do {                                                                           \
    if (!(cond)) [[unlikely]]                                                    \
      ::dnnc::fail_check(#cond, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
  } while (0)

#define DNNC_EXPENSIVE_CHECK(cond, ...)                                    \
  do {                                                                     \
    if constexpr (::dnnc::kExpensiveChecks) DNNC_CHECK(cond, __VA_ARGS__); \
  } while (0)

/// Marks a path that must never run (an enum value no case handled).
#define DNNC_UNREACHABLE(...) ::dnnc::fail_check("unreachable", __FILE__, __LINE__, ::fmt::format(__VA_ARGS__))
