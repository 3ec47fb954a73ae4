#include "gpu_adapter.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "../kernels/kernel_abi.h"
#include "device_type.hpp"
#include "kernel_catalog.hpp"
#include "op_planner.hpp"
#include "polychip/op_contract.hpp"
#include "polychip/tensor_bounds.hpp"

namespace polychip::gpu {

namespace {

GpuMemory* as_memory(polychip_memory* m) { return reinterpret_cast<GpuMemory*>(m); }
GpuStream* as_stream(polychip_stream* s) { return reinterpret_cast<GpuStream*>(s); }
GpuEvent* as_event(polychip_event* e) { return reinterpret_cast<GpuEvent*>(e); }

Status invalid(std::string message) {
  return make_status(POLYCHIP_INVALID_ARGUMENT, std::move(message));
}

uint64_t dtype_bit(polychip_dtype d) { return uint64_t{1} << d; }

// Every dtype combination an op's tensors can take with the kernels we have.
void expand_signatures(const OpSpec& spec, polychip_kernel_fn fn,
                       std::vector<polychip_kernel_entry>& out) {
  std::vector<std::vector<polychip_dtype>> signatures;
  const polychip_dtype casts[] = {POLYCHIP_DTYPE_F64,    POLYCHIP_DTYPE_F32,
                                  POLYCHIP_DTYPE_F16,    POLYCHIP_DTYPE_BF16,
                                  POLYCHIP_DTYPE_F8E4M3, POLYCHIP_DTYPE_F8E5M2};
  for (polychip_dtype t : kKernelDtypes) {
    std::vector<std::vector<polychip_dtype>> partial{{}};
    for (const auto& tensor : spec.tensors) {
      std::vector<polychip_dtype> choices;
      switch (tensor.dtype_role) {
        case DTypeRole::kT:
          choices = {t};
          break;
        case DTypeRole::kF32:
          choices = {POLYCHIP_DTYPE_F32};
          break;
        case DTypeRole::kIndex:
          choices = {POLYCHIP_DTYPE_I64, POLYCHIP_DTYPE_I32};
          break;
        case DTypeRole::kAnyFloat:
          choices.assign(std::begin(casts), std::end(casts));
          break;
      }
      std::vector<std::vector<polychip_dtype>> next;
      for (const auto& p : partial)
        for (polychip_dtype c : choices) {
          next.push_back(p);
          next.back().push_back(c);
        }
      partial = std::move(next);
    }
    for (auto& p : partial)
      if (std::find(signatures.begin(), signatures.end(), p) == signatures.end())
        signatures.push_back(std::move(p));
  }
  for (const auto& sig : signatures) {
    polychip_kernel_entry e{};
    e.struct_size = sizeof e;
    e.op = spec.name;
    e.num_dtypes = static_cast<int32_t>(std::min<size_t>(sig.size(), POLYCHIP_MAX_SIGNATURE));
    for (int k = 0; k < e.num_dtypes; ++k) e.signature[k] = sig[k];
    e.fn = fn;
    out.push_back(e);
  }
}

}  // namespace

GpuAdapter::GpuAdapter(GpuAdapterConfig config, std::unique_ptr<GpuDriver> driver,
                       std::unique_ptr<GemmOverride> gemm)
    : config_(config), driver_(std::move(driver)), gemm_(std::move(gemm)) {}

void GpuAdapter::ensure_loaded() {
  std::call_once(load_once_, [this] {
    if (config_.kernel_image.empty()) {
      reason_ = config_.missing_kernels_reason;
      return;
    }
    reason_ = driver_->load();
    if (!reason_.empty()) return;
    int n = 0;
    if (int rc = driver_->device_count(&n); rc != kDriverSuccess) {
      reason_ = fmt::format("no {} device: {}", config_.api_label,
                            describe_driver_call(driver_->api(), "device count", rc));
      return;
    }
    if (n <= 0) {
      reason_ = fmt::format("no {} device found", config_.api_label);
      return;
    }
    for (int d = 0; d < n; ++d) {
      auto state = std::make_unique<DeviceState>();
      int shared = 0;
      if (driver_->device_max_shared_bytes(d, &shared) == kDriverSuccess && shared > 0)
        state->max_shared_bytes = shared;
      devices_.push_back(std::move(state));
    }
    count_ = n;
  });
}

Status GpuAdapter::driver_error(const char* call, int code) const {
  return make_status(
      driver_error_status(code),
      fmt::format("{}: {}", config_.name, describe_driver_call(driver_->api(), call, code)));
}

Status GpuAdapter::check_device(int device, const char* call) {
  ensure_loaded();
  if (device < 0 || device >= count_)
    return invalid(fmt::format("{}: device {} does not exist ({} has {} device{}{}{})", call,
                               device, config_.name, count_, count_ == 1 ? "" : "s",
                               reason_.empty() ? "" : ": ", reason_));
  if (int rc = driver_->make_current(device); rc != kDriverSuccess)
    return driver_error("make_current", rc);
  return Status::Ok();
}

Status GpuAdapter::device_count(polychip_device_count_args* args) {
  if (!args) return invalid("device_count: args is NULL");
  ensure_loaded();
  args->count = count_;
  args->unavailable_reason = count_ == 0 ? reason_.c_str() : nullptr;
  return Status::Ok();
}

Status GpuAdapter::device_properties(polychip_device_properties_args* args) {
  if (!args || !args->properties) return invalid("device_properties: args or properties is NULL");
  if (Status s = check_device(args->device, "device_properties"); !s.ok()) return s;
  polychip_device_properties p{};
  std::string name;
  if (int rc = driver_->device_name(args->device, &name); rc != kDriverSuccess)
    return driver_error("device name", rc);
  const std::string type = device_type_id(config_.device_vendor, name);
  std::snprintf(p.device_type, sizeof p.device_type, "%s", type.c_str());
  std::snprintf(p.name, sizeof p.name, "%s", name.c_str());
  if (int rc = driver_->device_memory_bytes(args->device, &p.memory_bytes); rc != kDriverSuccess)
    return driver_error("device memory", rc);
  int units = 0;
  if (int rc = driver_->device_compute_units(args->device, &units); rc != kDriverSuccess)
    return driver_error("device compute units", rc);
  p.compute_units = units;
  for (polychip_dtype d :
       {POLYCHIP_DTYPE_F64, POLYCHIP_DTYPE_F32, POLYCHIP_DTYPE_F16, POLYCHIP_DTYPE_BF16,
        POLYCHIP_DTYPE_F8E4M3, POLYCHIP_DTYPE_F8E5M2, POLYCHIP_DTYPE_I32, POLYCHIP_DTYPE_I64})
    p.supported_dtypes |= dtype_bit(d);
  p.capabilities = POLYCHIP_CAP_ASYNC_COPY | POLYCHIP_CAP_TIMING_EVENTS | POLYCHIP_CAP_COPY_ENGINE |
                   POLYCHIP_CAP_NETWORK_EXPORT;
  // Write only what fits the caller's struct, keeping its struct_size.
  const size_t caller_size = args->properties->struct_size;
  p.struct_size = caller_size;
  std::memcpy(args->properties, &p, std::min(caller_size, sizeof p));
  return Status::Ok();
}

Status GpuAdapter::memory_allocate(polychip_memory_allocate_args* args) {
  if (!args) return invalid("memory_allocate: args is NULL");
  if (args->kind != POLYCHIP_MEMORY_DEVICE && args->kind != POLYCHIP_MEMORY_PINNED_HOST)
    return invalid(fmt::format("memory_allocate: unknown memory kind {}", args->kind));
  if (Status s = check_device(args->device, "memory_allocate"); !s.ok()) return s;
  auto memory = std::make_unique<GpuMemory>(
      GpuMemory{args->device, args->kind, 0, nullptr, args->size_bytes});
  if (args->size_bytes > 0) {
    if (args->kind == POLYCHIP_MEMORY_DEVICE) {
      if (int rc = driver_->allocate_device(args->size_bytes, &memory->address);
          rc != kDriverSuccess)
        return driver_error("allocate device memory", rc);
    } else {
      if (int rc = driver_->allocate_pinned_host(args->size_bytes, &memory->host);
          rc != kDriverSuccess)
        return driver_error("allocate pinned host memory", rc);
      memory->address = reinterpret_cast<uint64_t>(memory->host);
    }
  }
  args->memory = reinterpret_cast<polychip_memory*>(memory.release());
  return Status::Ok();
}

Status GpuAdapter::memory_free(polychip_memory_free_args* args) {
  if (!args) return invalid("memory_free: args is NULL");
  if (!args->memory) return Status::Ok();
  std::unique_ptr<GpuMemory> memory(as_memory(args->memory));
  if (memory->size == 0) return Status::Ok();
  if (Status s = check_device(memory->device, "memory_free"); !s.ok()) return s;
  int rc = memory->kind == POLYCHIP_MEMORY_DEVICE ? driver_->free_device(memory->address)
                                                  : driver_->free_pinned_host(memory->host);
  if (rc != kDriverSuccess) return driver_error("free memory", rc);
  return Status::Ok();
}

Status GpuAdapter::memory_host_pointer(polychip_memory_host_pointer_args* args) {
  if (!args || !args->memory) return invalid("memory_host_pointer: args or memory is NULL");
  GpuMemory* memory = as_memory(args->memory);
  if (memory->kind != POLYCHIP_MEMORY_PINNED_HOST)
    return make_status(POLYCHIP_UNSUPPORTED,
                       fmt::format("memory_host_pointer: {} device memory is not host visible; "
                                   "copy it or allocate POLYCHIP_MEMORY_PINNED_HOST",
                                   config_.name));
  args->host_pointer = memory->host;
  return Status::Ok();
}

Status GpuAdapter::memory_export(polychip_memory_export_args* args) {
  if (!args || !args->memory) return invalid("memory_export: args or memory is NULL");
  const GpuMemory* memory = as_memory(args->memory);
  const bool device = memory->kind == POLYCHIP_MEMORY_DEVICE;
  args->interface = !device                        ? POLYCHIP_MEMORY_INTERFACE_SYSTEM
                    : driver_->api() == Api::kCuda ? POLYCHIP_MEMORY_INTERFACE_CUDA
                                                   : POLYCHIP_MEMORY_INTERFACE_ROCR;
  args->device_ordinal = device ? memory->device : 0;
  args->address = device ? reinterpret_cast<void*>(memory->address) : memory->host;
  args->size_bytes = memory->size;
  args->dmabuf_fd = -1;
  args->dmabuf_offset = 0;
  return Status::Ok();
}

Status GpuAdapter::check_range(const GpuMemory* memory, uint64_t offset, uint64_t size,
                               const char* name) const {
  if (!memory) return invalid(fmt::format("copy: '{}' is NULL", name));
  if (offset > memory->size || size > memory->size - offset)
    return invalid(fmt::format("copy: {} bytes at offset {} exceed '{}' ({} bytes)", size, offset,
                               name, memory->size));
  return Status::Ok();
}

Status GpuAdapter::copy(polychip_copy_args* args) {
  if (!args) return invalid("copy: args is NULL");
  uint64_t dst = 0, src = 0;
  const GpuMemory* device_side = nullptr;
  switch (args->kind) {
    case POLYCHIP_COPY_HOST_TO_DEVICE: {
      const GpuMemory* m = as_memory(args->dst_memory);
      if (Status s = check_range(m, args->dst_offset, args->size_bytes, "dst_memory"); !s.ok())
        return s;
      if (!args->src_host && args->size_bytes) return invalid("copy: 'src_host' is NULL");
      dst = m->address + args->dst_offset;
      src = reinterpret_cast<uint64_t>(args->src_host);
      device_side = m;
      break;
    }
    case POLYCHIP_COPY_DEVICE_TO_HOST: {
      const GpuMemory* m = as_memory(args->src_memory);
      if (Status s = check_range(m, args->src_offset, args->size_bytes, "src_memory"); !s.ok())
        return s;
      if (!args->dst_host && args->size_bytes) return invalid("copy: 'dst_host' is NULL");
      src = m->address + args->src_offset;
      dst = reinterpret_cast<uint64_t>(args->dst_host);
      device_side = m;
      break;
    }
    case POLYCHIP_COPY_DEVICE_TO_DEVICE: {
      const GpuMemory* s_mem = as_memory(args->src_memory);
      const GpuMemory* d_mem = as_memory(args->dst_memory);
      if (Status s = check_range(s_mem, args->src_offset, args->size_bytes, "src_memory"); !s.ok())
        return s;
      if (Status s = check_range(d_mem, args->dst_offset, args->size_bytes, "dst_memory"); !s.ok())
        return s;
      src = s_mem->address + args->src_offset;
      dst = d_mem->address + args->dst_offset;
      device_side = d_mem;
      break;
    }
    default:
      return invalid(fmt::format("copy: unknown copy kind {}", args->kind));
  }
  if (args->size_bytes == 0) return Status::Ok();
  GpuStream* stream = as_stream(args->stream);
  const int device = stream ? stream->device : device_side->device;
  if (Status s = check_device(device, "copy"); !s.ok()) return s;
  if (int rc = driver_->copy(dst, src, args->size_bytes, stream ? stream->native : nullptr);
      rc != kDriverSuccess)
    return driver_error("copy", rc);
  // Without a stream the copy is complete on return (the ABI's promise), but
  // cuMemcpy / hipMemcpy from pageable memory return once the source is
  // staged, the DMA still running, and the adapter's streams are
  // non-blocking, so a copy queued on one next could read the old bytes
  // (seen on an H200: the comm suite's staged all_reduce read stale input).
  if (!stream)
    if (int rc = driver_->stream_synchronize(nullptr); rc != kDriverSuccess)
      return driver_error("copy (waiting for it to complete)", rc);
  return Status::Ok();
}

Status GpuAdapter::stream_create(polychip_stream_create_args* args) {
  if (!args) return invalid("stream_create: args is NULL");
  if (Status s = check_device(args->device, "stream_create"); !s.ok()) return s;
  auto stream = std::make_unique<GpuStream>(GpuStream{args->device, nullptr, 0, 0, 0});
  if (int rc = driver_->stream_create(&stream->native); rc != kDriverSuccess)
    return driver_error("stream create", rc);
  if (int rc = driver_->allocate_device(sizeof(uint64_t), &stream->error_word);
      rc != kDriverSuccess) {
    driver_->stream_destroy(stream->native);
    return driver_error("allocate the stream's error word", rc);
  }
  args->stream = reinterpret_cast<polychip_stream*>(stream.release());
  return Status::Ok();
}

Status GpuAdapter::stream_destroy(polychip_stream_args* args) {
  if (!args || !args->stream) return invalid("stream_destroy: args or stream is NULL");
  std::unique_ptr<GpuStream> stream(as_stream(args->stream));
  if (Status s = check_device(stream->device, "stream_destroy"); !s.ok()) return s;
  // Pending work may still use the scratch buffers.
  int rc = driver_->stream_synchronize(stream->native);
  if (stream->scratch) driver_->free_device(stream->scratch);
  driver_->free_device(stream->error_word);
  int rc_destroy = driver_->stream_destroy(stream->native);
  if (rc != kDriverSuccess) return driver_error("stream synchronize", rc);
  if (rc_destroy != kDriverSuccess) return driver_error("stream destroy", rc_destroy);
  return Status::Ok();
}

Status GpuAdapter::stream_synchronize(polychip_stream_args* args) {
  if (!args || !args->stream) return invalid("stream_synchronize: args or stream is NULL");
  GpuStream* stream = as_stream(args->stream);
  if (Status s = check_device(stream->device, "stream_synchronize"); !s.ok()) return s;
  if (int rc = driver_->stream_synchronize(stream->native); rc != kDriverSuccess)
    return driver_error("stream synchronize", rc);
  return Status::Ok();
}

Status GpuAdapter::event_create(polychip_event_create_args* args) {
  if (!args) return invalid("event_create: args is NULL");
  if (Status s = check_device(args->device, "event_create"); !s.ok()) return s;
  auto event = std::make_unique<GpuEvent>(GpuEvent{args->device, nullptr});
  if (int rc = driver_->event_create(&event->native); rc != kDriverSuccess)
    return driver_error("event create", rc);
  args->event = reinterpret_cast<polychip_event*>(event.release());
  return Status::Ok();
}

Status GpuAdapter::event_destroy(polychip_event_args* args) {
  if (!args || !args->event) return invalid("event_destroy: args or event is NULL");
  std::unique_ptr<GpuEvent> event(as_event(args->event));
  if (Status s = check_device(event->device, "event_destroy"); !s.ok()) return s;
  if (int rc = driver_->event_destroy(event->native); rc != kDriverSuccess)
    return driver_error("event destroy", rc);
  return Status::Ok();
}

Status GpuAdapter::event_record(polychip_event_args* args) {
  if (!args || !args->event || !args->stream)
    return invalid("event_record: args, event or stream is NULL");
  GpuEvent* event = as_event(args->event);
  GpuStream* stream = as_stream(args->stream);
  if (event->device != stream->device)
    return invalid(fmt::format("event_record: the event belongs to device {}, the stream to {}",
                               event->device, stream->device));
  if (Status s = check_device(stream->device, "event_record"); !s.ok()) return s;
  if (int rc = driver_->event_record(event->native, stream->native); rc != kDriverSuccess)
    return driver_error("event record", rc);
  return Status::Ok();
}

Status GpuAdapter::stream_wait_event(polychip_event_args* args) {
  if (!args || !args->event || !args->stream)
    return invalid("stream_wait_event: args, event or stream is NULL");
  GpuStream* stream = as_stream(args->stream);
  if (Status s = check_device(stream->device, "stream_wait_event"); !s.ok()) return s;
  if (int rc = driver_->stream_wait_event(stream->native, as_event(args->event)->native);
      rc != kDriverSuccess)
    return driver_error("stream wait event", rc);
  return Status::Ok();
}

Status GpuAdapter::event_query(polychip_event_args* args) {
  if (!args || !args->event) return invalid("event_query: args or event is NULL");
  GpuEvent* event = as_event(args->event);
  if (Status s = check_device(event->device, "event_query"); !s.ok()) return s;
  bool complete = false;
  if (int rc = driver_->event_query(event->native, &complete); rc != kDriverSuccess)
    return driver_error("event query", rc);
  args->complete = complete ? 1 : 0;
  return Status::Ok();
}

Status GpuAdapter::event_synchronize(polychip_event_args* args) {
  if (!args || !args->event) return invalid("event_synchronize: args or event is NULL");
  GpuEvent* event = as_event(args->event);
  if (Status s = check_device(event->device, "event_synchronize"); !s.ok()) return s;
  if (int rc = driver_->event_synchronize(event->native); rc != kDriverSuccess)
    return driver_error("event synchronize", rc);
  return Status::Ok();
}

Status GpuAdapter::event_elapsed(polychip_event_elapsed_args* args) {
  if (!args || !args->start || !args->end) return invalid("event_elapsed: start or end is NULL");
  GpuEvent* start = as_event(args->start);
  if (Status s = check_device(start->device, "event_elapsed"); !s.ok()) return s;
  float ms = 0;
  if (int rc = driver_->event_elapsed_ms(start->native, as_event(args->end)->native, &ms);
      rc != kDriverSuccess)
    return driver_error("event elapsed time", rc);
  args->milliseconds = ms;
  return Status::Ok();
}

std::vector<polychip_kernel_entry> GpuAdapter::build_kernel_entries(polychip_kernel_fn fn) {
  std::vector<polychip_kernel_entry> entries;
  for (const auto& k : kernel_catalog())
    if (const OpSpec* spec = find_op(k.op)) expand_signatures(*spec, fn, entries);
  return entries;
}

Status GpuAdapter::kernel_table(polychip_kernel_table_args* args, polychip_kernel_fn kernel_fn) {
  if (!args) return invalid("kernel_table: args is NULL");
  if (Status s = check_device(args->device, "kernel_table"); !s.ok()) return s;
  std::lock_guard lock(entries_mutex_);
  if (entries_.empty()) entries_ = build_kernel_entries(kernel_fn);
  args->entries = entries_.data();
  args->num_entries = static_cast<int32_t>(entries_.size());
  return Status::Ok();
}

Status GpuAdapter::function(int device, const std::string& symbol, NativeFunction* out) {
  DeviceState& state = *devices_[device];
  std::lock_guard lock(state.mutex);
  if (!state.module) {
    if (int rc = driver_->module_load(config_.kernel_image.data(), &state.module);
        rc != kDriverSuccess)
      return driver_error("load the kernel module", rc);
  }
  auto it = state.functions.find(symbol);
  if (it == state.functions.end()) {
    NativeFunction f = nullptr;
    if (int rc = driver_->module_function(state.module, symbol.c_str(), &f); rc != kDriverSuccess)
      return make_status(
          driver_error_status(rc),
          fmt::format("{}: kernel '{}' not found in the module: {}", config_.name, symbol,
                      describe_driver_call(driver_->api(), "get function", rc)));
    it = state.functions.emplace(symbol, f).first;
  }
  *out = it->second;
  return Status::Ok();
}

Status GpuAdapter::ensure_scratch(GpuStream& stream, uint64_t bytes) {
  if (bytes <= stream.scratch_bytes) return Status::Ok();
  // Work already queued may still read the old buffer.
  if (int rc = driver_->stream_synchronize(stream.native); rc != kDriverSuccess)
    return driver_error("stream synchronize", rc);
  if (stream.scratch) driver_->free_device(stream.scratch);
  stream.scratch = 0;
  stream.scratch_bytes = 0;
  if (int rc = driver_->allocate_device(bytes, &stream.scratch); rc != kDriverSuccess)
    return driver_error("allocate scratch memory", rc);
  stream.scratch_bytes = bytes;
  return Status::Ok();
}

Status GpuAdapter::run_kernel(const polychip_kernel_args* args) {
  if (!args || !args->op || !args->stream || !args->attrs || (!args->tensors && args->num_tensors))
    return invalid("kernel: args, op, stream, attrs or tensors is NULL");
  const CatalogEntry* entry = find_kernel(args->op);
  if (!entry)
    return make_status(POLYCHIP_NOT_FOUND,
                       fmt::format("{}: no kernel for op '{}'", config_.name, args->op));
  const OpSpec* spec = find_op(args->op);
  if (!spec || args->num_tensors != static_cast<int32_t>(spec->tensors.size()))
    return invalid(fmt::format("{}: takes {} tensors, got {}", args->op,
                               spec ? spec->tensors.size() : 0, args->num_tensors));
  GpuStream& stream = *as_stream(args->stream);
  if (Status s = check_device(stream.device, args->op); !s.ok()) return s;

  std::span<const polychip_tensor> tensors(args->tensors, static_cast<size_t>(args->num_tensors));
  if (std::string why =
          check_tensors_bounds(tensors, [](polychip_memory* m) { return as_memory(m)->size; });
      !why.empty())
    return invalid(fmt::format("{}: {}", args->op, why));
  std::vector<uint64_t> addresses(tensors.size(), 0);
  for (size_t k = 0; k < tensors.size(); ++k)
    if (tensors[k].memory)
      addresses[k] = as_memory(tensors[k].memory)->address + tensors[k].byte_offset;

  if (entry->family == Family::kGemm && gemm_) {
    GemmCall call{stream.device, stream.native, tensors, addresses, args->attrs};
    if (auto done = gemm_->gemm(*driver_, call)) return *done;
  }
  if (Status s = ensure_scratch(stream, scratch_bytes_needed(*entry, tensors)); !s.ok()) return s;

  OpRequest request;
  request.entry = entry;
  request.tensors = tensors;
  request.attrs = args->attrs;
  request.addresses = addresses;
  request.error_word = stream.error_word;
  request.scratch = stream.scratch;
  request.scratch_bytes = stream.scratch_bytes;
  request.max_shared_bytes = devices_[stream.device]->max_shared_bytes;
  PlanResult planned = plan_op(request);
  if (planned.status != POLYCHIP_OK) return make_status(planned.status, planned.message);

  if (planned.plan.checks_indices) {
    if (int rc = driver_->fill_bytes(stream.error_word, 0xff, sizeof(uint64_t), stream.native);
        rc != kDriverSuccess)
      return driver_error("reset the error word", rc);
  }
  for (const auto& launch : planned.plan.launches) {
    if (launch->geometry.blocks() == 0) continue;
    NativeFunction f = nullptr;
    if (Status s = function(stream.device, launch->symbol, &f); !s.ok()) return s;
    if (int rc = driver_->launch(f, launch->geometry, stream.native, launch->params.pointers());
        rc != kDriverSuccess)
      return driver_error(launch->symbol.c_str(), rc);
  }
  if (planned.plan.checks_indices) {
    // Index errors must be reported by this call: wait for the word.
    uint64_t word = PC_ERROR_NONE;
    if (int rc = driver_->copy(reinterpret_cast<uint64_t>(&word), stream.error_word, sizeof word,
                               stream.native);
        rc != kDriverSuccess)
      return driver_error("read the error word", rc);
    if (int rc = driver_->stream_synchronize(stream.native); rc != kDriverSuccess)
      return driver_error("stream synchronize", rc);
    if (word != PC_ERROR_NONE)
      return invalid(fmt::format("{}: '{}'[{}] is outside [0, {})", args->op,
                                 planned.plan.index_name, word - 1, planned.plan.index_bound));
  }
  return Status::Ok();
}

}  // namespace polychip::gpu
