// The IDX file format of MNIST (big-endian magic 0x0000 08 RANK, RANK big-endian u32 dims,
// then the unsigned bytes), read plain or gzip-compressed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dnnc::runtime {

struct IdxArray {
  uint32_t magic = 0;           // e.g. 0x00000803: unsigned bytes, rank 3
  std::vector<int64_t> dims;    // as in the header
  std::vector<uint8_t> data;    // prod(dims) bytes, row-major
};

/// The most payload bytes read_idx accepts (MNIST's largest file holds 47 MB).
inline constexpr uint64_t kMaxIdxBytes = uint64_t{1} << 32;

/// Reads an unsigned-byte IDX file (type code 0x08, rank 1..8), plain or gzip (detected by its
/// magic bytes). Checks that the file holds exactly the header plus prod(dims) bytes before
/// trusting the header with an allocation. Throws std::runtime_error naming the file if it cannot
/// be read, the magic is not an unsigned-byte IDX magic, the payload would exceed kMaxIdxBytes,
/// or the data is shorter or longer than the header says (expected vs found bytes).
IdxArray read_idx(const std::string& path);

}  // namespace dnnc::runtime
