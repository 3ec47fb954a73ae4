/* A patch library (POLYCHIP_PATCHES) that makes sim.faithful misbehave in
 * the two ways certify must survive: its f32 exp aborts the process, its f16
 * exp never returns. Everything else stays faithful. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "polychip/patch_abi.h"

static polychip_status crashing_exp(const polychip_kernel_args* args) {
  (void)args;
  abort();
}

static polychip_status hanging_exp(const polychip_kernel_args* args) {
  (void)args;
  /* A test waiting for the hang to begin names a file to create then. */
  const char* marker = getenv("CERTIFY_TEST_HANG_MARKER");
  if (marker) close(open(marker, O_WRONLY | O_CREAT, 0644));
  for (;;) pause();
  return POLYCHIP_OK;
}

static const polychip_patch_entry kPatches[] = {
    {sizeof(polychip_patch_entry),
     "sim.faithful",
     "exp",
     {POLYCHIP_DTYPE_F32, POLYCHIP_DTYPE_F32},
     2,
     crashing_exp},
    {sizeof(polychip_patch_entry),
     "sim.faithful",
     "exp",
     {POLYCHIP_DTYPE_F16, POLYCHIP_DTYPE_F16},
     2,
     hanging_exp},
};

static const polychip_patch_api kApi = {
    POLYCHIP_PATCH_API_STRUCT_SIZE_V1_0,
    {sizeof(polychip_abi_version), POLYCHIP_ABI_VERSION_MAJOR, POLYCHIP_ABI_VERSION_MINOR},
    "certify crash/hang test patches",
    kPatches,
    2,
    NULL,
    0};

POLYCHIP_EXPORT const polychip_patch_api* polychip_patch_get_api(void) { return &kApi; }
