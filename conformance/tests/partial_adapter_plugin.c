/* An adapter plugin (POLYCHIP_ADAPTER_PATH) for certify's tests: the cpu
 * adapter's own functions under another name, made incomplete in one of two
 * ways chosen at build time:
 *  - PARTIAL_NO_GEMM: its kernel table leaves out gemm (a chip without a
 *    matrix engine), so every gemm case is NotSupported;
 *  - PARTIAL_NO_DEVICES: it reports no device, with its own reason (a
 *    missing vendor driver). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "polychip/adapter_abi.h"

#define DEVICE_TYPE PARTIAL_ADAPTER_NAME ".host"

static const polychip_adapter_api* cpu(void) {
  static const polychip_adapter_api* api;
  if (!api) {
    polychip_adapter_get_api_fn get =
        (polychip_adapter_get_api_fn)dlsym(RTLD_DEFAULT, "polychip_cpu_adapter_get_api");
    api = get ? get() : NULL;
  }
  return api;
}

static const char* last_error_message(void) {
  return cpu() ? cpu()->last_error_message() : "the cpu adapter is not loaded";
}

static polychip_status device_count(polychip_device_count_args* args) {
#ifdef PARTIAL_NO_DEVICES
  args->count = 0;
  args->unavailable_reason = "libpartial-driver.so.1 not found (test adapter without devices)";
  return POLYCHIP_OK;
#else
  return cpu() ? cpu()->device_count(args) : POLYCHIP_UNAVAILABLE;
#endif
}

static polychip_status device_properties(polychip_device_properties_args* args) {
  polychip_status s = cpu()->device_properties(args);
  if (s == POLYCHIP_OK)
    snprintf(args->properties->device_type, sizeof args->properties->device_type, "%s",
             DEVICE_TYPE);
  return s;
}

static polychip_status kernel_table(polychip_kernel_table_args* args) {
  static polychip_kernel_entry kept[1024];
  static int32_t num_kept = -1;
  polychip_status s = cpu()->kernel_table(args);
  if (s != POLYCHIP_OK) return s;
  if (num_kept < 0) {
    num_kept = 0;
    for (int32_t i = 0; i < args->num_entries && num_kept < 1024; ++i)
      if (strcmp(args->entries[i].op, "gemm") != 0) kept[num_kept++] = args->entries[i];
  }
  args->entries = kept;
  args->num_entries = num_kept;
  return POLYCHIP_OK;
}

POLYCHIP_EXPORT const polychip_adapter_api* polychip_adapter_get_api(void) {
  static polychip_adapter_api api;
  if (!cpu()) return NULL;
  api = *cpu();
  api.name = PARTIAL_ADAPTER_NAME;
  api.vendor = "polychip-tests";
  api.last_error_message = last_error_message;
  api.device_count = device_count;
  api.device_properties = device_properties;
  api.kernel_table = kernel_table;
  return &api;
}
