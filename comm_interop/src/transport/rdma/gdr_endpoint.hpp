// The GDR path's endpoint (GPUDirect RDMA, docs/comm.md "Paths"): one
// libfabric endpoint per rank, opened with FI_HMEM where the provider has
// it, through which device buffers are registered as they are (adapter ABI
// 1.1's memory_export) and written by peers directly: no host staging on
// either side.
//
// Set-up: every rank publishes an offer (its provider and endpoint address,
// or why it has none) at the rendezvous; the path is on only when every
// rank offered on the same provider. Per call, every rank hands every other
// a CallOffer: whether its buffers can go this way, and the regions peers
// write into. The ring that moves the data is algorithms/gdr_ring.hpp.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "polychip/comm/buffer_ref.hpp"
#include "polychip/memory.hpp"
#include "transport/rdma/fabric_rma.hpp"

namespace polychip::comm {

// One rank's part of a call on the GDR path, exchanged before data moves.
struct CallOffer {
  static constexpr size_t kBytes = 80;
  bool eligible = false;  // false: the call takes the host path on every rank
  RemoteRegion recv;      // the output buffer (all-gather phase lands here)
  RemoteRegion scratch;   // partial sums of the reduce-scatter phase land here
  RemoteRegion credit;    // 8 bytes: "my output may be written now"
  std::vector<uint8_t> encode() const;
  // DATA_CORRUPTION on bytes that are no offer.
  static CallOffer decode(const uint8_t* bytes);
};

class GdrEndpoint {
 public:
  // Throws UNAVAILABLE when no provider opens (FabricRma's reason).
  GdrEndpoint(const std::string& provider, const std::string& node);
  ~GdrEndpoint();
  GdrEndpoint(const GdrEndpoint&) = delete;
  GdrEndpoint& operator=(const GdrEndpoint&) = delete;

  // What this rank publishes at set-up; `no_offer` for a rank without one.
  std::string offer() const;
  static std::string no_offer(const std::string& why);
  // Empty when every rank's offer is usable on one provider, else why not
  // (naming the first rank that cannot).
  static std::string why_not(const std::vector<std::string>& offers);
  // Adds every other rank's endpoint; offers must have passed why_not.
  void connect(int rank, const std::vector<std::string>& offers);

  FabricRma& fabric() { return *fabric_; }
  const std::string& provider() const { return fabric_->provider(); }
  uint64_t peer(int rank) const { return peers_.at(rank); }

  // A user buffer's part in one call: `bytes` from `offset` of the memory
  // its adapter exported for the NIC.
  struct CallBuffer {
    NetworkMemory memory;
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  // Exports `b` (`bytes` from its offset) for this call into `*out`; empty
  // when the NIC can register it, else why not ("opencl:0 cannot export
  // memory ...").
  std::string export_for_call(const BufferRef& b, uint64_t bytes, CallBuffer* out);
  // Registers an exported buffer until release(); returns its region and
  // the address a local write reads it at.
  RemoteRegion register_buffer(const CallBuffer& b, void** local);
  // Ends this call's registrations of user buffers (they may be freed).
  void release();
  // A device buffer of at least `bytes` for incoming partial sums, kept
  // registered between calls; `local` (if not null): the address a local
  // write reads it at.
  const Buffer& scratch(const Device& device, uint64_t bytes, RemoteRegion* region,
                        void** local = nullptr);
  RemoteRegion credit_region() const { return credit_region_; }
  // 8 registered bytes a credit write is sent from.
  const void* credit_source() const { return &credit_[1]; }

 private:
  std::unique_ptr<FabricRma> fabric_;
  std::vector<uint64_t> peers_;
  std::vector<std::pair<const void*, uint64_t>> call_registrations_;
  struct Scratch {
    Buffer buffer;
    void* address = nullptr;
    RemoteRegion region;
  };
  // Keyed by adapter table and device index, as staging's streams are.
  std::map<std::pair<const polychip_adapter_api*, int>, Scratch> scratch_;
  uint64_t credit_[2] = {0, 0};  // [0] lands credits, [1] is their source
  RemoteRegion credit_region_;
};

}  // namespace polychip::comm
