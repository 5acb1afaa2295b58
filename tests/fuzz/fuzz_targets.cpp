// Fuzz target bodies (see fuzz_targets.h). File readers get their input through a memfd, so
// fuzzing touches no disk and the reader sees a real path (/proc/self/fd/N).
#include "tests/fuzz/fuzz_targets.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "frontend/frontend.h"
#include "ir/diagnostic.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/data/cifar10.h"
#include "runtime/data/idx.h"

namespace dnnc::fuzz {
namespace {

// An in-memory file holding the current input, named by a path any reader can open.
class MemFile {
 public:
  MemFile() {
    fd_ = ::memfd_create("dnnc-fuzz", MFD_CLOEXEC);
    if (fd_ < 0) finding("memfd_create failed");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  const std::string& set(const uint8_t* data, size_t size) {
    if (::ftruncate(fd_, 0) != 0) finding("ftruncate failed");
    size_t done = 0;
    while (done < size) {
      ssize_t w = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (w <= 0) finding("pwrite to the memfd failed");
      done += static_cast<size_t>(w);
    }
    return path_;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

std::string& current_input() {
  static std::string name;
  return name;
}

MemFile& mem_file() {
  static MemFile f;  // one per process; libFuzzer runs inputs one at a time
  return f;
}

std::string as_string(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A diagnostic must point into the source (or nowhere): a caret past the text is a bug.
void check_diagnostic(const ir::CompileError& e, const std::string& source) {
  const ir::SourceLoc loc = e.loc();
  if (loc.line < 0 || loc.col < 0) finding("diagnostic with a negative location: " + std::string(e.what()));
  if (loc.known()) {
    int lines = 1;
    for (char c : source) lines += c == '\n';
    if (loc.line > lines) finding("diagnostic line past the end of the source: " + std::string(e.what()));
  }
  if (e.message().empty()) finding("diagnostic without a message");
  (void)ir::format_diagnostic(e, source);
}

}  // namespace

void set_current_input(const std::string& name) { current_input() = name; }

void finding(const std::string& what) {
  if (!current_input().empty()) std::fprintf(stderr, "dnnc fuzz: input %s\n", current_input().c_str());
  std::fprintf(stderr, "dnnc fuzz finding: %s\n", what.c_str());
  std::abort();
}

void run_dnn(const uint8_t* data, size_t size) {
  const std::string source = as_string(data, size);
  ir::Module m;
  try {
    m = frontend::compile_source(source, "fuzz.dnn");
  } catch (const ir::CompileError& e) {
    check_diagnostic(e, source);
    return;
  }
  try {
    ir::verify(m);
  } catch (const ir::VerifyError& e) {
    finding(std::string("the frontend produced a module that does not verify: ") + e.what());
  }
}

void run_ir(const uint8_t* data, size_t size) {
  const std::string text = as_string(data, size);
  ir::Module m;
  try {
    m = ir::parse_module(text, "fuzz.ir");
  } catch (const ir::CompileError& e) {
    check_diagnostic(e, text);
    return;
  }
  try {
    ir::verify(m);
  } catch (const ir::VerifyError&) {
    return;  // parse_module does not promise valid IR; verify's rejection is the answer
  }
  const std::string printed = ir::print(m);
  ir::Module again;
  try {
    again = ir::parse_module(printed, "printed.ir");
  } catch (const ir::CompileError& e) {
    finding("the printed form of a verified module does not parse: " + std::string(e.what()) + "\n" + printed);
  }
  if (ir::print(again) != printed) finding("print(parse(print(m))) != print(m) for:\n" + printed);
}

void run_safetensors(const uint8_t* data, size_t size) {
  const std::string& path = mem_file().set(data, size);
  runtime::SafetensorsFile f;
  try {
    f = runtime::read_safetensors_file(path);
  } catch (const std::runtime_error&) {
    return;
  }
  // A file that reads must be exactly: 8 + header + the tensors' bytes.
  if (size < 8) finding("read_safetensors_file accepted a file under 8 bytes");
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = (header << 8) | data[i];
  uint64_t total = 0;
  for (const auto& [name, t] : f.tensors) total += t.nbytes();
  if (8 + header + total != size) finding("read_safetensors_file accepted bytes that belong to no tensor");
}

void run_idx(const uint8_t* data, size_t size) {
  const std::string& path = mem_file().set(data, size);
  runtime::IdxArray a;
  try {
    a = runtime::read_idx(path);
  } catch (const std::runtime_error&) {
    return;
  }
  uint64_t n = 1;
  for (int64_t d : a.dims) n *= static_cast<uint64_t>(d);
  if (a.dims.empty() || a.dims.size() > 8) finding("read_idx accepted a rank outside 1..8");
  if (a.data.size() != n) finding("read_idx returned a payload that differs from prod(dims)");
}

void run_cifar(const uint8_t* data, size_t size) {
  const std::string& path = mem_file().set(data, size);
  runtime::Dataset ds;
  try {
    runtime::append_cifar10_file(ds, path);
  } catch (const std::runtime_error&) {
    return;
  }
  if (ds.c != 3 || ds.h != 32 || ds.w != 32) finding("append_cifar10_file gave images that are not 3x32x32");
  if (static_cast<int64_t>(ds.labels.size()) != ds.n || static_cast<int64_t>(ds.images.size()) != ds.n * 3072)
    finding("append_cifar10_file gave inconsistent counts");
  for (int64_t l : ds.labels)
    if (l < 0 || l >= ds.num_classes) finding("append_cifar10_file accepted a label outside 0..9");
}

const std::vector<Target>& all_targets() {
  static const std::vector<Target> targets = {
      {"dnn", run_dnn}, {"ir", run_ir}, {"safetensors", run_safetensors}, {"idx", run_idx}, {"cifar", run_cifar},
  };
  return targets;
}

}  // namespace dnnc::fuzz
