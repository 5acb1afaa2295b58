// The fusion patterns and roles (ir/fusion.h).
#include "ir/fusion.h"

#include <algorithm>

namespace dnnc::ir::fusion {

namespace {
const std::string kEpilogueSuffix = "_epilogue";
}

const std::vector<std::string>& epilogue_heads() {
  static const std::vector<std::string> heads = {
      "linear",  "matmul", "conv2d", "conv2d_backward_input", "maxpool2d_backward", "avgpool2d_backward",
      "batchnorm2d", "batchnorm2d_infer"};
  return heads;
}

std::string epilogue_kind(const std::string& head_op) { return head_op + kEpilogueSuffix; }

std::string epilogue_head(const std::string& kind) {
  if (kind.size() <= kEpilogueSuffix.size() || !kind.ends_with(kEpilogueSuffix)) return "";
  std::string head = kind.substr(0, kind.size() - kEpilogueSuffix.size());
  const auto& heads = epilogue_heads();
  return std::find(heads.begin(), heads.end(), head) != heads.end() ? head : "";
}

bool known_kind(const std::string& kind) { return !roles_of(kind).empty(); }

std::vector<std::string> roles_of(const std::string& kind) {
  if (kind == kElementwise) return {kChain, kBiasGrad};
  if (kind == kSoftmaxXent) return {kLoss, kDloss, kLossGrad, kBiasGrad};
  if (kind == kMultiTensorUpdate) return {kUpdate, kStep};
  if (!epilogue_head(kind).empty()) return {kHead, kChain, kPool, kBiasGrad, kNormGrad};
  return {};
}

std::string first_role(const std::string& kind) {
  if (kind == kElementwise) return kChain;
  if (kind == kSoftmaxXent) return kLoss;
  if (!epilogue_head(kind).empty()) return kHead;
  return "";
}

}  // namespace dnnc::ir::fusion
