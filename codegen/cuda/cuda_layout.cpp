// The cuda backend's device memory layout (cuda_layout.h).
#include "codegen/cuda/cuda_layout.h"

#include "ir/check.h"

namespace dnnc::codegen {

CudaDeviceLayout cuda_device_layout(const Program& p, const CudaProgram& cp, int64_t workspace_bytes,
                                    int64_t ring_floats) {
  DNNC_CHECK(p.arena.planned, "the cuda layout of {}.{} needs an arena plan", p.module_name, p.graph_name);
  CudaDeviceLayout l;
  l.buffer.assign(p.buffers.size(), -1);
  int64_t off = 0;
  auto take = [&](int64_t bytes) {
    const int64_t at = off;
    off = arena_align(off + bytes);
    return at;
  };
  // Inputs and params: their own places, outside the arena.
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const Buffer& b = p.buffers[i];
    if (b.kind == BufferKind::input || b.kind == BufferKind::param) l.buffer[i] = take(b.bytes());
  }
  l.arena_offset = off;
  l.arena_bytes = p.arena.bytes;
  off += p.arena.bytes;  // (a multiple of kArenaAlign)
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (in_arena(p.buffers[i])) l.buffer[i] = l.arena_offset + p.buffers[i].offset;
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].kind == BufferKind::alias)
      l.buffer[i] = l.buffer[static_cast<size_t>(root_buffer(p, static_cast<int>(i)))] +
                    p.buffers[i].alias_offset * static_cast<int64_t>(scalar_type_bytes(p.buffers[i].dtype));
  // Updates: a param's new value is copied into the param's own buffer if the graph reads it,
  // through a snapshot when the value is a param (so no copy reads an overwritten param).
  for (const auto& [name, src] : p.updates) {
    CudaDeviceLayout::Update u;
    for (size_t i = 0; i < p.buffers.size(); ++i)
      if (p.buffers[i].kind == BufferKind::param && p.buffers[i].value_name == name) u.target = static_cast<int>(i);
    const int root = root_buffer(p, src);
    if (u.target >= 0 && root != u.target && p.buffers[static_cast<size_t>(root)].kind == BufferKind::param)
      u.snapshot = take(p.buffers[static_cast<size_t>(src)].bytes());
    u.home = u.target >= 0 ? l.buffer[static_cast<size_t>(u.target)] : l.buffer[static_cast<size_t>(root)];
    l.updates.push_back(u);
  }
  l.err = take(sizeof(int));
  l.counter = take(sizeof(int64_t));
  l.ring = take(ring_floats * static_cast<int64_t>(sizeof(float)));
  l.workspace = take(workspace_bytes);
  for (const CudaReluMask& m : cp.relu_masks) l.masks.push_back(take(m.bytes()));
  l.bytes = off;
  return l;
}

}  // namespace dnnc::codegen
