// The cpu backend and its Executable: binds inputs, params and owned intermediate buffers to the
// generated `dnnc_run`, copies outputs out and applies the graph's updates to the ParamStore.
#include "runtime/cpu/cpu_backend.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "codegen/cpp/cpp_printer.h"
#include "ir/check.h"
#include "runtime/reference/interpreter.h"

namespace dnnc::runtime::cpu {

namespace {

using codegen::Buffer;
using codegen::BufferKind;

using RunFn = int (*)(void**);
using SetThreadsFn = void (*)(int);
using SetProfilerFn = void (*)(TickFn);

ir::DType dtype_of(codegen::ScalarType t) { return t == codegen::ScalarType::i64 ? ir::DType::i64 : ir::DType::f32; }

std::string type_str(const Buffer& b) {
  return fmt::format("{}[{}]", ir::dtype_name(dtype_of(b.dtype)), fmt::join(b.shape, ","));
}

class CpuExecutable : public Executable {
 public:
  CpuExecutable(codegen::Program prog, JitLibrary lib, ParamStore& params, int threads)
      : prog_(std::move(prog)), lib_(std::move(lib)), params_(params), errors_(codegen::program_errors(prog_)) {
    run_ = reinterpret_cast<RunFn>(lib_.symbol("dnnc_run"));
    reinterpret_cast<SetThreadsFn>(lib_.symbol("dnnc_set_threads"))(threads);
    storage_.resize(prog_.buffers.size());
    ptrs_.assign(prog_.buffers.size(), nullptr);
    // A buffer written by exactly one update, and by nothing else, hands its storage to the
    // param after the run (a swap) instead of being copied.
    std::vector<int> uses(prog_.buffers.size(), 0);
    for (const auto& [name, b] : prog_.updates) ++uses[static_cast<size_t>(root(b))];
    for (const auto& [name, b] : prog_.updates) {
      const Buffer& buf = prog_.buffers[static_cast<size_t>(b)];
      const Buffer& r = prog_.buffers[static_cast<size_t>(root(b))];
      // An update the generated code wrote straight into the param's storage needs nothing.
      in_place_.push_back(r.kind == BufferKind::param && r.value_name == name);
      swap_.push_back(buf.kind == BufferKind::intermediate && uses[static_cast<size_t>(b)] == 1);
    }
  }

  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) override {
    bind(inputs);
    int rc = run_(ptrs_.data());
    if (rc != 0) {
      std::string msg = rc > 0 && rc <= static_cast<int>(errors_.size()) ? errors_[static_cast<size_t>(rc - 1)]
                                                                         : fmt::format("error code {}", rc);
      throw std::runtime_error(fmt::format("cpu backend ({}.{}): {}", prog_.module_name, prog_.graph_name, msg));
    }
    std::vector<Tensor> outputs;
    for (int b : prog_.outputs) outputs.push_back(copy_out(b));
    // Updates: snapshot the copied ones first (a param may update another), then swap.
    std::vector<Tensor> copies(prog_.updates.size());
    for (size_t i = 0; i < prog_.updates.size(); ++i)
      if (!swap_[i] && !in_place_[i]) copies[i] = copy_out(prog_.updates[i].second);
    for (size_t i = 0; i < prog_.updates.size(); ++i) {
      if (in_place_[i]) continue;
      const auto& [name, b] = prog_.updates[i];
      Tensor& dst = params_.tensors[name];
      if (swap_[i])
        std::swap(dst, storage_[static_cast<size_t>(b)]);
      else
        dst = std::move(copies[i]);
    }
    return outputs;
  }

  void set_profiler(TickFn tick) { reinterpret_cast<SetProfilerFn>(lib_.symbol("dnnc_set_profiler"))(tick); }
  const codegen::Program& program() const { return prog_; }

 private:
  int root(int b) const { return codegen::root_buffer(prog_, b); }

  [[noreturn]] void fail(const std::string& msg) const {
    throw std::runtime_error(
        fmt::format("cpu backend ({}.{}, batch {}): {}", prog_.module_name, prog_.graph_name, prog_.batch, msg));
  }

  void check(const Tensor& t, const Buffer& b, const char* what) const {
    if (t.dtype() != dtype_of(b.dtype) || t.shape() != b.shape)
      fail(fmt::format("{} '{}': expected {}, found {}", what, b.value_name, type_str(b), describe(t)));
  }

  void bind(const std::map<std::string, Tensor>& inputs) {
    for (size_t i = 0; i < prog_.buffers.size(); ++i) {
      const Buffer& b = prog_.buffers[i];
      switch (b.kind) {
        case BufferKind::input: {
          auto it = inputs.find(b.value_name);
          if (it == inputs.end()) fail(fmt::format("input '{}' ({}) was not given", b.value_name, type_str(b)));
          check(it->second, b, "input");
          ptrs_[i] = const_cast<void*>(it->second.data());
          break;
        }
        case BufferKind::param: {
          const Tensor* t = params_.find(b.value_name);
          if (!t) fail(fmt::format("param '{}' ({}) is not in the param store", b.value_name, type_str(b)));
          check(*t, b, "param");
          ptrs_[i] = const_cast<void*>(t->data());
          break;
        }
        case BufferKind::intermediate:
        case BufferKind::scratch: {
          Tensor& t = storage_[i];
          if (t.empty() || t.dtype() != dtype_of(b.dtype) || t.shape() != b.shape)
            t = Tensor(dtype_of(b.dtype), b.shape);
          ptrs_[i] = t.data();
          break;
        }
        case BufferKind::alias:
          ptrs_[i] = nullptr;
          break;
      }
    }
    for (size_t i = 0; i < prog_.buffers.size(); ++i)
      if (prog_.buffers[i].kind == BufferKind::alias) ptrs_[i] = ptrs_[static_cast<size_t>(prog_.buffers[i].alias_of)];
  }

  // A copy of buffer b (its own shape) as a Tensor.
  Tensor copy_out(int b) const {
    const Buffer& buf = prog_.buffers[static_cast<size_t>(b)];
    Tensor t(dtype_of(buf.dtype), buf.shape);
    const void* src = ptrs_[static_cast<size_t>(b)];
    DNNC_CHECK(src, "output buffer not bound");
    if (t.nbytes()) std::memcpy(t.data(), src, t.nbytes());
    return t;
  }

  codegen::Program prog_;
  JitLibrary lib_;
  ParamStore& params_;
  std::vector<std::string> errors_;
  RunFn run_ = nullptr;
  std::vector<Tensor> storage_;  // owned intermediate and scratch buffers, by buffer id
  std::vector<void*> ptrs_;
  std::vector<bool> swap_;      // per update
  std::vector<bool> in_place_;  // per update: written into the param's storage by the run
};

}  // namespace

CpuBackend::CpuBackend(CpuOptions options) : options_(std::move(options)), cache_(options_.jit) {
  unsigned hw = std::thread::hardware_concurrency();
  threads_ = options_.threads > 0 ? options_.threads : static_cast<int>(hw ? hw : 1);
}

std::unique_ptr<Executable> CpuBackend::compile(const ir::Module& module, const std::string& graph, ParamStore& params,
                                                int64_t batch) {
  const ir::Graph* g = module.graph(graph);
  if (!g) throw std::runtime_error(fmt::format("cpu backend: module {} has no graph '{}'", module.name, graph));
  codegen::Program prog = codegen::lower_graph(module, *g, batch, options_.lower);
  std::string source = codegen::print_program_cpp(prog);
  JitLibrary lib = cache_.load(source, fmt::format("{}.{} (batch {})", module.name, graph, batch));
  return std::make_unique<CpuExecutable>(std::move(prog), std::move(lib), params, threads_);
}

bool set_profiler(Executable& exe, TickFn tick) {
  auto* e = dynamic_cast<CpuExecutable*>(&exe);
  if (!e) return false;
  e->set_profiler(tick);
  return true;
}

const codegen::Program* program_of(const Executable& exe) {
  auto* e = dynamic_cast<const CpuExecutable*>(&exe);
  return e ? &e->program() : nullptr;
}

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

std::string cpu_backend_unavailable_reason() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && access((dir + "/c++").c_str(), X_OK) == 0) return "";
    start = end + 1;
  }
  return "no C++ compiler ('c++') on PATH";
}

}  // namespace dnnc::runtime::cpu
