/* A patch library (POLYCHIP_PATCHES) whose exp kernels on the cpu device
 * type support some shapes only: in f16 and f32 they compute exp correctly
 * for inputs of up to 1,000 elements and refuse larger ones as UNSUPPORTED,
 * as a vendor's kernel limited to one tile might. certify must report the
 * pair as partially supported, not pass it silently. */
#include <math.h>
#include <stdint.h>

#include "polychip/patch_abi.h"

enum { kLargestSupported = 1000 };

static void* element_zero(const polychip_kernel_args* args, int k) {
  polychip_memory_host_pointer_args h = {sizeof h, args->tensors[k].memory, 0};
  if (args->adapter->memory_host_pointer(&h) != POLYCHIP_OK) return 0;
  return (char*)h.host_pointer + args->tensors[k].byte_offset;
}

static int64_t element_count(const polychip_tensor* t) {
  int64_t n = 1;
  for (int d = 0; d < t->rank; ++d) n *= t->shape[d];
  return n;
}

/* Offset in elements of the flat (row-major) index i of a strided tensor. */
static int64_t offset_of(const polychip_tensor* t, int64_t i) {
  int64_t offset = 0;
  for (int d = t->rank - 1; d >= 0; --d) {
    offset += (i % t->shape[d]) * t->strides[d];
    i /= t->shape[d];
  }
  return offset;
}

static polychip_status exp_up_to_1000(const polychip_kernel_args* args, int half) {
  const polychip_tensor *x = &args->tensors[0], *y = &args->tensors[1];
  const int64_t n = element_count(x);
  if (n > kLargestSupported) return POLYCHIP_UNSUPPORTED;
  void *in = element_zero(args, 0), *out = element_zero(args, 1);
  if (!in || !out) return POLYCHIP_UNSUPPORTED;
  for (int64_t i = 0; i < n; ++i) {
    if (half)
      ((_Float16*)out)[offset_of(y, i)] = (_Float16)exp((double)((_Float16*)in)[offset_of(x, i)]);
    else
      ((float*)out)[offset_of(y, i)] = (float)exp((double)((float*)in)[offset_of(x, i)]);
  }
  return POLYCHIP_OK;
}

static polychip_status exp_f16(const polychip_kernel_args* args) { return exp_up_to_1000(args, 1); }
static polychip_status exp_f32(const polychip_kernel_args* args) { return exp_up_to_1000(args, 0); }

static const polychip_patch_entry kPatches[] = {
    {sizeof(polychip_patch_entry),
     "cpu.host",
     "exp",
     {POLYCHIP_DTYPE_F16, POLYCHIP_DTYPE_F16},
     2,
     exp_f16},
    {sizeof(polychip_patch_entry),
     "cpu.host",
     "exp",
     {POLYCHIP_DTYPE_F32, POLYCHIP_DTYPE_F32},
     2,
     exp_f32},
};

static const polychip_patch_api kApi = {
    POLYCHIP_PATCH_API_STRUCT_SIZE_V1_0,
    {sizeof(polychip_abi_version), POLYCHIP_ABI_VERSION_MAJOR, POLYCHIP_ABI_VERSION_MINOR},
    "certify shape-refusing exp patches",
    kPatches,
    2,
    NULL,
    0};

POLYCHIP_EXPORT const polychip_patch_api* polychip_patch_get_api(void) { return &kApi; }
