// The bodies of dnnc's fuzz targets: each takes one input's bytes, feeds them to one parser or
// loader and aborts (via assert-like checks that survive NDEBUG) if the input is mishandled.
// The libFuzzer mains (fuzz_main.cpp) and the corpus replay test (replay_test.cpp) share them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dnnc::fuzz {

/// One target: its name (the corpus folder tests/fuzz/corpus/<name>/) and its entry point.
struct Target {
  const char* name;
  void (*run)(const uint8_t* data, size_t size);
};

/// .dnn source -> frontend::compile_source. A user error must be an ir::CompileError whose
/// location lies inside the source (format_diagnostic is exercised on it); a model that compiles
/// must pass ir::verify. Anything else (another exception type, a crash) aborts.
void run_dnn(const uint8_t* data, size_t size);

/// IR text -> ir::parse_module. Malformed text must be an ir::CompileError. A parsed module that
/// verifies must print, parse back and print again to the same text (the lossless text form).
void run_ir(const uint8_t* data, size_t size);

/// Bytes as a file -> read_safetensors_file. A bad file must be a std::runtime_error; a good one
/// must yield tensors whose sizes add up to the file's data section.
void run_safetensors(const uint8_t* data, size_t size);

/// Bytes as a file -> read_idx (plain or gzip). A bad file must be a std::runtime_error; a good
/// one must hold exactly prod(dims) bytes.
void run_idx(const uint8_t* data, size_t size);

/// Bytes as a file -> append_cifar10_file. A bad file must be a std::runtime_error; a good one
/// must give records of 3x32x32 pixels with labels in 0..9.
void run_cifar(const uint8_t* data, size_t size);

/// All targets, in the order scripts/fuzz.sh runs them.
const std::vector<Target>& all_targets();

/// Names the input being replayed, for finding()'s message (the replay test sets it; empty: none).
void set_current_input(const std::string& name);

/// Aborts with `what` on stderr: a fuzz finding (survives NDEBUG, unlike assert).
[[noreturn]] void finding(const std::string& what);

}  // namespace dnnc::fuzz
