#include "staging.hpp"

#include "polychip/error.hpp"

namespace polychip::comm {
namespace {

void check_capacity(const BufferRef& b, uint64_t bytes) {
  if (!b.on_device()) {
    if (b.host() == nullptr && bytes > 0) {
      throw_error(StatusCode::kInvalidArgument,
                  "buffer: null host pointer for " + std::to_string(bytes) + " bytes");
    }
    return;
  }
  if (b.memory() == nullptr)
    throw_error(StatusCode::kInvalidArgument, "buffer: null device memory");
  if (b.capacity() < bytes) {
    throw_error(StatusCode::kInvalidArgument,
                "buffer on " + b.device()->label() + " holds " + std::to_string(b.capacity()) +
                    " bytes from its offset, the collective needs " + std::to_string(bytes));
  }
}

}  // namespace

bool Staging::host_visible(const BufferRef& b) const {
  if (!b.on_device()) return true;
  if (!b.device()->properties().has(POLYCHIP_CAP_HOST_VISIBLE_MEMORY)) return false;
  return b.device()->api().memory_host_pointer != nullptr;
}

uint8_t* Staging::mapped(const BufferRef& b, uint64_t bytes) const {
  if (!b.on_device()) return static_cast<uint8_t*>(b.host());
  polychip_memory_host_pointer_args args{};
  args.struct_size = sizeof(args);
  args.memory = b.memory();
  b.device()->check(b.device()->api().memory_host_pointer(&args), "memory_host_pointer");
  return static_cast<uint8_t*>(args.host_pointer) + b.offset();
}

uint8_t* Staging::input(const BufferRef& b, uint64_t bytes, std::vector<Lease>& leases) {
  check_capacity(b, bytes);
  if (host_visible(b)) return mapped(b, bytes);
  leases.emplace_back();
  Lease& lease = leases.back();
  lease.storage.resize(bytes);
  if (bytes > 0) {
    polychip_copy_args args{};
    args.struct_size = sizeof(args);
    args.kind = POLYCHIP_COPY_DEVICE_TO_HOST;
    args.src_memory = b.memory();
    args.src_offset = b.offset();
    args.dst_host = lease.storage.data();
    args.size_bytes = bytes;
    b.device()->check(b.device()->api().copy(&args), "copy (device to host staging)");
  }
  return lease.storage.data();
}

uint8_t* Staging::output(const BufferRef& b, uint64_t bytes, std::vector<Lease>& leases) {
  check_capacity(b, bytes);
  if (host_visible(b)) return mapped(b, bytes);
  leases.emplace_back();
  leases.back().storage.resize(bytes);
  return leases.back().storage.data();
}

void Staging::copy_back(const BufferRef& b, const uint8_t* host, uint64_t bytes) {
  if (!staged(b) || bytes == 0) return;
  polychip_copy_args args{};
  args.struct_size = sizeof(args);
  args.kind = POLYCHIP_COPY_HOST_TO_DEVICE;
  args.src_host = host;
  args.dst_memory = b.memory();
  args.dst_offset = b.offset();
  args.size_bytes = bytes;
  b.device()->check(b.device()->api().copy(&args), "copy (host staging to device)");
}

}  // namespace polychip::comm
