#include "sim_adapter.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "abi_struct_size.hpp"
#include "drift_kernels.hpp"
#include "emulated_kernel.hpp"
#include "handle_registry.hpp"
#include "kernel_error.hpp"
#include "kernel_registry.hpp"
#include "polychip/tensor_bounds.hpp"
#include "sim_memory.hpp"
#include "sim_profiles.hpp"
#include "sim_stream.hpp"

namespace polychip::sim {
namespace {

thread_local std::string t_last_error;

polychip_status fail(polychip_status code, std::string message) {
  t_last_error = std::move(message);
  return code;
}

const char* last_error_message() { return t_last_error.c_str(); }

HandleRegistry<SimMemory>& memories() {
  static HandleRegistry<SimMemory> r;
  return r;
}
HandleRegistry<SimStream>& streams() {
  static HandleRegistry<SimStream> r;
  return r;
}
HandleRegistry<SimEvent>& events() {
  static HandleRegistry<SimEvent> r;
  return r;
}

// Device memory in use per device (the budget is sim_config's memory size).
std::atomic<uint64_t>* memory_in_use() {
  static std::vector<std::atomic<uint64_t>> used(sim_profiles().size());
  return used.data();
}

int device_total() {
  return sim_config().error.empty() ? static_cast<int>(sim_profiles().size()) : 0;
}

template <typename Args>
polychip_status check_args(const Args* a, const char* call) {
  return cpu::check_args_struct(a, call, fail);
}

polychip_status check_device(int device, const char* call) {
  if (device < 0 || device >= device_total())
    return fail(POLYCHIP_NOT_FOUND,
                fmt::format("{}: sim has devices 0..{}, not {}", call, device_total() - 1, device));
  return POLYCHIP_OK;
}

#define SIM_CHECK(expr)               \
  do {                                \
    polychip_status s_ = (expr);      \
    if (s_ != POLYCHIP_OK) return s_; \
  } while (0)

// ---- devices ---------------------------------------------------------------

polychip_status device_count(polychip_device_count_args* a) {
  SIM_CHECK(check_args(a, "device_count"));
  a->count = device_total();
  a->unavailable_reason = a->count ? nullptr : sim_config().error.c_str();
  return POLYCHIP_OK;
}

polychip_status device_properties(polychip_device_properties_args* a) {
  SIM_CHECK(check_args(a, "device_properties"));
  SIM_CHECK(check_device(a->device, "device_properties"));
  if (!a->properties)
    return fail(POLYCHIP_INVALID_ARGUMENT, "device_properties: properties is NULL");
  const SimProfile& profile = sim_profiles()[a->device];
  polychip_device_properties p{};
  p.struct_size = sizeof p;
  std::snprintf(p.device_type, sizeof p.device_type, "%s", profile.device_type);
  if (profile.engine == KernelEngine::kNvidiaEmulation)  // what results record as its provenance
    std::snprintf(p.name, sizeof p.name, "%s", kNvidiaEmulationDeviceName);
  else if (profile.modelled())
    std::snprintf(p.name, sizeof p.name,
                  "modelled chip (%g GFLOP/s, %g GB/s, %g us a launch; faithful numerics)",
                  profile.roofline.gflops, profile.roofline.gbytes_s, profile.roofline.launch_us);
  else
    std::snprintf(p.name, sizeof p.name, "simulated chip (%s)",
                  *profile.defect ? profile.defect : "faithful numerics");
  p.memory_bytes = sim_config().devices[a->device].memory_bytes;
  for (int d :
       {POLYCHIP_DTYPE_F64, POLYCHIP_DTYPE_F32, POLYCHIP_DTYPE_F16, POLYCHIP_DTYPE_BF16,
        POLYCHIP_DTYPE_F8E4M3, POLYCHIP_DTYPE_F8E5M2, POLYCHIP_DTYPE_I32, POLYCHIP_DTYPE_I64})
    p.supported_dtypes |= 1ull << d;
  p.capabilities =
      POLYCHIP_CAP_ASYNC_COPY | POLYCHIP_CAP_TIMING_EVENTS | POLYCHIP_CAP_NETWORK_EXPORT;
  p.compute_units = 1;
  return cpu::write_within_struct_size(p, a->properties, "device_properties", fail);
}

// ---- memory ----------------------------------------------------------------

polychip_status memory_allocate(polychip_memory_allocate_args* a) {
  SIM_CHECK(check_args(a, "memory_allocate"));
  SIM_CHECK(check_device(a->device, "memory_allocate"));
  if (a->kind != POLYCHIP_MEMORY_DEVICE && a->kind != POLYCHIP_MEMORY_PINNED_HOST)
    return fail(POLYCHIP_INVALID_ARGUMENT,
                fmt::format("memory_allocate: unknown kind {}", a->kind));
  if (a->kind == POLYCHIP_MEMORY_DEVICE) {
    const uint64_t budget = sim_config().devices[a->device].memory_bytes;
    auto& used = memory_in_use()[a->device];
    uint64_t before = used.load();
    do {
      if (a->size_bytes > budget - before)
        return fail(
            POLYCHIP_OUT_OF_MEMORY,
            fmt::format("memory_allocate: {} bytes requested, {} of {} free on {}", a->size_bytes,
                        budget - before, budget, sim_profiles()[a->device].device_type));
    } while (!used.compare_exchange_weak(before, before + a->size_bytes));
  }
  try {
    auto m = std::make_shared<SimMemory>(a->device, a->kind, a->size_bytes);
    a->memory = reinterpret_cast<polychip_memory*>(memories().add(std::move(m)));
  } catch (const std::bad_alloc&) {
    if (a->kind == POLYCHIP_MEMORY_DEVICE) memory_in_use()[a->device] -= a->size_bytes;
    return fail(POLYCHIP_OUT_OF_MEMORY,
                fmt::format("memory_allocate: cannot map {} bytes", a->size_bytes));
  }
  return POLYCHIP_OK;
}

polychip_status memory_free(polychip_memory_free_args* a) {
  SIM_CHECK(check_args(a, "memory_free"));
  if (!a->memory) return POLYCHIP_OK;
  auto m = memories().remove(a->memory);
  if (!m) return fail(POLYCHIP_INVALID_ARGUMENT, "memory_free: not a live sim memory handle");
  if (m->kind() == POLYCHIP_MEMORY_DEVICE) memory_in_use()[m->device()] -= m->size();
  return POLYCHIP_OK;  // unmapped when queued work holding it is done
}

polychip_status memory_host_pointer(polychip_memory_host_pointer_args* a) {
  SIM_CHECK(check_args(a, "memory_host_pointer"));
  auto m = memories().find(a->memory);
  if (!m)
    return fail(POLYCHIP_INVALID_ARGUMENT, "memory_host_pointer: not a live sim memory handle");
  if (m->kind() == POLYCHIP_MEMORY_DEVICE)
    return fail(POLYCHIP_UNSUPPORTED,
                "memory_host_pointer: sim device memory is not host visible; use copy");
  a->host_pointer = m->base();
  return POLYCHIP_OK;
}

// Device memory is exported as its host mapping (a NIC on this host can
// register it as system memory), kept unlocked from then on (SimMemory).
polychip_status memory_export(polychip_memory_export_args* a) {
  SIM_CHECK(check_args(a, "memory_export"));
  auto m = memories().find(a->memory);
  if (!m) return fail(POLYCHIP_INVALID_ARGUMENT, "memory_export: not a live sim memory handle");
  a->interface = POLYCHIP_MEMORY_INTERFACE_SYSTEM;
  a->device_ordinal = 0;
  a->address = m->export_to_network();
  a->size_bytes = m->size();
  a->dmabuf_fd = -1;
  a->dmabuf_offset = 0;
  return POLYCHIP_OK;
}

// A memory handle of a copy, checked against [offset, offset + size).
polychip_status copy_side(polychip_memory* handle, uint64_t offset, uint64_t size, const char* side,
                          std::shared_ptr<SimMemory>& out) {
  out = memories().find(handle);
  if (!out)
    return fail(POLYCHIP_INVALID_ARGUMENT,
                fmt::format("copy: {} memory is not a live sim memory handle", side));
  if (offset > out->size() || size > out->size() - offset)
    return fail(POLYCHIP_INVALID_ARGUMENT,
                fmt::format("copy: {} range [{}, {}) is outside the memory of {} bytes", side,
                            offset, offset + size, out->size()));
  return POLYCHIP_OK;
}

polychip_status copy(polychip_copy_args* a) {
  SIM_CHECK(check_args(a, "copy"));
  if (a->kind < POLYCHIP_COPY_HOST_TO_DEVICE || a->kind > POLYCHIP_COPY_DEVICE_TO_DEVICE)
    return fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("copy: unknown kind {}", a->kind));
  std::shared_ptr<SimMemory> src, dst;
  const uint64_t n = a->size_bytes;
  if (a->kind != POLYCHIP_COPY_HOST_TO_DEVICE)
    SIM_CHECK(copy_side(a->src_memory, a->src_offset, n, "source", src));
  if (a->kind != POLYCHIP_COPY_DEVICE_TO_HOST)
    SIM_CHECK(copy_side(a->dst_memory, a->dst_offset, n, "destination", dst));
  const char* src_host = static_cast<const char*>(a->src_host);
  char* dst_host = static_cast<char*>(a->dst_host);
  if (n && a->kind == POLYCHIP_COPY_HOST_TO_DEVICE && !src_host)
    return fail(POLYCHIP_INVALID_ARGUMENT, "copy: src_host is NULL");
  if (n && a->kind == POLYCHIP_COPY_DEVICE_TO_HOST && !dst_host)
    return fail(POLYCHIP_INVALID_ARGUMENT, "copy: dst_host is NULL");
  if (n == 0) return POLYCHIP_OK;
  const uint64_t so = a->src_offset, d_off = a->dst_offset;
  const CopyDefect defect =
      a->kind == POLYCHIP_COPY_DEVICE_TO_HOST   ? sim_profiles()[src->device()].copy_defect
      : a->kind == POLYCHIP_COPY_HOST_TO_DEVICE ? sim_profiles()[dst->device()].copy_defect
                                                : CopyDefect::kNone;
  auto work = [src, dst, src_host, dst_host, so, d_off, n, defect] {
    MemoryAccess access;
    access.add(src.get(), so, n);
    access.add(dst.get(), d_off, n);
    const char* from = src ? src->base() + so : src_host;
    char* to = dst ? dst->base() + d_off : dst_host;
    std::memmove(to, from, n);
    if (!dst) apply_copy_defect(defect, to, n);
    if (!src) apply_upload_defect(defect, dst->base(), d_off);
  };
  if (!a->stream) {
    work();
    return POLYCHIP_OK;
  }
  auto stream = streams().find(a->stream);
  if (!stream) return fail(POLYCHIP_INVALID_ARGUMENT, "copy: not a live sim stream handle");
  stream->enqueue_after_kernels(std::move(work));
  return POLYCHIP_OK;
}

// ---- streams and events ------------------------------------------------------

polychip_status stream_create(polychip_stream_create_args* a) {
  SIM_CHECK(check_args(a, "stream_create"));
  SIM_CHECK(check_device(a->device, "stream_create"));
  a->stream =
      reinterpret_cast<polychip_stream*>(streams().add(std::make_shared<SimStream>(a->device)));
  return POLYCHIP_OK;
}

polychip_status stream_destroy(polychip_stream_args* a) {
  SIM_CHECK(check_args(a, "stream_destroy"));
  if (!streams().remove(a->stream))
    return fail(POLYCHIP_INVALID_ARGUMENT, "stream_destroy: not a live sim stream handle");
  return POLYCHIP_OK;  // the worker drains and joins when the last user lets go
}

polychip_status stream_synchronize(polychip_stream_args* a) {
  SIM_CHECK(check_args(a, "stream_synchronize"));
  auto s = streams().find(a->stream);
  if (!s)
    return fail(POLYCHIP_INVALID_ARGUMENT, "stream_synchronize: not a live sim stream handle");
  s->synchronize();
  sleep_until_precisely(s->kernels_end());
  return POLYCHIP_OK;
}

polychip_status event_create(polychip_event_create_args* a) {
  SIM_CHECK(check_args(a, "event_create"));
  SIM_CHECK(check_device(a->device, "event_create"));
  a->event = reinterpret_cast<polychip_event*>(events().add(std::make_shared<SimEvent>(a->device)));
  return POLYCHIP_OK;
}

polychip_status event_destroy(polychip_event_args* a) {
  SIM_CHECK(check_args(a, "event_destroy"));
  if (!events().remove(a->event))
    return fail(POLYCHIP_INVALID_ARGUMENT, "event_destroy: not a live sim event handle");
  return POLYCHIP_OK;
}

polychip_status event_and_stream(polychip_event_args* a, const char* call,
                                 std::shared_ptr<SimEvent>& e, std::shared_ptr<SimStream>& s) {
  e = events().find(a->event);
  if (!e)
    return fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("{}: not a live sim event handle", call));
  s = streams().find(a->stream);
  if (!s)
    return fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("{}: not a live sim stream handle", call));
  if (s->device() != e->device())
    return fail(POLYCHIP_INVALID_ARGUMENT,
                fmt::format("{}: the event is on device {} but the stream on device {}", call,
                            e->device(), s->device()));
  return POLYCHIP_OK;
}

polychip_status event_record(polychip_event_args* a) {
  SIM_CHECK(check_args(a, "event_record"));
  std::shared_ptr<SimEvent> e;
  std::shared_ptr<SimStream> s;
  SIM_CHECK(event_and_stream(a, "event_record", e, s));
  const uint64_t generation = e->begin_record();
  s->enqueue_after_kernels([e, generation] { e->complete(generation); });
  return POLYCHIP_OK;
}

polychip_status stream_wait_event(polychip_event_args* a) {
  SIM_CHECK(check_args(a, "stream_wait_event"));
  auto e = events().find(a->event);
  if (!e) return fail(POLYCHIP_INVALID_ARGUMENT, "stream_wait_event: not a live sim event handle");
  auto s = streams().find(a->stream);
  if (!s) return fail(POLYCHIP_INVALID_ARGUMENT, "stream_wait_event: not a live sim stream handle");
  const uint64_t generation = e->generation();
  if (generation == 0) return POLYCHIP_OK;  // never recorded: nothing to wait for
  s->enqueue([e, generation] { e->wait(generation); });
  return POLYCHIP_OK;
}

polychip_status event_query(polychip_event_args* a) {
  SIM_CHECK(check_args(a, "event_query"));
  auto e = events().find(a->event);
  if (!e) return fail(POLYCHIP_INVALID_ARGUMENT, "event_query: not a live sim event handle");
  a->complete = e->is_complete() ? 1 : 0;
  return POLYCHIP_OK;
}

polychip_status event_synchronize(polychip_event_args* a) {
  SIM_CHECK(check_args(a, "event_synchronize"));
  auto e = events().find(a->event);
  if (!e) return fail(POLYCHIP_INVALID_ARGUMENT, "event_synchronize: not a live sim event handle");
  e->wait();
  return POLYCHIP_OK;
}

polychip_status event_elapsed(polychip_event_elapsed_args* a) {
  SIM_CHECK(check_args(a, "event_elapsed"));
  auto s = events().find(a->start), e = events().find(a->end);
  if (!s || !e)
    return fail(POLYCHIP_INVALID_ARGUMENT, "event_elapsed: not a live sim event handle");
  if (!s->recorded() || !e->recorded())
    return fail(POLYCHIP_FAILED_PRECONDITION, "event_elapsed: an event was never recorded");
  if (!s->is_complete() || !e->is_complete())
    return fail(POLYCHIP_FAILED_PRECONDITION, "event_elapsed: an event has not completed yet");
  a->milliseconds = std::chrono::duration<double, std::milli>(e->when() - s->when()).count();
  return POLYCHIP_OK;
}

// ---- kernels -----------------------------------------------------------------

polychip_status run_profile_kernel(const SimProfile& profile, const cpu::KernelCall& call,
                                   std::span<char* const> memory_end) {
  switch (profile.engine) {
    case KernelEngine::kNvidiaEmulation:
      return run_emulated_kernel(call);
    case KernelEngine::kCpuKernelsDriftingGemm:
      if (is_drifting_gemm(call)) return run_host_kernel(call, drifting_gemm);
      break;
    case KernelEngine::kCpuKernels:
      break;
  }
  return kernel_defect_touches(profile, call.op)
             ? run_defective_kernel(call, profile.kernel_defect, memory_end)
             : cpu::run_kernel(call);
}

// A slowed device's kernel takes 1/speed of its own time, a modelled-speed
// chip's at least its roofline time: that is added to the stream's device
// timeline (sim_stream.hpp). A faithful device at full speed adds nothing.
void pace_to_device_speed(SimStream& stream, const SimProfile& profile, double speed,
                          const cpu::KernelCall& call, Clock::time_point start) {
  const Clock::duration elapsed = Clock::now() - start;
  auto device_time = std::chrono::duration_cast<Clock::duration>(elapsed / speed);
  if (profile.modelled())
    device_time = std::max(
        device_time, std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                         roofline_seconds(profile.roofline, kernel_work(call)))));
  if (device_time > elapsed) stream.add_kernel_time(start, device_time);
}

// The one kernel entry: drains the stream, unlocks the tensors' memory,
// runs the profile's kernel (the cpu kernel with the device's numerics, or
// the NVIDIA emulation), then stretches the time to the device's speed.
polychip_status sim_kernel(const polychip_kernel_args* args) {
  if (!args || !args->op || !args->tensors || !args->attrs || args->num_tensors < 0 ||
      args->num_tensors > POLYCHIP_MAX_OP_TENSORS)
    return fail(POLYCHIP_INVALID_ARGUMENT,
                "sim kernel: op, tensors or attrs missing, or num_tensors out of range");
  const char* op = args->op;
  SIM_CHECK(check_device(args->device, op));
  auto stream = streams().find(args->stream);
  if (!stream || stream->device() != args->device)
    return fail(
        POLYCHIP_INVALID_ARGUMENT,
        fmt::format("{}: the stream is not a live stream of sim device {}", op, args->device));
  try {
    std::shared_ptr<SimMemory> keep[POLYCHIP_MAX_OP_TENSORS];
    cpu::TensorView views[POLYCHIP_MAX_OP_TENSORS];
    char* memory_end[POLYCHIP_MAX_OP_TENSORS] = {};
    MemoryAccess access;
    for (int32_t k = 0; k < args->num_tensors; ++k) {
      const polychip_tensor& t = args->tensors[k];
      keep[k] = t.memory ? memories().find(t.memory) : nullptr;
      if (t.memory && !keep[k])
        return fail(POLYCHIP_INVALID_ARGUMENT,
                    fmt::format("{}: tensor {} has no live sim memory", op, k));
      if (keep[k] && keep[k]->kind() == POLYCHIP_MEMORY_DEVICE && keep[k]->device() != args->device)
        return fail(POLYCHIP_INVALID_ARGUMENT,
                    fmt::format("{}: tensor {} lives on sim device {}, the kernel runs on {}", op,
                                k, keep[k]->device(), args->device));
      if (auto why = check_tensor_bounds(t, keep[k] ? keep[k]->size() : 0, k); !why.empty())
        return fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("{}: {}", op, why));
      views[k] = cpu::make_view(t, keep[k] ? keep[k]->base() + t.byte_offset : nullptr);
      if (keep[k]) memory_end[k] = keep[k]->base() + keep[k]->size();
    }
    stream->synchronize();  // kernels run in stream order
    for (int32_t k = 0; k < args->num_tensors; ++k) access.add(keep[k].get());
    const SimProfile& profile = sim_profiles()[args->device];
    const auto n = static_cast<size_t>(args->num_tensors);
    const cpu::KernelCall call{op, {views, n}, args->attrs, &profile.numerics};
    const auto start = Clock::now();
    const polychip_status st = run_profile_kernel(profile, call, {memory_end, n});
    pace_to_device_speed(*stream, profile, sim_config().devices[args->device].speed, call, start);
    return st == POLYCHIP_OK ? st : fail(st, cpu::last_kernel_error());
  } catch (const std::exception& e) {
    return fail(POLYCHIP_INTERNAL, fmt::format("{}: {}", op, e.what()));
  }
}

polychip_status kernel_table(polychip_kernel_table_args* a) {
  SIM_CHECK(check_args(a, "kernel_table"));
  SIM_CHECK(check_device(a->device, "kernel_table"));
  static const std::vector<polychip_kernel_entry> entries =
      cpu::contract_kernel_entries(sim_kernel);
  a->entries = entries.data();
  a->num_entries = static_cast<int32_t>(entries.size());
  return POLYCHIP_OK;
}

const polychip_adapter_api kApi = POLYCHIP_ADAPTER_API_V1_1_INIT("sim", "polychip", "0.1.0");

}  // namespace
}  // namespace polychip::sim

extern "C" const polychip_adapter_api* polychip_sim_adapter_get_api(void) {
  return &polychip::sim::kApi;
}
