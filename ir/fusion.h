// The fusion patterns pass `fuse` forms and codegen lowers, and the roles nodes play in them:
// the contract between the two (one decision, one place). A FusionGroup's kind names its
// pattern; each of its nodes carries its role (Node::role); codegen lowers a group by the
// lowering registered for its kind, reading the roles, and never matches patterns again.
#pragma once
#include <string>
#include <vector>

namespace dnnc::ir::fusion {

// ---- kinds ---------------------------------------------------------------------------------
/// A chain of elementwise/broadcast ops of one shape (one loop nest), then bias-gradient sums of
/// the chain's end.
inline constexpr const char* kElementwise = "elementwise";
/// cross_entropy + the constant dloss + cross_entropy_backward (+ the bias-gradient sum): one
/// pass over the logits.
inline constexpr const char* kSoftmaxXent = "softmax_xent";
/// Every optimizer update of a graph and the step counter's increment.
inline constexpr const char* kMultiTensorUpdate = "multi_tensor_update";
/// `<head>_epilogue`: a head (a GEMM, a convolution, a pooling backward, batchnorm2d(_infer))
/// followed by a chain of elementwise ops on its result (+ a max pool after a conv2d or a
/// batchnorm2d chain), then bias-gradient sums of the chain's end or, after a max-pool
/// backward's chain, the batchnorm2d_backward that takes the chain's end as its dy.
std::string epilogue_kind(const std::string& head_op);
/// The head op of an `<head>_epilogue` kind, or "" if `kind` is not one.
std::string epilogue_head(const std::string& kind);

// ---- roles ---------------------------------------------------------------------------------
inline constexpr const char* kHead = "head";            // the epilogue's head
inline constexpr const char* kChain = "chain";          // a link of an elementwise chain
inline constexpr const char* kPool = "pool";            // the max pool after a conv / batchnorm chain
inline constexpr const char* kBiasGrad = "bias_grad";   // a bias-gradient sum of the chain's end
inline constexpr const char* kNormGrad = "norm_grad";   // batchnorm2d_backward of a pool-backward chain's end
inline constexpr const char* kLoss = "loss";            // cross_entropy
inline constexpr const char* kDloss = "dloss";          // the constant 1 the backward starts from
inline constexpr const char* kLossGrad = "loss_grad";   // cross_entropy_backward
inline constexpr const char* kUpdate = "param_update";  // an optimizer update
inline constexpr const char* kStep = "step";            // the step counter's increment

/// The heads an `<head>_epilogue` group may have.
const std::vector<std::string>& epilogue_heads();

/// True if `kind` is a pattern fuse forms; `why` (if given) says what is wrong otherwise.
bool known_kind(const std::string& kind);

/// The roles a node of a group of `kind` may have (empty for an unknown kind).
std::vector<std::string> roles_of(const std::string& kind);

/// The role the first node of a group of `kind` has (chain, loss, head), or "" where any of the
/// kind's roles may come first (multi_tensor_update).
std::string first_role(const std::string& kind);

}  // namespace dnnc::ir::fusion
