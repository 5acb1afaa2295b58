// See emu_program.h.
#include "emu_program.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "codegen/c/c_printer.h"
#include "codegen/cuda/cuda_gemm.h"
#include "tests/support/files.h"

namespace dnnc::test {

namespace fs = std::filesystem;
using codegen::Buffer;
using codegen::BufferKind;
using codegen::ScalarType;

namespace {

size_t elem_bytes(ScalarType t) { return t == ScalarType::i64 || t == ScalarType::u64 || t == ScalarType::f64 ? 8 : 4; }

ir::DType dtype_of(ScalarType t) { return t == ScalarType::i64 ? ir::DType::i64 : ir::DType::f32; }

}  // namespace

std::string compile_for_emulator(const std::string& source, const std::string& cache_dir) {
  const std::string header = DNNC_EMU_HEADER;
  std::string key = fmt::format("{:016x}", std::hash<std::string>{}(source + test::read_file(header)));
  fs::create_directories(cache_dir);
  std::string so = cache_dir + "/" + key + ".so";
  if (fs::exists(so)) return so;
  std::string src = cache_dir + "/" + key + ".cpp", log = cache_dir + "/" + key + ".log";
  std::string tmp = so + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(src, std::ios::binary);
    out << source;
  }
  // -ffp-contract=off: no FMA contraction, so sums round as the reference's do.
  std::string cmd =
      fmt::format("c++ -std=c++17 -O1 -ffp-contract=off -fPIC -shared -w -include '{}' -x c++ '{}' -o '{}' >'{}' 2>&1",
                  header, src, tmp, log);
  if (std::system(cmd.c_str()) != 0)
    throw std::runtime_error(fmt::format("the emulator's compile of {} failed:\n{}", src, test::read_file(log)));
  fs::rename(tmp, so);
  return so;
}

EmuProgram::EmuProgram(codegen::Program p, const std::string& cache_dir, const std::set<codegen::CudaLtAct>& refused,
                       bool reverse)
    : p_(std::move(p)), reverse_(reverse) {
  cp_ = codegen::print_program_cuda(p_);
  // The epilogues as the backend asks for them (plan_gemms), each refused one falling back.
  taken_.assign(p_.steps.size(), codegen::CudaLtAct::none);
  std::vector<bool> mask_written(cp_.relu_masks.size(), false);
  for (size_t i = 0; i < p_.steps.size(); ++i) {
    if (p_.steps[i].kind != codegen::Step::Kind::gemm) continue;
    for (codegen::CudaLtAct a : codegen::cuda_act_fallbacks(codegen::cuda_act_request(cp_, i, mask_written)))
      if (a == codegen::CudaLtAct::none || !refused.count(a)) {
        taken_[i] = a;
        break;
      }
    if (taken_[i] == codegen::CudaLtAct::relu_aux) mask_written[static_cast<size_t>(cp_.step_act[i].mask)] = true;
  }
  ops_ = codegen::cuda_launch_sequence(p_, cp_, taken_);
  for (const codegen::CudaReluMask& m : cp_.relu_masks) masks_.emplace_back(static_cast<size_t>(m.bytes()), 0xA5);
  // One extern "C" wrapper per kernel: arguments as the cuda backend passes them (i64 scalars,
  // buffer pointers, int* dnnc_err, int dnnc_err_base), unpacked from a void* array.
  std::string wrappers;
  for (size_t i = 0; i < cp_.kernels.size(); ++i) {
    const codegen::CudaKernel& k = cp_.kernels[i];
    std::vector<std::string> args;
    size_t j = 0;
    for (size_t s = 0; s < k.scalars.size(); ++s) args.push_back(fmt::format("*(const i64*)a[{}]", j++));
    for (int b : k.args)
      args.push_back(fmt::format("({}*)a[{}]", codegen::c_type_name(p_.buffers.at(static_cast<size_t>(b)).dtype), j++));
    args.push_back(fmt::format("(int*)a[{}]", j++));
    args.push_back(fmt::format("*(const int*)a[{}]", j++));
    wrappers += fmt::format(
        "extern \"C\" __attribute__((visibility(\"default\"))) void dnnc_emu_call_{}(void** a) {{ {}({}); }}\n", i,
        k.name, fmt::join(args, ", "));
  }
  std::string so = compile_for_emulator(cp_.source + "\n" + wrappers, cache_dir);
  lib_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib_) throw std::runtime_error(fmt::format("dlopen {}: {}", so, dlerror()));
  launch_ = reinterpret_cast<LaunchFn>(dlsym(lib_, "dnnc_emu_launch"));
  set_reverse_ = reinterpret_cast<void (*)(int)>(dlsym(lib_, "dnnc_emu_set_reverse"));
  if (!launch_ || !set_reverse_) throw std::runtime_error("the emulator library has no dnnc_emu_launch");
  for (size_t i = 0; i < cp_.kernels.size(); ++i) {
    auto fn = reinterpret_cast<void (*)(void**)>(dlsym(lib_, fmt::format("dnnc_emu_call_{}", i).c_str()));
    if (!fn) throw std::runtime_error("the emulator library has no wrapper for " + cp_.kernels[i].name);
    calls_.push_back(fn);
  }
  layout_ = codegen::cuda_device_layout(p_, cp_, 0, 0);
  block_.reset(static_cast<char*>(std::aligned_alloc(256, static_cast<size_t>(layout_.bytes) + 256)));
  std::memset(block_.get(), 0, static_cast<size_t>(layout_.bytes) + 256);
  // The checking mode: after the last op of the last step of each step time, the buffers whose
  // life ends there.
  const std::vector<codegen::BufferLife> life = codegen::buffer_lives(p_);
  const std::vector<int> times = codegen::step_times(p_);
  std::vector<int> last_op(p_.steps.size(), -1);
  for (size_t i = 0; i < ops_.size(); ++i) {
    const codegen::CudaStreamOp& op = ops_[i];
    const int step =
        op.kind == codegen::CudaStreamOp::Kind::gemm ? op.index : cp_.kernels.at(static_cast<size_t>(op.index)).step;
    last_op.at(static_cast<size_t>(step)) = static_cast<int>(i);
  }
  poison_after_.assign(ops_.size(), {});
  for (size_t st = 0; st < p_.steps.size(); ++st) {
    if (p_.steps[st].with_next || last_op[st] < 0) continue;
    for (size_t b = 0; b < p_.buffers.size(); ++b)
      if (codegen::in_arena(p_.buffers[b]) && life[b].last == times[st])
        poison_after_[static_cast<size_t>(last_op[st])].push_back(static_cast<int>(b));
  }
}

EmuProgram::~EmuProgram() {
  // The library is kept loaded: fiber stacks and statics live in it, and unloading it buys nothing.
}

char* EmuProgram::buf(int b) { return block_.get() + layout_.buffer.at(static_cast<size_t>(b)); }

const char* EmuProgram::address(int b) const { return block_.get() + layout_.buffer.at(static_cast<size_t>(b)); }

void EmuProgram::launch(size_t kernel) {
  const codegen::CudaKernel& k = cp_.kernels.at(kernel);
  std::vector<int64_t> scalars = k.scalars;
  std::vector<void*> values;
  for (int b : k.args) values.push_back(buf(b));
  int base = k.error_base;
  set_reverse_(reverse_ ? 1 : 0);  // (the library is shared by every EmuProgram of one source)
  std::vector<void*> args;
  for (int64_t& s : scalars) args.push_back(&s);
  for (void*& v : values) args.push_back(v);
  args.push_back(&err_);
  args.push_back(&base);
  const char* e =
      launch_(calls_[kernel], args.data(), static_cast<unsigned>(k.launch.grid), static_cast<unsigned>(k.launch.block));
  if (e) throw std::runtime_error(fmt::format("kernel {} ({}): {}", k.name, codegen::cuda_mapping_name(k.mapping), e));
}

// cuBLASLt's D = alpha·op(A)·op(B) + beta·C (+ bias per row of D), column-major, as
// codegen::lt_problem describes the call, then the activation epilogue `act` (cublasLt.h):
// RELU[_AUX][_BIAS]: D = max(D, 0), the AUX bit (row i, column j at bit i + j·ld) set where
// D > 0; DRELU: D where that bit is set, else 0; DRELU_BGRAD: also the bias gradient, the sum
// over D's columns, into BIAS_POINTER (the GEMM's col_sums). Sums in double.
void EmuProgram::gemm(size_t step, codegen::CudaLtAct act) {
  using codegen::CudaLtAct;
  const codegen::GemmCall& g = p_.steps.at(step).gemm;
  codegen::LtProblem lt = codegen::lt_problem(g);
  const bool relu = act == CudaLtAct::relu || act == CudaLtAct::relu_aux;
  const bool drelu = act == CudaLtAct::drelu || act == CudaLtAct::drelu_bgrad;
  const codegen::CudaReluMask* mask = nullptr;
  uint8_t* bits = nullptr;
  if (act == CudaLtAct::relu_aux || drelu) {
    const int m = cp_.step_act.at(step).mask;
    mask = &cp_.relu_masks.at(static_cast<size_t>(m));
    bits = masks_.at(static_cast<size_t>(m)).data();
    if (mask->rows != lt.c.rows || mask->cols != lt.c.cols || lt.c.batch != 1 || lt.matmuls != 1)
      throw std::runtime_error(fmt::format("step {}: the ReLU mask is {}x{}, D is {}x{}", step, mask->rows, mask->cols,
                                           lt.c.rows, lt.c.cols));
  }
  const float* A = reinterpret_cast<const float*>(buf(g.b));  // cuBLASLt's A is our B
  const float* B = reinterpret_cast<const float*>(buf(g.a));
  float* C = reinterpret_cast<float*>(buf(g.c));
  const float* bias = lt.bias_epilogue ? reinterpret_cast<const float*>(buf(g.bias)) : nullptr;
  const int64_t m = lt.c.rows, n = lt.c.cols, k = lt.trans_a ? lt.a.rows : lt.a.cols;
  for (int64_t mm = 0; mm < lt.matmuls; ++mm) {
    const float beta = mm == 0 ? lt.beta_first : 1.0f;
    for (int64_t bt = 0; bt < lt.c.batch; ++bt) {
      const float* a = A + mm * lt.a_step + bt * lt.a.stride;
      const float* b = B + mm * lt.b_step + bt * lt.b.stride;
      float* c = C + bt * lt.c.stride;
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < m; ++i) {
          double s = 0;
          for (int64_t q = 0; q < k; ++q)
            s += static_cast<double>(lt.trans_a ? a[q + i * lt.a.ld] : a[i + q * lt.a.ld]) *
                 (lt.trans_b ? b[j + q * lt.b.ld] : b[q + j * lt.b.ld]);
          float& d = c[i + j * lt.c.ld];
          float v = static_cast<float>(lt.alpha * s) + (beta != 0 ? beta * d : 0.0f);
          if (bias && !drelu) v += bias[i];
          const int64_t bit = i + j * (mask ? mask->ld : 0);
          if (relu) {
            if (act == CudaLtAct::relu_aux) {
              uint8_t& byte = bits[bit / 8];
              byte = static_cast<uint8_t>(v > 0 ? byte | (1u << (bit % 8)) : byte & ~(1u << (bit % 8)));
            }
            v = v > 0 ? v : 0.0f;
          } else if (drelu && !(bits[bit / 8] & (1u << (bit % 8)))) {
            v = 0.0f;
          }
          d = v;
        }
    }
  }
  if (act == CudaLtAct::drelu_bgrad) {
    float* sums = reinterpret_cast<float*>(buf(g.col_sums));
    for (int64_t i = 0; i < lt.c.rows; ++i) {
      double s = 0;
      for (int64_t j = 0; j < lt.c.cols; ++j) s += C[i + j * lt.c.ld];
      sums[i] = static_cast<float>(s);
    }
  }
}

std::vector<runtime::Tensor> EmuProgram::run(const std::map<std::string, runtime::Tensor>& inputs,
                                             runtime::reference::ParamStore& params) {
  for (size_t i = 0; i < p_.buffers.size(); ++i) {
    const Buffer& b = p_.buffers[i];
    const runtime::Tensor* t = nullptr;
    if (b.kind == BufferKind::input) {
      auto it = inputs.find(b.value_name);
      if (it == inputs.end()) throw std::runtime_error("input '" + b.value_name + "' was not given");
      t = &it->second;
    } else if (b.kind == BufferKind::param) {
      t = params.find(b.value_name);
      if (!t) throw std::runtime_error("param '" + b.value_name + "' is not in the param store");
    }
    if (!t) continue;
    if (t->shape() != b.shape || t->dtype() != dtype_of(b.dtype))
      throw std::runtime_error(fmt::format("'{}' is {}", b.value_name, runtime::describe(*t)));
    std::memcpy(buf(static_cast<int>(i)), t->data(), t->nbytes());
  }
  err_ = 0;
  std::memset(block_.get() + layout_.arena_offset, 0xFF, static_cast<size_t>(layout_.arena_bytes));
  for (size_t i = 0; i < ops_.size(); ++i) {
    const codegen::CudaStreamOp& op = ops_[i];
    if (op.kind == codegen::CudaStreamOp::Kind::kernel)
      launch(static_cast<size_t>(op.index));
    else if (err_ == 0)  // (a GEMM does not look at the error flag; after a failure its inputs may be garbage)
      gemm(static_cast<size_t>(op.index), op.act);
    for (int b : poison_after_[i])
      std::memset(buf(b), 0xFF, static_cast<size_t>(p_.buffers[static_cast<size_t>(b)].bytes()));
  }
  if (err_ != 0) {
    std::vector<std::string> errors = codegen::program_errors(p_);
    throw std::runtime_error(err_ > 0 && err_ <= static_cast<int>(errors.size()) ? errors[static_cast<size_t>(err_ - 1)]
                                                                                 : fmt::format("error code {}", err_));
  }
  auto read = [&](int b) {
    const Buffer& buffer = p_.buffers.at(static_cast<size_t>(b));
    runtime::Tensor t(dtype_of(buffer.dtype), buffer.shape);
    std::memcpy(t.data(), buf(b), t.nbytes());
    return t;
  };
  std::vector<runtime::Tensor> outputs;
  for (int b : p_.outputs) outputs.push_back(read(b));
  std::vector<runtime::Tensor> updated;
  for (const auto& [name, b] : p_.updates) updated.push_back(read(b));
  for (size_t u = 0; u < p_.updates.size(); ++u) params.tensors[p_.updates[u].first] = std::move(updated[u]);
  return outputs;
}

}  // namespace dnnc::test
