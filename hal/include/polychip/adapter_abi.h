/* polychip adapter ABI: the C boundary between the HAL and a vendor adapter.
 *
 * An adapter exports one symbol, POLYCHIP_ADAPTER_ENTRY_SYMBOL, returning a
 * pointer to a static polychip_adapter_api table. In-tree adapters register
 * the same table statically; out-of-tree ones are shared libraries found in
 * the folders of POLYCHIP_ADAPTER_PATH.
 *
 * Versioning (PJRT-style, see docs/adapter-abi.md):
 *  - every struct starts with `size_t struct_size`, set by whoever fills the
 *    struct in (the caller for args, the adapter for its table), to
 *    POLYCHIP_STRUCT_SIZE(type, last_field);
 *  - fields are only ever appended; a minor version bump appends fields, a
 *    major bump is any incompatible change;
 *  - the HAL accepts an adapter with the same major version and any minor
 *    version; it refuses another major version, and a table whose struct_size
 *    is smaller than the v1.0 table.
 *
 * Errors: every call returns a polychip_status (0 = success). After a failing
 * call, last_error_message() returns a message describing it, valid on the
 * calling thread until its next call into the same adapter.
 *
 * Ownership: handles (memory, streams, events) are created and destroyed by
 * the adapter; the HAL never frees them any other way. Strings returned by
 * the adapter are static or owned by the adapter and outlive the handle they
 * describe.
 */
#ifndef POLYCHIP_ADAPTER_ABI_H_
#define POLYCHIP_ADAPTER_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define POLYCHIP_ABI_VERSION_MAJOR 1
#define POLYCHIP_ABI_VERSION_MINOR 1

#define POLYCHIP_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

#define POLYCHIP_ADAPTER_ENTRY_SYMBOL "polychip_adapter_get_api"

#if defined(_WIN32)
#define POLYCHIP_EXPORT __declspec(dllexport)
#else
#define POLYCHIP_EXPORT __attribute__((visibility("default")))
#endif

/* ---- status codes --------------------------------------------------------*/
typedef int32_t polychip_status;
enum {
  POLYCHIP_OK = 0,
  POLYCHIP_INVALID_ARGUMENT = 1, /* bad shape, dtype, stride, null, alias  */
  POLYCHIP_NOT_FOUND = 2,        /* unknown op, device, symbol              */
  POLYCHIP_UNSUPPORTED = 3,      /* valid request the adapter cannot do     */
  POLYCHIP_OUT_OF_MEMORY = 4,
  POLYCHIP_UNAVAILABLE = 5, /* driver or hardware missing              */
  POLYCHIP_FAILED_PRECONDITION = 6,
  POLYCHIP_INCOMPATIBLE_VERSION = 7,
  POLYCHIP_DEADLINE_EXCEEDED = 8,
  POLYCHIP_ABORTED = 9,
  POLYCHIP_DATA_CORRUPTION = 10,
  POLYCHIP_INTERNAL = 11,
  POLYCHIP_STATUS_COUNT_ = 12
};

/* ---- data types ----------------------------------------------------------*/
typedef int32_t polychip_dtype;
enum {
  POLYCHIP_DTYPE_ANY = 0, /* wildcard in kernel signatures only */
  POLYCHIP_DTYPE_F64 = 1,
  POLYCHIP_DTYPE_F32 = 2,
  POLYCHIP_DTYPE_F16 = 3,
  POLYCHIP_DTYPE_BF16 = 4,
  POLYCHIP_DTYPE_F8E4M3 = 5,
  POLYCHIP_DTYPE_F8E5M2 = 6,
  POLYCHIP_DTYPE_I8 = 7,
  POLYCHIP_DTYPE_I32 = 8,
  POLYCHIP_DTYPE_I64 = 9,
  POLYCHIP_DTYPE_U8 = 10,
  POLYCHIP_DTYPE_BOOL = 11,
  POLYCHIP_DTYPE_COUNT_ = 12
};

/* ---- opaque adapter-owned handles ---------------------------------------*/
typedef struct polychip_memory polychip_memory;
typedef struct polychip_stream polychip_stream;
typedef struct polychip_event polychip_event;

/* ---- device properties (filled in by the adapter) -----------------------*/
enum {
  POLYCHIP_CAP_HOST_VISIBLE_MEMORY = 1u << 0, /* memory_host_pointer works   */
  POLYCHIP_CAP_PEER_ACCESS = 1u << 1,
  POLYCHIP_CAP_DMABUF_EXPORT = 1u << 2, /* device memory exportable for GDR */
  POLYCHIP_CAP_ASYNC_COPY = 1u << 3,    /* copies on a stream overlap host  */
  POLYCHIP_CAP_TIMING_EVENTS = 1u << 4,
  /* Copies run on an engine of their own (DMA), not on host cores: worth
   * overlapping with host work (added in ABI 1.0; adapters that leave it
   * out are treated as copying with host cores). */
  POLYCHIP_CAP_COPY_ENGINE = 1u << 5,
  /* ABI 1.1: memory_export describes device allocations for registration
   * with a NIC (GPUDirect RDMA, the GDR path of comm_interop). */
  POLYCHIP_CAP_NETWORK_EXPORT = 1u << 6
};

#define POLYCHIP_DEVICE_TYPE_MAX 64
#define POLYCHIP_DEVICE_NAME_MAX 128

typedef struct polychip_device_properties {
  size_t struct_size;
  /* Globally unique "vendor.model", lower case, e.g. "nvidia.h100". */
  char device_type[POLYCHIP_DEVICE_TYPE_MAX];
  char name[POLYCHIP_DEVICE_NAME_MAX];
  uint64_t memory_bytes;
  uint64_t supported_dtypes; /* bit (1 << polychip_dtype) per dtype */
  uint64_t capabilities;     /* POLYCHIP_CAP_* */
  int32_t compute_units;
} polychip_device_properties;

/* ---- args structs, one per call -----------------------------------------*/
typedef struct polychip_device_count_args {
  size_t struct_size;
  int32_t count; /* out */
  /* out: when count is 0, why (static string), e.g. "no CUDA driver". */
  const char* unavailable_reason;
} polychip_device_count_args;

typedef struct polychip_device_properties_args {
  size_t struct_size;
  int32_t device;
  /* in/out: caller sets properties->struct_size; the adapter writes the
   * fields that fit in min(its size, the caller's). */
  polychip_device_properties* properties;
} polychip_device_properties_args;

typedef int32_t polychip_memory_kind;
enum {
  POLYCHIP_MEMORY_DEVICE = 0,
  POLYCHIP_MEMORY_PINNED_HOST = 1 /* host memory fast to copy from/to */
};

typedef struct polychip_memory_allocate_args {
  size_t struct_size;
  int32_t device;
  polychip_memory_kind kind;
  uint64_t size_bytes;     /* 0 is valid and yields a distinct handle */
  polychip_memory* memory; /* out; free with memory_free */
} polychip_memory_allocate_args;

typedef struct polychip_memory_free_args {
  size_t struct_size;
  polychip_memory* memory; /* NULL is a no-op */
} polychip_memory_free_args;

typedef struct polychip_memory_host_pointer_args {
  size_t struct_size;
  polychip_memory* memory;
  void* host_pointer; /* out; UNSUPPORTED unless the memory is host visible */
} polychip_memory_host_pointer_args;

typedef int32_t polychip_copy_kind;
enum {
  POLYCHIP_COPY_HOST_TO_DEVICE = 0,
  POLYCHIP_COPY_DEVICE_TO_HOST = 1,
  POLYCHIP_COPY_DEVICE_TO_DEVICE = 2
};

typedef struct polychip_copy_args {
  size_t struct_size;
  polychip_copy_kind kind;
  polychip_memory* src_memory; /* device side, unless HOST_TO_DEVICE */
  const void* src_host;        /* host side of HOST_TO_DEVICE */
  uint64_t src_offset;
  polychip_memory* dst_memory; /* device side, unless DEVICE_TO_HOST */
  void* dst_host;              /* host side of DEVICE_TO_HOST */
  uint64_t dst_offset;
  uint64_t size_bytes;
  /* NULL: synchronous, complete on return. Otherwise ordered on the stream;
   * host buffers must stay valid until the stream reaches the copy. */
  polychip_stream* stream;
} polychip_copy_args;

typedef struct polychip_stream_create_args {
  size_t struct_size;
  int32_t device;
  polychip_stream* stream; /* out */
} polychip_stream_create_args;

typedef struct polychip_stream_args {
  size_t struct_size;
  polychip_stream* stream;
} polychip_stream_args; /* stream_destroy, stream_synchronize */

typedef struct polychip_event_create_args {
  size_t struct_size;
  int32_t device;
  polychip_event* event; /* out */
} polychip_event_create_args;

typedef struct polychip_event_args {
  size_t struct_size;
  polychip_event* event;
  polychip_stream* stream; /* event_record and stream_wait_event only */
  int32_t complete;        /* out, event_query only */
} polychip_event_args;     /* destroy, record, query, synchronize, stream_wait */

typedef struct polychip_event_elapsed_args {
  size_t struct_size;
  polychip_event* start;
  polychip_event* end;
  double milliseconds; /* out */
} polychip_event_elapsed_args;

/* ---- network export (ABI 1.1) ----------------------------------------------
 * How a NIC reaches an allocation directly, with no copy through host memory:
 * the memory interface libfabric registers it with (FI_HMEM_SYSTEM, _CUDA,
 * _ROCR, _ZE) and its address in that interface's space, or a dma-buf. The
 * allocation stays valid for the NIC until memory_free; the caller ends its
 * registration before that. UNSUPPORTED when the adapter cannot (a v1.0
 * table, which has no memory_export, is treated the same way). */
typedef int32_t polychip_memory_interface;
enum {
  POLYCHIP_MEMORY_INTERFACE_SYSTEM = 0, /* a host virtual address any NIC can register */
  POLYCHIP_MEMORY_INTERFACE_CUDA = 1,   /* a CUDA device pointer (nvidia-peermem or dma-buf) */
  POLYCHIP_MEMORY_INTERFACE_ROCR = 2,   /* a ROCm/HIP device pointer */
  POLYCHIP_MEMORY_INTERFACE_ZE = 3,     /* a Level Zero device allocation */
  POLYCHIP_MEMORY_INTERFACE_DMABUF = 4  /* dmabuf_fd at dmabuf_offset */
};

typedef struct polychip_memory_export_args {
  size_t struct_size;
  polychip_memory* memory;
  polychip_memory_interface interface; /* out */
  int32_t device_ordinal;              /* out: the interface's device index (0 for SYSTEM) */
  void* address;                       /* out: the allocation's start in the interface's
                                          address space (the mapping's, for DMABUF) */
  uint64_t size_bytes;                 /* out: the allocation's size */
  int32_t dmabuf_fd;                   /* out, DMABUF only: owned by the adapter, open
                                          until memory_free; -1 otherwise */
  uint64_t dmabuf_offset;              /* out, DMABUF only */
} polychip_memory_export_args;

/* ---- kernels --------------------------------------------------------------*/
#define POLYCHIP_MAX_RANK 8
#define POLYCHIP_MAX_OP_TENSORS 12
#define POLYCHIP_MAX_OP_ATTRS 8

typedef struct polychip_tensor {
  size_t struct_size;
  polychip_dtype dtype;
  int32_t rank;
  int64_t shape[POLYCHIP_MAX_RANK];
  int64_t strides[POLYCHIP_MAX_RANK]; /* in elements, may be 0 (broadcast) */
  polychip_memory* memory;
  uint64_t byte_offset; /* of element [0,...,0] within memory */
} polychip_tensor;

/* Scalar attributes; the op contract (docs/op-contract.md) names each slot. */
typedef struct polychip_op_attrs {
  size_t struct_size;
  int64_t ints[POLYCHIP_MAX_OP_ATTRS];
  double floats[POLYCHIP_MAX_OP_ATTRS];
} polychip_op_attrs;

struct polychip_adapter_api;

typedef struct polychip_kernel_args {
  size_t struct_size;
  const char* op; /* op contract name, e.g. "gemm" */
  int32_t device;
  polychip_stream* stream; /* never NULL */
  /* Inputs first, then outputs, in op-contract order. */
  const polychip_tensor* tensors;
  int32_t num_tensors;
  const polychip_op_attrs* attrs;
  /* The adapter owning the memory: lets patch kernels reach host pointers
   * and copies without linking against the adapter. */
  const struct polychip_adapter_api* adapter;
} polychip_kernel_args;

typedef polychip_status (*polychip_kernel_fn)(const polychip_kernel_args* args);

#define POLYCHIP_MAX_SIGNATURE 8
typedef struct polychip_kernel_entry {
  size_t struct_size;
  const char* op;
  /* dtypes of the tensors in order; ANY matches everything; entries past
   * num_dtypes are not checked. */
  polychip_dtype signature[POLYCHIP_MAX_SIGNATURE];
  int32_t num_dtypes;
  polychip_kernel_fn fn;
} polychip_kernel_entry;

typedef struct polychip_kernel_table_args {
  size_t struct_size;
  int32_t device;
  const polychip_kernel_entry* entries; /* out, owned by the adapter */
  int32_t num_entries;                  /* out */
} polychip_kernel_table_args;

/* ---- the table ------------------------------------------------------------*/
typedef struct polychip_abi_version {
  size_t struct_size;
  int32_t major;
  int32_t minor;
} polychip_abi_version;

typedef struct polychip_adapter_api {
  size_t struct_size;
  void* extension_start; /* reserved, NULL */
  polychip_abi_version abi_version;

  /* Identity: static strings. `name` is unique among adapters ("cpu"). */
  const char* name;
  const char* vendor;
  const char* adapter_version;

  const char* (*last_error_message)(void);

  polychip_status (*device_count)(polychip_device_count_args* args);
  polychip_status (*device_properties)(polychip_device_properties_args* args);

  polychip_status (*memory_allocate)(polychip_memory_allocate_args* args);
  polychip_status (*memory_free)(polychip_memory_free_args* args);
  polychip_status (*memory_host_pointer)(polychip_memory_host_pointer_args* args);
  polychip_status (*copy)(polychip_copy_args* args);

  polychip_status (*stream_create)(polychip_stream_create_args* args);
  polychip_status (*stream_destroy)(polychip_stream_args* args);
  polychip_status (*stream_synchronize)(polychip_stream_args* args);

  polychip_status (*event_create)(polychip_event_create_args* args);
  polychip_status (*event_destroy)(polychip_event_args* args);
  polychip_status (*event_record)(polychip_event_args* args);
  polychip_status (*stream_wait_event)(polychip_event_args* args);
  polychip_status (*event_query)(polychip_event_args* args);
  polychip_status (*event_synchronize)(polychip_event_args* args);
  polychip_status (*event_elapsed)(polychip_event_elapsed_args* args);

  polychip_status (*kernel_table)(polychip_kernel_table_args* args);

  /* ---- ABI 1.1 ---- */
  /* May be NULL: the adapter exports no memory (same as UNSUPPORTED). */
  polychip_status (*memory_export)(polychip_memory_export_args* args);
} polychip_adapter_api;

/* Size of the v1.0 table: the smallest table the HAL accepts. */
#define POLYCHIP_ADAPTER_API_STRUCT_SIZE_V1_0 \
  POLYCHIP_STRUCT_SIZE(polychip_adapter_api, kernel_table)
/* Size of the v1.1 table (memory_export). */
#define POLYCHIP_ADAPTER_API_STRUCT_SIZE_V1_1 \
  POLYCHIP_STRUCT_SIZE(polychip_adapter_api, memory_export)

/* Initializer of a v1.0 table from functions in scope that carry the table's
 * field names (last_error_message, device_count, ..., kernel_table):
 *   static const polychip_adapter_api api =
 *       POLYCHIP_ADAPTER_API_V1_INIT("myvendor", "My Vendor Inc.", "1.2.0");
 * POLYCHIP_ADAPTER_API_V1_1_INIT also takes memory_export. */
#define POLYCHIP_ADAPTER_API_V1_INIT(name, vendor, adapter_version)                           \
  {                                                                                           \
    POLYCHIP_ADAPTER_API_FIELDS_V1_0_(POLYCHIP_ADAPTER_API_STRUCT_SIZE_V1_0, 0, name, vendor, \
                                      adapter_version),                                       \
        NULL                                                                                  \
  }
#define POLYCHIP_ADAPTER_API_V1_1_INIT(name, vendor, adapter_version)                         \
  {                                                                                           \
    POLYCHIP_ADAPTER_API_FIELDS_V1_0_(POLYCHIP_ADAPTER_API_STRUCT_SIZE_V1_1, 1, name, vendor, \
                                      adapter_version),                                       \
        memory_export                                                                         \
  }
#define POLYCHIP_ADAPTER_API_FIELDS_V1_0_(struct_size, minor, name, vendor, adapter_version)  \
  struct_size, NULL, {sizeof(polychip_abi_version), POLYCHIP_ABI_VERSION_MAJOR, minor}, name, \
      vendor, adapter_version, last_error_message, device_count, device_properties,           \
      memory_allocate, memory_free, memory_host_pointer, copy, stream_create, stream_destroy, \
      stream_synchronize, event_create, event_destroy, event_record, stream_wait_event,       \
      event_query, event_synchronize, event_elapsed, kernel_table

typedef const polychip_adapter_api* (*polychip_adapter_get_api_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* POLYCHIP_ADAPTER_ABI_H_ */
