// Internal to codegen: batchnorm's channel geometry and the pieces of its backward that the fused
// max-pool backward (lower_conv_fused.cpp) runs inside its own channel loop, so the unfused and
// the fused backward compute the same sums and the same dx (lower_norm.cpp).
#pragma once
#include "codegen/lower/lower_ctx.h"

namespace dnnc::codegen {

/// x [B, C, H, W] seen as (B, C, HW), row-major or {nhwc} (then channel c of image b starts at
/// b*HW*C + c and its pixels are C apart).
struct BnGeom {
  int64_t b, c, hw;
  bool nhwc = false;
  int64_t count() const { return b * hw; }
};
/// The geometry of x (value xv) of batchnorm node n; ctx.fail if x is not 4-d or n's
/// activations are in different layouts.
BnGeom bn_geom(const LowerCtx& ctx, const ir::Node& n, ir::ValueId xv);
/// f(index) for every element of channel c, images outer, pixels inner, in both layouts.
void for_channel(KernelBuilder& kb, const BnGeom& g, Expr c, const std::function<void(Expr)>& f);

/// The kernel parameters of a batchnorm2d_backward (dy, x, w, mean, invstd -> dx, dw, db) with
/// dy read from parameter `dy` of the draft.
struct BnBackward {
  BnGeom g;
  int dy = -1, x = -1, w = -1, mean = -1, invstd = -1, dx = -1, dw = -1, db = -1;
};
BnBackward bn_backward_params(LowerCtx& ctx, KernelDraft& d, const ir::Node& n, int dy);

/// Per channel: its mean and invstd, and the two f64 sums the caller accumulates over the
/// channel: sum += dy, dotp += (x - mu) * dy (each term rounded to f32, then widened).
struct BnBackwardSums {
  Expr mu, is, sum, dotp;
};
BnBackwardSums bn_backward_begin(KernelBuilder& kb, const BnBackward& p, Expr c);
/// The terms element i adds to s.sum and s.dotp (f32; the caller widens them).
std::vector<Expr> bn_backward_terms(KernelBuilder& kb, const BnBackward& p, const BnBackwardSums& s, Expr i);
/// From the finished sums: dx of every element of channel c (reading dy and x again), dw, db.
void bn_backward_finish(KernelBuilder& kb, const BnBackward& p, Expr c, const BnBackwardSums& s);

}  // namespace dnnc::codegen
