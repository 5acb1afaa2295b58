// Frontend entry points: read, parse, lower the model, lower the train block.
#include "frontend/frontend.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "frontend/lower.h"
#include "frontend/parser.h"
#include "frontend/train_config.h"

namespace dnnc::frontend {

static constexpr std::streamoff kMaxSourceBytes = 1 << 20;

std::string read_source(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ir::CompileError(path, {}, fmt::format("cannot open file: {}", std::strerror(errno)));
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) throw ir::CompileError(path, {}, "cannot read file (is it a directory?)");
  if (size > kMaxSourceBytes)
    throw ir::CompileError(
        path, {},
        fmt::format("file is too large for a .dnn model: {} bytes, the limit is {} (1 MiB)", size, kMaxSourceBytes));
  in.seekg(0);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ir::CompileError(path, {}, "cannot read file: read error");
  return ss.str();
}

ir::Module compile_source(const std::string& source, const std::string& filename) {
  if (static_cast<std::streamoff>(source.size()) > kMaxSourceBytes)
    throw ir::CompileError(filename, {},
                           fmt::format("source is too large for a .dnn model: {} bytes, the limit is {} (1 MiB)",
                                       source.size(), kMaxSourceBytes));
  ast::File f = parse(source, filename);
  ir::Module m = lower_model(f, filename);
  lower_train(f, m, filename);
  return m;
}

ir::Module compile_file(const std::string& path) { return compile_source(read_source(path), path); }

std::string dump_ast(const std::string& source, const std::string& filename) {
  return dump_ast(parse(source, filename));
}

}  // namespace dnnc::frontend
