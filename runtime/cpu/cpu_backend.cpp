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

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

class CpuExecutable;
thread_local CpuExecutable* t_poisoning = nullptr;  // the executable whose run is poisoning its arena
void poison_tick(int step);

class CpuExecutable : public Executable {
 public:
  CpuExecutable(codegen::Program prog, JitLibrary lib, ParamStore& params, int threads, bool poison)
      : prog_(std::move(prog)), lib_(std::move(lib)), params_(params), errors_(codegen::program_errors(prog_)),
        poison_(poison) {
    DNNC_CHECK(prog_.arena.planned, "the cpu backend was given {}.{} without an arena plan", prog_.module_name,
               prog_.graph_name);
    run_ = reinterpret_cast<RunFn>(lib_.symbol("dnnc_run"));
    set_tick_ = reinterpret_cast<SetProfilerFn>(lib_.symbol("dnnc_set_profiler"));
    reinterpret_cast<SetThreadsFn>(lib_.symbol("dnnc_set_threads"))(threads);
    // One block for every intermediate and scratch buffer, at the offsets plan-memory chose.
    if (prog_.arena.bytes > 0) {
      auto* block = static_cast<std::byte*>(
          std::aligned_alloc(static_cast<size_t>(codegen::kArenaAlign), static_cast<size_t>(prog_.arena.bytes)));
      if (!block)
        fail(fmt::format("cannot allocate the {}-byte activation arena", prog_.arena.bytes));
      arena_.reset(block);
    }
    ptrs_.assign(prog_.buffers.size(), nullptr);
    for (size_t i = 0; i < prog_.buffers.size(); ++i)
      if (codegen::in_arena(prog_.buffers[i])) ptrs_[i] = arena_.get() + prog_.buffers[i].offset;
    for (const auto& [name, b] : prog_.updates) {
      const Buffer& r = prog_.buffers[static_cast<size_t>(root(b))];
      // An update the generated code wrote straight into the param's storage needs nothing.
      in_place_.push_back(r.kind == BufferKind::param && r.value_name == name);
    }
    if (poison_) {
      // Per step: the arena buffers whose lifetime ends with it (the last step of its time).
      const std::vector<codegen::BufferLife> life = codegen::buffer_lives(prog_);
      const std::vector<int> times = codegen::step_times(prog_);
      dies_after_.resize(prog_.steps.size());
      for (size_t s = 0; s < prog_.steps.size(); ++s) {
        if (prog_.steps[s].with_next) continue;
        for (size_t b = 0; b < prog_.buffers.size(); ++b)
          if (codegen::in_arena(prog_.buffers[b]) && life[b].last == times[s]) dies_after_[s].push_back(static_cast<int>(b));
      }
    }
  }

  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) override {
    bind(inputs);
    int rc = 0;
    if (poison_) {
      if (arena_) std::memset(arena_.get(), 0xFF, static_cast<size_t>(prog_.arena.bytes));
      t_poisoning = this;
      set_tick_(poison_tick);
      rc = run_(ptrs_.data());
      set_tick_(user_tick_);
      t_poisoning = nullptr;
    } else {
      rc = run_(ptrs_.data());
    }
    if (rc != 0) {
      std::string msg = rc > 0 && rc <= static_cast<int>(errors_.size()) ? errors_[static_cast<size_t>(rc - 1)]
                                                                         : fmt::format("error code {}", rc);
      throw std::runtime_error(fmt::format("cpu backend ({}.{}): {}", prog_.module_name, prog_.graph_name, msg));
    }
    std::vector<Tensor> outputs;
    for (int b : prog_.outputs) outputs.push_back(copy_out(b));
    // Updates: snapshot them all first (a param may update another), then store.
    std::vector<Tensor> copies(prog_.updates.size());
    for (size_t i = 0; i < prog_.updates.size(); ++i)
      if (!in_place_[i]) copies[i] = copy_out(prog_.updates[i].second);
    for (size_t i = 0; i < prog_.updates.size(); ++i)
      if (!in_place_[i]) params_.tensors[prog_.updates[i].first] = std::move(copies[i]);
    return outputs;
  }

  int64_t arena_bytes() const override { return prog_.arena.bytes; }
  const std::byte* arena_base() const { return arena_.get(); }
  const void* address(int b) const { return ptrs_.at(static_cast<size_t>(b)); }

  void set_profiler(TickFn tick) {
    user_tick_ = tick;
    set_tick_(tick);
  }
  const codegen::Program& program() const { return prog_; }

  // Checking mode: after step `step`, fill the regions of the buffers that died with it (then
  // tell the profiler, if one is set).
  void poison_after(int step) {
    if (step >= 0 && step < static_cast<int>(dies_after_.size()))
      for (int b : dies_after_[static_cast<size_t>(step)])
        std::memset(ptrs_[static_cast<size_t>(b)], 0xFF,
                    static_cast<size_t>(prog_.buffers[static_cast<size_t>(b)].bytes()));
    if (user_tick_) user_tick_(step);
  }

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

  // Inputs and params are bound where they are; arena buffers were bound once, at construction.
  void bind(const std::map<std::string, Tensor>& inputs) {
    for (size_t i = 0; i < prog_.buffers.size(); ++i) {
      const Buffer& b = prog_.buffers[i];
      if (b.kind == BufferKind::input) {
        auto it = inputs.find(b.value_name);
        if (it == inputs.end()) fail(fmt::format("input '{}' ({}) was not given", b.value_name, type_str(b)));
        check(it->second, b, "input");
        ptrs_[i] = const_cast<void*>(it->second.data());
      } else if (b.kind == BufferKind::param) {
        const Tensor* t = params_.find(b.value_name);
        if (!t) fail(fmt::format("param '{}' ({}) is not in the param store", b.value_name, type_str(b)));
        check(*t, b, "param");
        ptrs_[i] = const_cast<void*>(t->data());
      }
    }
    for (size_t i = 0; i < prog_.buffers.size(); ++i)
      if (prog_.buffers[i].kind == BufferKind::alias)
        ptrs_[i] = static_cast<std::byte*>(ptrs_[static_cast<size_t>(prog_.buffers[i].alias_of)]) +
                   prog_.buffers[i].alias_offset * static_cast<int64_t>(codegen::scalar_type_bytes(prog_.buffers[i].dtype));
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
  SetProfilerFn set_tick_ = nullptr;
  TickFn user_tick_ = nullptr;
  std::unique_ptr<std::byte, FreeDeleter> arena_;  // the activation arena (Program::arena)
  std::vector<void*> ptrs_;
  std::vector<bool> in_place_;  // per update: written into the param's storage by the run
  bool poison_ = false;
  std::vector<std::vector<int>> dies_after_;  // poison mode: per step, the buffers whose life ends there
};

void poison_tick(int step) {
  if (t_poisoning) t_poisoning->poison_after(step);
}

}  // namespace

namespace {

// $DNNC_CPU_GEMM: unset, empty or "auto" (dnnc's own sgemm where the CPU has AVX-512, else
// OpenBLAS) or "openblas" (OpenBLAS everywhere: the generated code is compiled with
// -DDNNC_GEMM_OPENBLAS, which is part of the JIT cache key).
JitOptions with_gemm_choice(JitOptions jit) {
  const char* env = std::getenv("DNNC_CPU_GEMM");
  std::string v = env ? env : "";
  if (v == "openblas")
    jit.flags.push_back("-DDNNC_GEMM_OPENBLAS");
  else if (!v.empty() && v != "auto")
    throw std::invalid_argument(fmt::format("DNNC_CPU_GEMM='{}': expected 'auto' or 'openblas'", v));
  return jit;
}

}  // namespace

CpuBackend::CpuBackend(CpuOptions options)
    : options_(std::move(options)), cache_((options_.jit = with_gemm_choice(options_.jit), options_.jit)) {
  unsigned hw = std::thread::hardware_concurrency();
  threads_ = options_.threads > 0 ? options_.threads : static_cast<int>(hw ? hw : 1);
}

std::unique_ptr<Executable> CpuBackend::compile(const ir::Module& module, const std::string& graph, ParamStore& params,
                                                int64_t batch) {
  const ir::Graph* g = module.graph(graph);
  if (!g) throw std::runtime_error(fmt::format("cpu backend: module {} has no graph '{}'", module.name, graph));
  return compile_program(codegen::lower_graph(module, *g, batch, options_.lower), params);
}

std::vector<std::unique_ptr<Executable>> CpuBackend::compile_all(const ir::Module& module,
                                                                 const std::vector<CompileRequest>& requests,
                                                                 ParamStore& params) {
  std::vector<codegen::Program> progs;
  std::vector<std::pair<std::string, std::string>> sources;
  for (const CompileRequest& r : requests) {
    const ir::Graph* g = module.graph(r.graph);
    if (!g) throw std::runtime_error(fmt::format("cpu backend: module {} has no graph '{}'", module.name, r.graph));
    progs.push_back(codegen::lower_graph(module, *g, r.batch, options_.lower));
    const codegen::Program& p = progs.back();
    sources.emplace_back(codegen::print_program_cpp(p), fmt::format("{}.{} (batch {})", p.module_name, p.graph_name, p.batch));
  }
  std::vector<JitLibrary> libs = cache_.load_all(sources, static_cast<unsigned>(threads_));
  std::vector<std::unique_ptr<Executable>> out;
  for (size_t i = 0; i < progs.size(); ++i)
    out.push_back(std::make_unique<CpuExecutable>(std::move(progs[i]), std::move(libs[i]), params, threads_,
                                                  options_.poison_arena));
  return out;
}

std::unique_ptr<Executable> CpuBackend::compile_program(codegen::Program prog, ParamStore& params) {
  std::string source = codegen::print_program_cpp(prog);
  JitLibrary lib = cache_.load(source, fmt::format("{}.{} (batch {})", prog.module_name, prog.graph_name, prog.batch));
  return std::make_unique<CpuExecutable>(std::move(prog), std::move(lib), params, threads_, options_.poison_arena);
}

bool set_profiler(Executable& exe, TickFn tick) {
  auto* e = dynamic_cast<CpuExecutable*>(&exe);
  if (!e) return false;
  e->set_profiler(tick);
  return true;
}

ArenaView arena_of(const Executable& exe) {
  auto* e = dynamic_cast<const CpuExecutable*>(&exe);
  return e ? ArenaView{e->arena_base(), e->arena_bytes()} : ArenaView{};
}

const void* buffer_address(const Executable& exe, int b) {
  auto* e = dynamic_cast<const CpuExecutable*>(&exe);
  return e ? e->address(b) : nullptr;
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
