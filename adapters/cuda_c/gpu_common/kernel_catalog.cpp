#include "kernel_catalog.hpp"

#include <algorithm>

#include "../kernels/kernel_abi.h"

namespace polychip::gpu {

namespace {

constexpr CatalogEntry kCatalog[] = {
    {"gemm", Family::kGemm, 0, 0, -1},
    {"add", Family::kBinary, PC_BINARY_ADD, 0, -1},
    {"sub", Family::kBinary, PC_BINARY_SUB, 0, -1},
    {"mul", Family::kBinary, PC_BINARY_MUL, 0, -1},
    {"div", Family::kBinary, PC_BINARY_DIV, 0, -1},
    {"neg", Family::kUnary, PC_UNARY_NEG, 0, -1},
    {"exp", Family::kUnary, PC_UNARY_EXP, 0, -1},
    {"log", Family::kUnary, PC_UNARY_LOG, 0, -1},
    {"sqrt", Family::kUnary, PC_UNARY_SQRT, 0, -1},
    {"rsqrt", Family::kUnary, PC_UNARY_RSQRT, 0, -1},
    {"tanh", Family::kUnary, PC_UNARY_TANH, 0, -1},
    {"sigmoid", Family::kUnary, PC_UNARY_SIGMOID, 0, -1},
    {"relu", Family::kUnary, PC_UNARY_RELU, 0, -1},
    {"gelu", Family::kUnary, PC_UNARY_GELU, 0, -1},
    {"silu", Family::kUnary, PC_UNARY_SILU, 0, -1},
    {"copy", Family::kUnary, PC_UNARY_COPY, 0, -1},
    {"relu_backward", Family::kUnaryBackward, PC_BACKWARD_RELU, 0, -1},
    {"gelu_backward", Family::kUnaryBackward, PC_BACKWARD_GELU, 0, -1},
    {"silu_backward", Family::kUnaryBackward, PC_BACKWARD_SILU, 0, -1},
    {"sigmoid_backward", Family::kUnaryBackward, PC_BACKWARD_SIGMOID, 0, -1},
    {"tanh_backward", Family::kUnaryBackward, PC_BACKWARD_TANH, 0, -1},
    {"cast", Family::kCast, 0, 0, -1},
    {"fill", Family::kFill, 0, 0, -1},
    {"reduce_sum", Family::kReduce, PC_REDUCE_SUM, 0, -1},
    {"reduce_mean", Family::kReduce, PC_REDUCE_MEAN, 0, -1},
    {"reduce_max", Family::kReduce, PC_REDUCE_MAX, 0, -1},
    {"l2_norm", Family::kReduce, PC_REDUCE_L2_NORM, 0, -1},
    {"argmax", Family::kArgmax, 0, 0, 1},
    {"softmax", Family::kSoftmax, PC_SOFTMAX, 0, -1},
    {"log_softmax", Family::kSoftmax, PC_LOG_SOFTMAX, 0, -1},
    {"softmax_backward", Family::kSoftmaxBackward, PC_SOFTMAX, 0, -1},
    {"log_softmax_backward", Family::kSoftmaxBackward, PC_LOG_SOFTMAX, 0, -1},
    {"layernorm", Family::kNorm, 0, 0, -1},
    {"rmsnorm", Family::kNorm, 1, 0, -1},
    {"layernorm_backward", Family::kNormBackward, 0, 0, -1},
    {"rmsnorm_backward", Family::kNormBackward, 1, 0, -1},
    {"cross_entropy", Family::kCrossEntropy, 0, 0, 1},
    {"cross_entropy_backward", Family::kCrossEntropyBackward, 0, 0, 1},
    {"embedding", Family::kEmbedding, 0, 1, 0},
    {"embedding_backward", Family::kEmbeddingBackward, 0, 1, 0},
    {"rotary_embedding", Family::kRotary, 0, 0, -1},
    {"attention", Family::kAttention, 0, 0, -1},
    {"attention_backward", Family::kAttentionBackward, 0, 0, -1},
    {"adamw", Family::kAdamW, 0, 1, -1},
};

std::vector<const char*> bases(Family family) {
  switch (family) {
    case Family::kUnary:
      return {"pc_unary"};
    case Family::kUnaryBackward:
      return {"pc_unary_backward"};
    case Family::kBinary:
      return {"pc_binary"};
    case Family::kFill:
      return {"pc_fill"};
    case Family::kCast:
      return {};
    case Family::kReduce:
      return {"pc_reduce"};
    case Family::kArgmax:
      return {"pc_argmax"};
    case Family::kSoftmax:
      return {"pc_softmax"};
    case Family::kSoftmaxBackward:
      return {"pc_softmax_backward"};
    case Family::kNorm:
      return {"pc_norm_forward"};
    case Family::kNormBackward:
      return {"pc_norm_backward_dx", "pc_norm_backward_params"};
    case Family::kCrossEntropy:
      return {"pc_cross_entropy"};
    case Family::kCrossEntropyBackward:
      return {"pc_cross_entropy_backward"};
    case Family::kEmbedding:
      return {"pc_embedding"};
    case Family::kEmbeddingBackward:
      return {"pc_embedding_backward"};
    case Family::kRotary:
      return {"pc_rotary"};
    case Family::kAttention:
      return {"pc_attention"};
    case Family::kAttentionBackward:
      return {"pc_attention_backward_dq", "pc_attention_backward_dkdv"};
    case Family::kAdamW:
      return {"pc_adamw"};
    case Family::kGemm:
      return {"pc_gemm"};
  }
  return {};
}

}  // namespace

std::span<const CatalogEntry> kernel_catalog() { return kCatalog; }

const CatalogEntry* find_kernel(std::string_view op) {
  for (const auto& e : kCatalog)
    if (op == e.op) return &e;
  return nullptr;
}

bool is_kernel_dtype(polychip_dtype dtype) {
  return std::find(std::begin(kKernelDtypes), std::end(kKernelDtypes), dtype) !=
         std::end(kKernelDtypes);
}

std::string_view kernel_dtype_suffix(polychip_dtype dtype) {
  switch (dtype) {
    case POLYCHIP_DTYPE_F64:
      return "f64";
    case POLYCHIP_DTYPE_F32:
      return "f32";
    case POLYCHIP_DTYPE_F16:
      return "f16";
    case POLYCHIP_DTYPE_BF16:
      return "bf16";
    default:
      return "";
  }
}

std::vector<std::string> kernel_symbols(const CatalogEntry& entry, polychip_dtype dtype) {
  if (entry.family == Family::kCast) return {"pc_cast"};
  std::vector<std::string> out;
  const std::string_view suffix = kernel_dtype_suffix(dtype);
  if (suffix.empty()) return out;
  for (const char* base : bases(entry.family))
    out.push_back(std::string(base) + "_" + std::string(suffix));
  return out;
}

std::vector<std::string> missing_kernel_symbols(std::span<const unsigned char> image) {
  std::vector<std::string> missing;
  for (const CatalogEntry& entry : kernel_catalog())
    for (polychip_dtype dtype : kKernelDtypes)
      for (std::string symbol : kernel_symbols(entry, dtype)) {
        symbol.push_back('\0');  // the whole name, not a prefix of a longer one
        if (std::search(image.begin(), image.end(), symbol.begin(), symbol.end()) == image.end()) {
          symbol.pop_back();
          // Ops of one family share a kernel: name it once.
          if (std::find(missing.begin(), missing.end(), symbol) == missing.end())
            missing.push_back(std::move(symbol));
        }
      }
  return missing;
}

}  // namespace polychip::gpu
