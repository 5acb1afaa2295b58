// InternalError and the thread's stack of CheckScopes (ir/check.h).
#include "ir/check.h"

#include <cstring>

namespace dnnc {

namespace {

thread_local std::vector<std::string> g_scopes;

std::string compose(const std::string& component, const std::string& message, const std::string& where) {
  std::string s = "internal compiler error in " + component + ": " + message;
  if (!where.empty()) s += " [" + where + "]";
  return s;
}

// The repository-relative part of a source path: from the first of the top folders in it.
const char* short_path(const char* file) {
  const char* best = nullptr;
  for (const char* dir : {"/ir/", "/frontend/", "/passes/", "/codegen/", "/runtime/", "/cli/", "/tests/", "/bench/"}) {
    const char* p = std::strstr(file, dir);
    if (p && (!best || p < best)) best = p;
  }
  return best ? best + 1 : file;
}

}  // namespace

InternalError::InternalError(std::string component, std::string message, std::string where)
    : std::logic_error(compose(component, message, where)),
      component_(std::move(component)),
      message_(std::move(message)) {}

CheckScope::CheckScope(std::string component) { g_scopes.push_back(std::move(component)); }
CheckScope::~CheckScope() { g_scopes.pop_back(); }

const std::vector<std::string>& check_scopes() { return g_scopes; }

void fail_check(const char* condition, const char* file, int line, std::string message) {
  std::string component = g_scopes.empty() ? std::string("dnnc") : g_scopes.back();
  if (g_scopes.size() > 1) {
    component += " (in ";
    for (size_t i = g_scopes.size() - 1; i-- > 0;) component += g_scopes[i] + (i ? ", in " : ")");
  }
  throw InternalError(std::move(component), std::move(message),
                      fmt::format("{} at {}:{}", condition, short_path(file), line));
}

}  // namespace dnnc
