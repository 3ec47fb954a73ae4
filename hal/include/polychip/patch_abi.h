/* polychip patch ABI: runtime overrides loaded from POLYCHIP_PATCHES.
 *
 * A patch library exports POLYCHIP_PATCH_ENTRY_SYMBOL returning a static
 * polychip_patch_api. It may replace kernels (monkey-patch mode: one op, one
 * device type, optionally one dtype signature) and register in-place hooks
 * (named hook points, keyed by device type). Targets that do not exist are
 * refused loudly: a library named in POLYCHIP_PATCHES that cannot be applied
 * (missing file, no entry symbol, incompatible table, unknown op, device type
 * or hook point) makes Runtime creation fail with that reason, all of the
 * library or nothing of it applied; `polychip info` lists it as refused
 * instead. Every active patch is listed with its origin in reports.
 * Versioning follows adapter_abi.h.
 */
#ifndef POLYCHIP_PATCH_ABI_H_
#define POLYCHIP_PATCH_ABI_H_

#include "polychip/adapter_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define POLYCHIP_PATCH_ENTRY_SYMBOL "polychip_patch_get_api"

typedef struct polychip_hook_args {
  size_t struct_size;
  const char* hook_point;  /* e.g. "train.before_optimizer_step" */
  const char* device_type; /* of the device the framework is running on */
  int32_t device;          /* index within its adapter */
  void* payload;           /* meaning defined by the hook point; may be NULL */
} polychip_hook_args;

typedef polychip_status (*polychip_hook_fn)(const polychip_hook_args* args);

typedef struct polychip_patch_entry {
  size_t struct_size;
  const char* device_type; /* "sim.bf16acc" */
  const char* op;          /* op contract name */
  /* dtype signature as in polychip_kernel_entry; num_dtypes 0 = any dtype */
  polychip_dtype signature[POLYCHIP_MAX_SIGNATURE];
  int32_t num_dtypes;
  polychip_kernel_fn fn;
} polychip_patch_entry;

typedef struct polychip_hook_entry {
  size_t struct_size;
  const char* device_type;
  const char* hook_point;
  polychip_hook_fn fn;
} polychip_hook_entry;

typedef struct polychip_patch_api {
  size_t struct_size;
  polychip_abi_version abi_version;
  const char* patch_name; /* who patched: shown in every report */
  const polychip_patch_entry* patches;
  int32_t num_patches;
  const polychip_hook_entry* hooks;
  int32_t num_hooks;
} polychip_patch_api;

#define POLYCHIP_PATCH_API_STRUCT_SIZE_V1_0 POLYCHIP_STRUCT_SIZE(polychip_patch_api, num_hooks)

typedef const polychip_patch_api* (*polychip_patch_get_api_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* POLYCHIP_PATCH_ABI_H_ */
