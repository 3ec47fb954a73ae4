/* A minimal out-of-tree adapter written in plain C: host memory, no kernels.
 * Built several times with different TEST_PLUGIN_* definitions to exercise
 * version negotiation and the refusal of malformed plugins. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "polychip/adapter_abi.h"

#ifndef TEST_PLUGIN_NAME
#define TEST_PLUGIN_NAME "testplug"
#endif
#ifndef TEST_PLUGIN_MAJOR
#define TEST_PLUGIN_MAJOR POLYCHIP_ABI_VERSION_MAJOR
#endif
#ifndef TEST_PLUGIN_MINOR
#define TEST_PLUGIN_MINOR 0 /* a 1.0 table (struct_size below), as an older adapter ships */
#endif

typedef struct memory {
  void* data;
  uint64_t size;
} memory;

static _Thread_local char last_error[256];

static polychip_status fail(polychip_status code, const char* message) {
  snprintf(last_error, sizeof last_error, "%s", message);
  return code;
}

static const char* last_error_message(void) { return last_error; }

/* How often the runtime counted this plugin's devices: a test checks that
 * it does so only when something needs them, and once. */
static int device_count_calls;
__attribute__((visibility("default"))) int testplug_device_count_calls(void) {
  return device_count_calls;
}

static polychip_status device_count(polychip_device_count_args* a) {
  ++device_count_calls;
#if defined(TEST_PLUGIN_NO_DEVICES)
  a->count = 0;
  a->unavailable_reason = TEST_PLUGIN_NO_DEVICES;
#else
  a->count = 1;
  a->unavailable_reason = NULL;
#endif
  return POLYCHIP_OK;
}

static polychip_status device_properties(polychip_device_properties_args* a) {
  if (a->device != 0) return fail(POLYCHIP_NOT_FOUND, "testplug has one device");
  polychip_device_properties* p = a->properties;
#if defined(TEST_PLUGIN_UNTERMINATED_STRINGS)
  /* Both fields full, no NUL: the HAL must keep the first size - 1 bytes
   * (a valid 63-character id) and never read the upper-case last byte. */
  static const char vendor[] = TEST_PLUGIN_NAME ".";
  memset(p->device_type, 'x', sizeof p->device_type);
  memcpy(p->device_type, vendor, sizeof vendor - 1);
  p->device_type[sizeof p->device_type - 1] = 'X';
  memset(p->name, 'n', sizeof p->name);
  p->name[sizeof p->name - 1] = 'N';
#else
#ifdef TEST_PLUGIN_DEVICE_TYPE
  snprintf(p->device_type, sizeof p->device_type, "%s", TEST_PLUGIN_DEVICE_TYPE);
#else
  snprintf(p->device_type, sizeof p->device_type, "%s.v1", TEST_PLUGIN_NAME);
#endif
  snprintf(p->name, sizeof p->name, "test plugin device");
#endif
  p->memory_bytes = 1u << 30;
  p->supported_dtypes = 1u << POLYCHIP_DTYPE_F32;
  p->capabilities = POLYCHIP_CAP_HOST_VISIBLE_MEMORY;
  p->compute_units = 1;
  return POLYCHIP_OK;
}

static polychip_status memory_allocate(polychip_memory_allocate_args* a) {
  memory* m = (memory*)malloc(sizeof *m);
  if (!m) return fail(POLYCHIP_OUT_OF_MEMORY, "no memory");
  m->data = malloc(a->size_bytes ? a->size_bytes : 1);
  m->size = a->size_bytes;
  a->memory = (polychip_memory*)m;
  return POLYCHIP_OK;
}

static polychip_status memory_free(polychip_memory_free_args* a) {
  memory* m = (memory*)a->memory;
  if (m) free(m->data);
  free(m);
  return POLYCHIP_OK;
}

static polychip_status memory_host_pointer(polychip_memory_host_pointer_args* a) {
  a->host_pointer = ((memory*)a->memory)->data;
  return POLYCHIP_OK;
}

/* Whether [offset, offset + size) lies inside m, as a real adapter checks. */
static int in_range(const polychip_memory* m, uint64_t offset, uint64_t size) {
  const uint64_t capacity = ((const memory*)m)->size;
  return offset <= capacity && size <= capacity - offset;
}

static polychip_status copy(polychip_copy_args* a) {
  if ((a->kind != POLYCHIP_COPY_HOST_TO_DEVICE &&
       !in_range(a->src_memory, a->src_offset, a->size_bytes)) ||
      (a->kind != POLYCHIP_COPY_DEVICE_TO_HOST &&
       !in_range(a->dst_memory, a->dst_offset, a->size_bytes)))
    return fail(POLYCHIP_INVALID_ARGUMENT, "copy outside the memory");
  const char* src = a->kind == POLYCHIP_COPY_HOST_TO_DEVICE
                        ? (const char*)a->src_host
                        : (const char*)((memory*)a->src_memory)->data + a->src_offset;
  char* dst = a->kind == POLYCHIP_COPY_DEVICE_TO_HOST
                  ? (char*)a->dst_host
                  : (char*)((memory*)a->dst_memory)->data + a->dst_offset;
  if (a->size_bytes) memmove(dst, src, a->size_bytes);
  return POLYCHIP_OK;
}

static int stream_token;
static polychip_status stream_create(polychip_stream_create_args* a) {
  a->stream = (polychip_stream*)&stream_token;
  return POLYCHIP_OK;
}
static polychip_status stream_noop(polychip_stream_args* a) {
  (void)a;
  return POLYCHIP_OK;
}
static int event_token;
static polychip_status event_create(polychip_event_create_args* a) {
  a->event = (polychip_event*)&event_token;
  return POLYCHIP_OK;
}
static polychip_status event_noop(polychip_event_args* a) {
  a->complete = 1;
  return POLYCHIP_OK;
}
static polychip_status event_elapsed(polychip_event_elapsed_args* a) {
  a->milliseconds = 0;
  return POLYCHIP_OK;
}
static polychip_status kernel_table(polychip_kernel_table_args* a) {
  a->entries = NULL;
  a->num_entries = 0;
  return POLYCHIP_OK;
}

/* A table with one field appended after kernel_table, as a newer minor
 * version of the ABI would have. */
typedef struct extended_api {
  polychip_adapter_api v1;
  void* appended_in_a_later_minor;
} extended_api;

// clang-format off
static const extended_api api = {
    {
#if defined(TEST_PLUGIN_TOO_SMALL)
        offsetof(polychip_adapter_api, kernel_table),
#elif TEST_PLUGIN_MINOR > POLYCHIP_ABI_VERSION_MINOR
        sizeof(extended_api),
#else
        POLYCHIP_ADAPTER_API_STRUCT_SIZE_V1_0,
#endif
        NULL,
        {sizeof(polychip_abi_version), TEST_PLUGIN_MAJOR, TEST_PLUGIN_MINOR},
        TEST_PLUGIN_NAME, "polychip-tests", "1.0.0", last_error_message, device_count,
        device_properties, memory_allocate, memory_free, memory_host_pointer,
#if defined(TEST_PLUGIN_NULL_COPY)
        NULL,
#else
        copy,
#endif
        stream_create, stream_noop, stream_noop, event_create, event_noop, event_noop,
        event_noop, event_noop, event_noop, event_elapsed, kernel_table},
    NULL};
// clang-format on

#if defined(TEST_PLUGIN_NO_ENTRY)
POLYCHIP_EXPORT const polychip_adapter_api* not_the_entry_symbol(void) { return &api.v1; }
#else
POLYCHIP_EXPORT const polychip_adapter_api* polychip_adapter_get_api(void) { return &api.v1; }
#endif
