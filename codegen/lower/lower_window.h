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

/// Loops over the kernel taps (ki, kj) and the output cells whose input pixel is inside;
/// per_tap(ki, kj) first (may be null), then f(ki, kj, oh, ow, ih, iw) for each such cell.
void for_each_tap(KernelBuilder& kb, const ConvGeom& g, const std::function<void(Expr, Expr)>& per_tap,
                  const std::function<void(Expr, Expr, Expr, Expr, Expr, Expr)>& f);

/// for_each_tap with the weight of each tap of (out channel o, in-channel-of-group cw) in a local
/// read once per tap: f(oh, ow, ih, iw, weight) for each cell the tap reaches.
void for_each_weighted_tap(KernelBuilder& kb, const ConvGeom& g, int w, Expr o, Expr cw,
                           const std::function<void(Expr, Expr, Expr, Expr, Expr)>& f);

/// Whether conv g runs as direct loops (grouped, or a small kernel; lower_conv.cpp) rather than
/// im2col / col2im around GEMMs.
bool use_direct(const LowerCtx& ctx, const ConvGeom& g);
/// Images per chunk of the im2col / col2im lowerings: the chunk's columns fit in
/// LowerOptions::conv_columns_bytes (the whole batch if they all do).
int64_t images_per_chunk(const LowerCtx& ctx, const ConvGeom& g);
/// How a batched GEMM of a convolution spreads over the threads.
GemmCall::Threads batch_threads(const LowerCtx& ctx, const GemmCall& c);
struct Chain;
/// conv2d through im2col and GEMMs (chunks of images, one GEMM per image); with a non-empty
/// `chain` (of nodes that follow n, its result read by nothing else: lower_conv_fused.cpp), the
/// chain runs as each GEMM's epilogue, in place on the image's output while it is in cache, and
/// the GEMMs write the chain's end value's buffer.
void lower_conv2d_im2col(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g, const Chain* chain);
/// conv2d_backward_input on its own (lower_conv_backward_input.cpp).
void lower_conv2d_backward_input(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a);

/// Whether a convolution's activations `a` and `b` (x and y, dy and dx, dy and x) are {nhwc}
/// (lower_conv_nhwc.cpp); fails if only one is, or if the convolution is grouped.
bool conv_nhwc(const LowerCtx& ctx, const ir::Node& n, const ConvGeom& g, ir::ValueId a, ir::ValueId b);
/// The {nhwc} convolutions: GEMMs over every pixel of the batch (lower_conv_nhwc.cpp).
void lower_conv2d_nhwc(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g);
void lower_conv2d_backward_input_nhwc(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g);
void lower_conv2d_backward_weight_nhwc(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g);

/// for (ow = 0; ow < n; ++ow) f(ow, lo), in chunks of exactly 16 (one 512-bit vector of f32)
/// when n > 16 is not a multiple of 16: the compiler then vectorizes each chunk with no scalar
/// tail. The last chunk starts at n - 16 and overlaps the one before: a body with side effects
/// beyond idempotent stores must ignore ow < lo (lo is null when chunks do not overlap).
/// For direct loops over a padded convolution with a small kernel: emits a kernel copying x
/// (buffer `x`, [B,C,H,W]) into a scratch [B, C, H+2p0, W+2p1] with the padding as explicit
/// zeros; returns that buffer and sets *unpadded to the same convolution over it without padding
/// (so the unrolled, register-accumulating loops apply and every row vectorizes).
int emit_padded_input(LowerCtx& ctx, const ConvGeom& g, int x, const std::string& x_name, ConvGeom* unpadded);
void vector_chunks(KernelBuilder& kb, const std::string& base, int64_t n, const std::function<void(Expr, Expr)>& f);

/// How a 4-d activation [B, C, H, W] is addressed by (b, c) plane: element (b, c, h, w) is at
/// plane(bc) + (h * W + w) * pixel, with bc = b * C + c. Row-major (NCHW): planes are
/// contiguous, pixel 1; {nhwc}: plane(bc) = b * H*W*C + c, pixel C. Loops over planes and
/// pixels in the same order in both layouts sum in the same order, so both give the same bits.
struct PlaneMap {
  int64_t c = 1, hw = 1;
  bool nhwc = false;
  int64_t pixel() const { return nhwc ? c : 1; }
  /// The offset of plane bc (a let named `name`).
  Expr plane(KernelBuilder& kb, const std::string& name, Expr bc) const;
};
PlaneMap plane_map(const LowerCtx& ctx, ir::ValueId v);
/// e * k, or e itself for k == 1 (the builders do not fold a multiplication by one).
inline Expr times(Expr e, int64_t k) { return k == 1 ? e : e * i64c(k); }
/// The address of pixel (row, col) of a plane at `base` with `width` columns, pixels `pixel`
/// apart (for pixel 1 the row-major form base + row * width + col).
inline Expr pixel_at(Expr base, Expr row, int64_t width, Expr col, int64_t pixel) {
  return pixel == 1 ? base + row * i64c(width) + col : base + (row * i64c(width) + col) * i64c(pixel);
}

struct PoolGeom {
  int64_t bc, h, w, ho, wo, k0, k1, s0, s1, p0, p1;
};
/// x [B,C,H,W] pooled to y [B,C,Ho,Wo].
PoolGeom pool_geom(const LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a, const Dims& x, const Dims& y);
/// The first maximum of the window of (oh, ow) in the plane of x at xbase, pixels `pixel` apart
/// (a NaN counts as a new maximum): its pixel index within the plane (ih * W + iw); its value in
/// *value if given.
/// Max pooling of one NCHW plane (x at xbase, y at ybase): unpadded windows (always inside the
/// plane) unrolled into selects so the loop over output columns vectorizes; padded ones through
/// window_argmax. The reference's result: the first maximum, NaN propagating. Output rows
/// [ph_begin, ph_end) if given, else all.
void maxpool_plane(KernelBuilder& kb, const PoolGeom& g, int x, Expr xbase, int y, Expr ybase, Expr ph_begin = {},
                   Expr ph_end = {});
Expr window_argmax(KernelBuilder& kb, int x, const PoolGeom& g, Expr xbase, Expr oh, Expr ow, Expr* value,
                   int64_t pixel = 1);

}  // namespace dnnc::codegen
