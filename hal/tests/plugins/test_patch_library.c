/* A patch library: replaces `neg` (f32) on the cpu device type with a kernel
 * that computes -x (so tests can tell it ran: it also counts its calls) and
 * hooks "train.before_optimizer_step" for cpu.host. With
 * TEST_PATCH_BAD_TARGET it targets a device type that does not exist. */
#include <stdint.h>

#include "polychip/patch_abi.h"

static int64_t neg_calls;
POLYCHIP_EXPORT int64_t test_patch_neg_calls(void) { return neg_calls; }

/* The cpu adapter's memory handle starts with its host pointer; a real
 * patch would use args->adapter->memory_host_pointer, as this one does. */
static polychip_status patched_neg(const polychip_kernel_args* args) {
  const polychip_tensor* x = &args->tensors[0];
  const polychip_tensor* y = &args->tensors[1];
  polychip_memory_host_pointer_args hx = {sizeof hx, x->memory, 0};
  polychip_memory_host_pointer_args hy = {sizeof hy, y->memory, 0};
  polychip_status st = args->adapter->memory_host_pointer(&hx);
  if (st) return st;
  st = args->adapter->memory_host_pointer(&hy);
  if (st) return st;
  int64_t n = 1;
  for (int d = 0; d < x->rank; ++d) n *= x->shape[d];
  const float* in = (const float*)((const char*)hx.host_pointer + x->byte_offset);
  float* out = (float*)((char*)hy.host_pointer + y->byte_offset);
  for (int64_t i = 0; i < n; ++i) out[i] = -in[i]; /* contiguous in the tests */
  ++neg_calls;
  return POLYCHIP_OK;
}

static polychip_status before_step(const polychip_hook_args* args) {
  ++*(int64_t*)args->payload;
  return POLYCHIP_OK;
}

#ifdef TEST_PATCH_BAD_TARGET
#define TARGET "nosuch.device"
#else
#define TARGET "cpu.host"
#endif

/* TEST_PATCH_EDITABLE: tests rewrite the entries (malformed ones included)
 * through test_patch_entries before loading the library. */
#ifdef TEST_PATCH_EDITABLE
#define ENTRY_CONST
#else
#define ENTRY_CONST const
#endif

// clang-format off
static ENTRY_CONST polychip_patch_entry patches[] = {
    {sizeof(polychip_patch_entry), TARGET, "neg", {POLYCHIP_DTYPE_F32, POLYCHIP_DTYPE_F32}, 2,
     patched_neg}};
// clang-format on
static ENTRY_CONST polychip_hook_entry hooks[] = {
    {sizeof(polychip_hook_entry), "cpu.host", "train.before_optimizer_step", before_step}};

static const polychip_patch_api api = {
    POLYCHIP_PATCH_API_STRUCT_SIZE_V1_0,
    {sizeof(polychip_abi_version), POLYCHIP_ABI_VERSION_MAJOR, POLYCHIP_ABI_VERSION_MINOR},
    "test-vendor-patch",
    patches,
    1,
    hooks,
    1};

POLYCHIP_EXPORT const polychip_patch_api* polychip_patch_get_api(void) { return &api; }

#ifdef TEST_PATCH_EDITABLE
POLYCHIP_EXPORT void test_patch_entries(polychip_patch_entry** patch, polychip_hook_entry** hook) {
  *patch = &patches[0];
  *hook = &hooks[0];
}
#endif
