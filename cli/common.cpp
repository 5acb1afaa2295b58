// Shared CLI plumbing: loading models and turning exceptions into diagnostics and exit codes.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <new>
#include <sstream>

#include "cli/commands.h"
#include "frontend/frontend.h"
#include "ir/check.h"
#include "ir/parser.h"
#include "ir/verifier.h"

namespace dnnc::cli {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ir::Module load_module(const std::string& path) {
  if (path.size() > 3 && path.ends_with(".ir")) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ir::CompileError(path, {}, "cannot open file");
    return ir::parse_module(read_text(path), path);
  }
  return frontend::compile_file(path);
}

namespace {

// Prints the exception being handled as dnnc reports errors; returns the exit code.
int report_error() {
  try {
    throw;
  } catch (const ir::CompileError& e) {
    std::cerr << ir::format_diagnostic(e, read_text(e.file()));
    return 1;
  } catch (const ir::VerifyError& e) {
    std::cerr << "dnnc: internal error: IR verification failed: " << e.what() << "\n";
    return 3;
  } catch (const InternalError& e) {
    // A broken invariant: dnnc's bug, not the user's. Exit 3 keeps it apart from user errors.
    std::cerr << "dnnc: " << e.what() << "\n"
              << "dnnc: this is a bug in dnnc, not in the model; please report it with the model file and command\n";
    return 3;
  } catch (const std::invalid_argument& e) {
    std::cerr << "dnnc: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "dnnc: error: out of memory (an allocation failed; the model, batch or dataset may be too large for "
                 "this machine)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "dnnc: error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << "dnnc: internal error: an exception of unknown type\n";
    return 3;
  }
}

}  // namespace

int guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (...) {
    // What the command printed so far comes before its error, on a pipe as on a terminal.
    std::cout.flush();
    return report_error();
  }
}

}  // namespace dnnc::cli
