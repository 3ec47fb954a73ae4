#include "transport/rdma/gdr_endpoint.hpp"

#include <fmt/format.h>

#include "polychip/error.hpp"
#include "wire/byte_io.hpp"
#include "wire/wire.hpp"

namespace polychip::comm {
namespace {

constexpr uint32_t kCallOfferMagic = 0x31524447;  // "GDR1"
const char kOfferPrefix[] = "gdr1 ";
const char kNoOfferPrefix[] = "none ";

// "gdr1 <provider>\n<address hex>" -> provider, address; false for a refusal.
bool parse_offer(const std::string& offer, std::string* provider, std::string* address) {
  if (offer.rfind(kOfferPrefix, 0) != 0) return false;
  const size_t newline = offer.find('\n');
  if (newline == std::string::npos) return false;
  *provider = offer.substr(sizeof kOfferPrefix - 1, newline - (sizeof kOfferPrefix - 1));
  *address = offer.substr(newline + 1);
  return !provider->empty() && !address->empty() && address->size() % 2 == 0;
}

}  // namespace

std::vector<uint8_t> CallOffer::encode() const {
  ByteWriter w;
  w.u32(kCallOfferMagic);
  w.u32(eligible ? 1 : 0);
  write_region(w, recv);
  write_region(w, scratch);
  write_region(w, credit);
  w.bytes().resize(kBytes, 0);
  return w.bytes();
}

CallOffer CallOffer::decode(const uint8_t* bytes) {
  ByteReader r({bytes, kBytes}, "GDR call offer");
  if (r.u32("magic") != kCallOfferMagic)
    throw_error(StatusCode::kDataCorruption, "GDR call offer: bad magic");
  CallOffer offer;
  const uint32_t eligible = r.u32("eligible");
  if (eligible > 1) throw_error(StatusCode::kDataCorruption, "GDR call offer: bad eligibility");
  offer.eligible = eligible == 1;
  offer.recv = read_region(r, "recv region");
  offer.scratch = read_region(r, "scratch region");
  offer.credit = read_region(r, "credit region");
  return offer;
}

GdrEndpoint::GdrEndpoint(const std::string& provider, const std::string& node)
    : fabric_(std::make_unique<FabricRma>(provider, node, /*device_memory=*/true)) {
  credit_region_ = fabric_->register_memory(credit_, sizeof credit_);
  credit_region_.size = sizeof credit_[0];  // peers land credits in [0] only
}

GdrEndpoint::~GdrEndpoint() {
  release();
  // The scratch buffers' registrations end before their memory is freed.
  for (auto& [key, s] : scratch_) fabric_->deregister_memory(s.address, s.region.size);
}

std::string GdrEndpoint::offer() const {
  return kOfferPrefix + fabric_->provider() + "\n" + to_hex(fabric_->address());
}

std::string GdrEndpoint::no_offer(const std::string& why) { return kNoOfferPrefix + why; }

std::string GdrEndpoint::why_not(const std::vector<std::string>& offers) {
  std::string first_provider;
  for (size_t r = 0; r < offers.size(); ++r) {
    std::string provider, address;
    if (!parse_offer(offers[r], &provider, &address)) {
      const std::string& o = offers[r];
      return fmt::format("rank {} has no GDR endpoint ({})", r,
                         o.rfind(kNoOfferPrefix, 0) == 0 ? o.substr(sizeof kNoOfferPrefix - 1)
                                                         : "a malformed offer");
    }
    if (first_provider.empty()) first_provider = provider;
    if (provider != first_provider)
      return fmt::format("rank 0 offered provider {} and rank {} provider {}", first_provider, r,
                         provider);
  }
  return {};
}

void GdrEndpoint::connect(int rank, const std::vector<std::string>& offers) {
  peers_.assign(offers.size(), 0);
  for (size_t r = 0; r < offers.size(); ++r) {
    if (static_cast<int>(r) == rank) continue;
    std::string provider, address;
    if (!parse_offer(offers[r], &provider, &address))
      throw_error(StatusCode::kInvalidArgument, fmt::format("rank {}: no GDR offer", r));
    peers_[r] = fabric_->add_peer(from_hex(address, "GDR offer address"));
  }
}

std::string GdrEndpoint::export_for_call(const BufferRef& b, uint64_t bytes, CallBuffer* out) {
  if (!b.on_device()) return "a host pointer (the host path already uses it in place)";
  if (b.capacity() < bytes)
    return fmt::format("{} bytes from offset {} leave the buffer", bytes, b.offset());
  try {
    out->memory = network_export(*b.device(), b.memory(), b.offset() + bytes);
  } catch (const Error& e) {
    return e.message();
  }
  out->offset = b.offset();
  out->bytes = bytes;
  if (!fabric_->can_register(out->memory.interface))
    return fmt::format("{} exports {} memory, which {} cannot register", b.device()->label(),
                       memory_interface_name(out->memory.interface), fabric_->provider());
  return {};
}

RemoteRegion GdrEndpoint::register_buffer(const CallBuffer& b, void** local) {
  *local = static_cast<uint8_t*>(b.memory.address) + b.offset;
  const RemoteRegion region =
      fabric_->register_memory(*local, b.bytes, b.memory.interface, b.memory.device_ordinal);
  call_registrations_.emplace_back(*local, b.bytes);
  return region;
}

void GdrEndpoint::release() {
  for (const auto& [address, bytes] : call_registrations_)
    fabric_->deregister_memory(address, bytes);
  call_registrations_.clear();
}

const Buffer& GdrEndpoint::scratch(const Device& device, uint64_t bytes, RemoteRegion* region,
                                   void** local) {
  Scratch& s = scratch_[{&device.api(), device.index()}];
  if (s.buffer.size() < bytes) {
    if (s.address) fabric_->deregister_memory(s.address, s.region.size);
    s = Scratch{};
    s.buffer = Buffer(device, bytes);
    const NetworkMemory m = s.buffer.network_export();
    s.address = m.address;
    s.region = fabric_->register_memory(m.address, bytes, m.interface, m.device_ordinal);
  }
  *region = s.region;
  if (local) *local = s.address;
  return s.buffer;
}

}  // namespace polychip::comm
