// Internal to codegen: geometry of convolutions and pooling windows, shared by the per-node
// lowerings (lower_conv.cpp, lower_pool.cpp) and the fused conv/pool lowerings (lower_conv_fused.cpp).
#pragma once
#include "codegen/lower/lower_ctx.h"

namespace dnnc::codegen {

struct ConvGeom {
  int64_t b, c, h, w, o, cg, og, kh, kw, ho, wo, groups;
  int64_t s0, s1, p0, p1, d0, d1;
  int64_t k() const { return cg * kh * kw; }  // im2col rows (one group)
  int64_t p() const { return ho * wo; }       // im2col columns
};
/// x [B,C,H,W], weight [O,C/groups,kh,kw], y [B,O,Ho,Wo] (fails on a mismatch).
ConvGeom conv_geom(const LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a, const Dims& x, const Dims& w,
                   const Dims& y);
/// The output rows (or columns) whose input row ih = o*s - p + k*d lies in [0, in), for a kernel
/// offset k given as an expression in [0, kmax).
std::pair<Expr, Expr> valid_range(Expr k, int64_t kmax, int64_t s, int64_t p, int64_t d, int64_t in, int64_t out);

/// for (ow = 0; ow < n; ++ow) f(ow, lo), in chunks of exactly 16 (one 512-bit vector of f32)
/// when n > 16 is not a multiple of 16: the compiler then vectorizes each chunk with no scalar
/// tail. The last chunk starts at n - 16 and overlaps the one before: a body with side effects
/// beyond idempotent stores must ignore ow < lo (lo is null when chunks do not overlap).
void vector_chunks(KernelBuilder& kb, const std::string& base, int64_t n, const std::function<void(Expr, Expr)>& f);

struct PoolGeom {
  int64_t bc, h, w, ho, wo, k0, k1, s0, s1, p0, p1;
};
/// x [B,C,H,W] pooled to y [B,C,Ho,Wo].
PoolGeom pool_geom(const LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a, const Dims& x, const Dims& y);
/// The first maximum of the window of (oh, ow) in the plane of x at xbase (a NaN counts as a new
/// maximum): its index within the plane; its value in *value if given.
Expr window_argmax(KernelBuilder& kb, int x, const PoolGeom& g, Expr xbase, Expr oh, Expr ow, Expr* value);

}  // namespace dnnc::codegen
