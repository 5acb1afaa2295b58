// IDX reader: header parsing and exact-size validation over a plain or gzip byte stream.
#include "runtime/data/idx.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

#include "runtime/data/byte_reader.h"

namespace dnnc::runtime {
namespace {

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  ByteReader r(path);
  auto fail = [&](const std::string& what) { return std::runtime_error(fmt::format("{}: {}", path, what)); };
  const char* kind = r.gzip() ? " (after gunzip)" : "";

  uint8_t head[4];
  size_t got = r.read(head, 4);
  if (got < 4) throw fail(fmt::format("not an IDX file: {} bytes{}, shorter than the 4-byte magic", got, kind));
  IdxArray out;
  out.magic = big_endian_u32(head);
  const int rank = head[3];
  if (head[0] != 0 || head[1] != 0 || head[2] != 0x08 || rank < 1 || rank > 8)
    throw fail(fmt::format("not an unsigned-byte IDX file: magic 0x{:08x}, expected 0x000008NN with rank NN in 1..8",
                           out.magic));

  const uint64_t header_bytes = 4 + 4 * static_cast<uint64_t>(rank);
  uint8_t dims_raw[32];
  got = r.read(dims_raw, 4 * static_cast<size_t>(rank));
  if (got < 4 * static_cast<size_t>(rank))
    throw fail(fmt::format("truncated header: rank {} needs a {}-byte header, the file{} holds {} bytes", rank,
                           header_bytes, kind, 4 + got));
  uint64_t payload = 1;
  for (int i = 0; i < rank; ++i) {
    uint32_t d = big_endian_u32(dims_raw + 4 * i);
    out.dims.push_back(d);
    if (payload != 0 && d > kMaxIdxBytes / payload) {
      throw fail(fmt::format("header claims dims {} (more than {} bytes of data); refusing to read it",
                             fmt::join(out.dims, "x"), kMaxIdxBytes));
    }
    payload *= d;
  }

  const uint64_t expected = header_bytes + payload;
  // A plain file's size can be checked before any allocation.
  if (!r.gzip() && r.file_size() != expected) {
    throw fail(fmt::format("header (dims {}) means {} bytes in all, but the file holds {} bytes",
                           fmt::join(out.dims, "x"), expected, r.file_size()));
  }
  out.data = read_up_to(r, payload);
  if (out.data.size() < payload) {
    throw fail(fmt::format("header (dims {}) means {} bytes in all, but the file{} holds {} bytes",
                           fmt::join(out.dims, "x"), expected, kind, header_bytes + out.data.size()));
  }
  const uint64_t extra = r.skip_rest(kMaxIdxBytes);
  if (extra != 0) {
    throw fail(fmt::format("header (dims {}) means {} bytes in all, but the file{} holds {}{} bytes",
                           fmt::join(out.dims, "x"), expected, kind, extra == kMaxIdxBytes ? "more than " : "",
                           expected + extra));
  }
  return out;
}

}  // namespace dnnc::runtime
