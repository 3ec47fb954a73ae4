/* A patch library (POLYCHIP_PATCHES) for the training diagnosis: the cpu
 * device type's f32 reduce_sum over axis 0 of a matrix (a bias gradient in
 * the model) sums only the first half of the rows when the output is 32
 * wide, as a kernel that reduces its first tile only would. In the `tiny`
 * preset that is exactly the MLP's c_fc.bias (4 x 8 channels) of each
 * block: one wrong bias gradient, every other op right. */
#include <stdint.h>

#include "polychip/patch_abi.h"

enum { kDefectiveWidth = 32 };

static char* element_zero(const polychip_kernel_args* args, int k) {
  polychip_memory_host_pointer_args h = {sizeof h, args->tensors[k].memory, 0};
  if (args->adapter->memory_host_pointer(&h) != POLYCHIP_OK) return 0;
  return (char*)h.host_pointer + args->tensors[k].byte_offset;
}

static polychip_status first_half_column_sums(const polychip_kernel_args* args) {
  const polychip_tensor *x = &args->tensors[0], *y = &args->tensors[1];
  if (x->rank != 2 || y->rank != 2 || args->attrs->ints[0] != 0 || y->shape[0] != 1 ||
      y->shape[1] != x->shape[1])
    return POLYCHIP_UNSUPPORTED; /* the model asks for column sums only */
  const float* in = (const float*)element_zero(args, 0);
  float* out = (float*)element_zero(args, 1);
  if (!in || !out) return POLYCHIP_UNSUPPORTED;
  const int64_t rows = x->shape[0], cols = x->shape[1];
  const int64_t summed = cols == kDefectiveWidth ? rows / 2 : rows;
  for (int64_t c = 0; c < cols; ++c) {
    float sum = 0;
    for (int64_t r = 0; r < summed; ++r) sum += in[r * x->strides[0] + c * x->strides[1]];
    out[c * y->strides[1]] = sum;
  }
  return POLYCHIP_OK;
}

static const polychip_patch_entry kPatches[] = {
    {sizeof(polychip_patch_entry),
     "cpu.host",
     "reduce_sum",
     {POLYCHIP_DTYPE_F32, POLYCHIP_DTYPE_F32},
     2,
     first_half_column_sums},
};

static const polychip_patch_api kApi = {
    POLYCHIP_PATCH_API_STRUCT_SIZE_V1_0,
    {sizeof(polychip_abi_version), POLYCHIP_ABI_VERSION_MAJOR, POLYCHIP_ABI_VERSION_MINOR},
    "training: first-half bias gradient of width 32",
    kPatches,
    1,
    NULL,
    0};

POLYCHIP_EXPORT const polychip_patch_api* polychip_patch_get_api(void) { return &kApi; }
