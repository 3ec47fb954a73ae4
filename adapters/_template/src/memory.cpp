// Memory and copies. The template's "device memory" is host memory from the
// cpu adapter (so forwarded cpu kernels can use it); a real adapter calls
// its runtime's allocator and DMA copies here.
#include <cstring>
#include <memory>
#include <new>

#include "template_adapter.hpp"

namespace template_adapter {

namespace {

polychip_status check_range(const Memory* m, uint64_t offset, uint64_t size, const char* name) {
  if (!m) return fail(POLYCHIP_INVALID_ARGUMENT, std::string("copy: '") + name + "' is NULL");
  if (offset > m->size || size > m->size - offset)
    return fail(POLYCHIP_INVALID_ARGUMENT, "copy: " + std::to_string(size) + " bytes at offset " +
                                               std::to_string(offset) + " exceed '" + name + "' (" +
                                               std::to_string(m->size) + " bytes)");
  return POLYCHIP_OK;
}

}  // namespace

polychip_status memory_allocate(polychip_memory_allocate_args* args) {
  if (!args) return fail(POLYCHIP_INVALID_ARGUMENT, "memory_allocate: args is NULL");
  if (polychip_status s = check_device(args->device, "memory_allocate")) return s;
  if (args->kind != POLYCHIP_MEMORY_DEVICE && args->kind != POLYCHIP_MEMORY_PINNED_HOST)
    return fail(POLYCHIP_INVALID_ARGUMENT,
                "memory_allocate: unknown memory kind " + std::to_string(args->kind));
  const polychip_adapter_api* cpu = cpu_adapter();
  polychip_memory_allocate_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_memory_allocate_args, memory);
  a.device = 0;
  a.kind = args->kind;
  a.size_bytes = args->size_bytes;
  if (polychip_status s = cpu->memory_allocate(&a))
    return fail(s, std::string("memory_allocate: ") + cpu->last_error_message());
  polychip_memory_host_pointer_args h{};
  h.struct_size = POLYCHIP_STRUCT_SIZE(polychip_memory_host_pointer_args, host_pointer);
  h.memory = a.memory;
  if (polychip_status s = cpu->memory_host_pointer(&h)) {
    polychip_memory_free_args f{POLYCHIP_STRUCT_SIZE(polychip_memory_free_args, memory), a.memory};
    cpu->memory_free(&f);
    return fail(s, std::string("memory_allocate: ") + cpu->last_error_message());
  }
  auto* m = new (std::nothrow) Memory{a.memory, h.host_pointer, args->size_bytes, args->kind};
  if (!m) {
    polychip_memory_free_args f{POLYCHIP_STRUCT_SIZE(polychip_memory_free_args, memory), a.memory};
    cpu->memory_free(&f);
    return fail(POLYCHIP_OUT_OF_MEMORY, "memory_allocate: cannot allocate a handle");
  }
  args->memory = reinterpret_cast<polychip_memory*>(m);
  return POLYCHIP_OK;
}

polychip_status memory_free(polychip_memory_free_args* args) {
  if (!args) return fail(POLYCHIP_INVALID_ARGUMENT, "memory_free: args is NULL");
  if (!args->memory) return POLYCHIP_OK;
  std::unique_ptr<Memory> m(as_memory(args->memory));
  polychip_memory_free_args f{POLYCHIP_STRUCT_SIZE(polychip_memory_free_args, memory),
                              m->cpu_memory};
  if (polychip_status s = cpu_adapter()->memory_free(&f))
    return fail(s, std::string("memory_free: ") + cpu_adapter()->last_error_message());
  return POLYCHIP_OK;
}

polychip_status memory_host_pointer(polychip_memory_host_pointer_args* args) {
  if (!args || !args->memory)
    return fail(POLYCHIP_INVALID_ARGUMENT, "memory_host_pointer: args or memory is NULL");
  // Real device memory is usually not host visible: return UNSUPPORTED for
  // it and leave POLYCHIP_CAP_HOST_VISIBLE_MEMORY out of the capabilities.
  args->host_pointer = as_memory(args->memory)->host;
  return POLYCHIP_OK;
}

polychip_status copy(polychip_copy_args* args) {
  if (!args) return fail(POLYCHIP_INVALID_ARGUMENT, "copy: args is NULL");
  const void* src = nullptr;
  void* dst = nullptr;
  const Memory* s_mem = as_memory(args->src_memory);
  const Memory* d_mem = as_memory(args->dst_memory);
  switch (args->kind) {
    case POLYCHIP_COPY_HOST_TO_DEVICE:
      if (polychip_status s = check_range(d_mem, args->dst_offset, args->size_bytes, "dst_memory"))
        return s;
      src = args->src_host;
      dst = static_cast<char*>(d_mem->host) + args->dst_offset;
      break;
    case POLYCHIP_COPY_DEVICE_TO_HOST:
      if (polychip_status s = check_range(s_mem, args->src_offset, args->size_bytes, "src_memory"))
        return s;
      src = static_cast<const char*>(s_mem->host) + args->src_offset;
      dst = args->dst_host;
      break;
    case POLYCHIP_COPY_DEVICE_TO_DEVICE:
      if (polychip_status s = check_range(s_mem, args->src_offset, args->size_bytes, "src_memory"))
        return s;
      if (polychip_status s = check_range(d_mem, args->dst_offset, args->size_bytes, "dst_memory"))
        return s;
      src = static_cast<const char*>(s_mem->host) + args->src_offset;
      dst = static_cast<char*>(d_mem->host) + args->dst_offset;
      break;
    default:
      return fail(POLYCHIP_INVALID_ARGUMENT,
                  "copy: unknown copy kind " + std::to_string(args->kind));
  }
  if (args->size_bytes == 0) return POLYCHIP_OK;
  if (!src || !dst) return fail(POLYCHIP_INVALID_ARGUMENT, "copy: a host pointer is NULL");
  // Synchronous work means a stream copy is complete on return, which the
  // ABI allows (the stream's order is trivially kept).
  std::memmove(dst, src, args->size_bytes);
  return POLYCHIP_OK;
}

}  // namespace template_adapter
