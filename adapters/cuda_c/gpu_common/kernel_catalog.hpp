// Which CUDA-C kernel implements each op of the contract, with which op code.
// Kernel symbol names are "<base>_<dtype>" (kernels/*.cu, PC_FOR_EACH_FLOAT),
// except pc_cast which takes both dtypes as arguments.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polychip/adapter_abi.h"

namespace polychip::gpu {

enum class Family {
  kUnary,
  kUnaryBackward,
  kBinary,
  kFill,
  kCast,
  kReduce,
  kArgmax,
  kSoftmax,
  kSoftmaxBackward,
  kNorm,          // layernorm, rmsnorm
  kNormBackward,  // layernorm_backward, rmsnorm_backward
  kCrossEntropy,
  kCrossEntropyBackward,
  kEmbedding,
  kEmbeddingBackward,
  kRotary,
  kAttention,
  kAttentionBackward,
  kAdamW,
  kGemm,
};

struct CatalogEntry {
  const char* op;
  Family family;
  int opcode;        // pc_*_op value, or 1 for the rms variant of the norms
  int dtype_tensor;  // index of the tensor whose dtype selects the kernel
  int index_tensor;  // index of the i32/i64 tensor, -1 if none
};

std::span<const CatalogEntry> kernel_catalog();
// nullptr when no kernel implements `op`.
const CatalogEntry* find_kernel(std::string_view op);

// The compute dtypes the kernels are instantiated for.
inline constexpr polychip_dtype kKernelDtypes[] = {POLYCHIP_DTYPE_F64, POLYCHIP_DTYPE_F32,
                                                   POLYCHIP_DTYPE_F16, POLYCHIP_DTYPE_BF16};
bool is_kernel_dtype(polychip_dtype dtype);
// "f64", "f32", "f16", "bf16"; "" for other dtypes.
std::string_view kernel_dtype_suffix(polychip_dtype dtype);
// The kernel symbols an op launches for compute dtype `dtype`, in launch
// order (e.g. {"pc_norm_backward_dx_f32", "pc_norm_backward_params_f32"}).
std::vector<std::string> kernel_symbols(const CatalogEntry& entry, polychip_dtype dtype);

// The symbols of every catalog kernel, in every kernel dtype, that a compiled
// kernel image (fatbin, code object) does not name: empty when the host can
// launch everything it plans. Each symbol is named once.
std::vector<std::string> missing_kernel_symbols(std::span<const unsigned char> image);

}  // namespace polychip::gpu
