// One-sided RMA over libfabric (FI_EP_RDM, FI_MSG + FI_RMA): the building
// block of the H2D-RDMA and GDR paths (docs/comm.md, "RDMA"). An endpoint
// on one provider — `verbs;ofi_rxm` on InfiniBand/RoCE, `efa`, `cxi`, and
// here `tcp;ofi_rxm` and `shm` — registers memory (with a cache), exports
// each region as an address and key a peer can write into, and writes into
// a peer's region with 64 bits of immediate data that the peer sees as a
// completion: the data landed.
//
// The transport's RDMA lanes (rma_ring.hpp) post writes and progress the
// queue themselves; tests: comm_interop/tests/fabric_rma_test.cpp.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "polychip/adapter_abi.h"
#include "wire/remote_region.hpp"

struct fi_info;
struct fid_fabric;
struct fid_domain;
struct fid_ep;
struct fid_av;
struct fid_cq;
struct fid_mr;

namespace polychip::comm {

// A completed remote write seen by its target: the writer's immediate data
// (which says who wrote and what, by the caller's convention).
struct WriteNotice {
  uint64_t data = 0;
};

// The local end of a posted write: done once the provider let go of the
// source, with `error` set when the write failed.
struct WriteCompletion {
  bool done = false;
  std::string error;
};

class FabricRma {
 public:
  // `provider`: a libfabric provider name ("tcp;ofi_rxm", "shm", "verbs;ofi_rxm",
  // ...); empty: POLYCHIP_NET_PROVIDER if set, else the first of
  // kPreferredProviders present. `node`: the address to bind (e.g.
  // "127.0.0.1"), empty for the provider's default. Throws UNAVAILABLE
  // naming the provider and libfabric's reason when none can be opened.
  // `device_memory`: ask for FI_HMEM (GPUDirect RDMA: device memory
  // registered as it is); a provider without it opens for system memory
  // only, which can_register() then says.
  explicit FabricRma(const std::string& provider = "", const std::string& node = "",
                     bool device_memory = false);
  ~FabricRma();
  FabricRma(const FabricRma&) = delete;
  FabricRma& operator=(const FabricRma&) = delete;

  static const std::vector<std::string>& preferred_providers();

  const std::string& provider() const { return provider_; }
  // This endpoint's address, for a peer's add_peer.
  std::vector<uint8_t> address() const;
  // Returns the handle writes to that peer use. INVALID_ARGUMENT on bytes
  // that are no address of this provider.
  uint64_t add_peer(const std::vector<uint8_t>& address);

  // Registers [data, data + size) for local use and remote writes; cached, so
  // registering the same region again, or part of it, is free (the region
  // returned is always exactly the range asked for). The registration lives
  // until the endpoint is destroyed or deregister_memory ends it.
  RemoteRegion register_memory(void* data, uint64_t size);
  // The same for memory an adapter exported (adapter ABI 1.1's
  // memory_export, polychip::Buffer::network_export): system memory, or a
  // device's memory the NIC reaches directly (GPUDirect RDMA; `device`: the
  // interface's device index). UNSUPPORTED, naming the provider, for device
  // memory when the endpoint has no FI_HMEM (it then reaches only system
  // memory; sim and cpu devices export theirs as such), and for a dma-buf,
  // which this libfabric (< 1.20, no FI_MR_DMABUF) cannot register.
  RemoteRegion register_memory(void* data, uint64_t size, polychip_memory_interface where,
                               int device);
  // Whether memory exported as `where` can be registered.
  bool can_register(polychip_memory_interface where) const;
  // Ends the registration of exactly [data, data + size), if there is one:
  // done before the memory is freed, so neither a stale cache entry nor a
  // peer's late write can reach whatever is allocated there next.
  void deregister_memory(const void* data, uint64_t size);

  // A caller's memory that writes are posted from directly (zero-copy), for
  // as long as they take: registered on its own, outside the cache, and
  // ended by end_lent once its writes completed, so no registration
  // outlives the loan (a registration a later allocation could reuse would
  // send stale pinned pages on verbs).
  struct LentMemory {
    fid_mr* mr = nullptr;
    void* descriptor = nullptr;
  };
  LentMemory lend_memory(const void* data, uint64_t size);
  void end_lent(LentMemory& lent);

  // Writes `size` bytes from `local` (inside a registered region) to
  // `remote.address + offset` of peer `peer`, with `immediate` delivered to
  // the peer as a WriteNotice, and waits for the local completion.
  // INVALID_ARGUMENT when the write leaves `remote`; a provider error names
  // the peer and libfabric's reason; DEADLINE_EXCEEDED after `timeout_seconds`.
  void write(uint64_t peer, const void* local, uint64_t size, const RemoteRegion& remote,
             uint64_t offset, uint64_t immediate, double timeout_seconds);
  // Waits for the next remote write into this endpoint's regions.
  WriteNotice wait_write(double timeout_seconds);

  // Non-blocking form of write(): posts it and returns true, or false when
  // the provider's queue or this endpoint's write contexts are full (call
  // progress() and try again). `completion` is reset, then filled in by
  // progress(); it must outlive the write. `lent`: `local` lies in that
  // loan (not in a registered region).
  bool post_write(uint64_t peer, const void* local, uint64_t size, const RemoteRegion& remote,
                  uint64_t offset, uint64_t immediate, WriteCompletion* completion,
                  const LentMemory* lent = nullptr);
  // Stops reporting to `completion` (its owner is going away while the
  // write may still be posted); the write keeps its slot until it ends.
  void forget(const WriteCompletion* completion);
  // Progresses the completion queue once: finished or failed writes fill in
  // their completion, remote writes queue notices. Any other failed
  // operation throws UNAVAILABLE.
  void progress();
  // The oldest queued notice of a remote write, if any.
  bool next_notice(WriteNotice* notice);
  // Bytes of immediate data a write carries (4 on verbs, 8 on tcp and shm).
  size_t immediate_bytes() const;

 private:
  struct Registration {
    fid_mr* mr = nullptr;
    uintptr_t begin = 0;  // of the registered range
    RemoteRegion region;  // all of it
  };
  struct ReceiveSlot;
  struct WriteSlot;
  fid_mr* register_region(const void* data, uint64_t size, uint64_t access,
                          polychip_memory_interface where, int device);
  const Registration& registration_for(
      const void* data, uint64_t size,
      polychip_memory_interface where = POLYCHIP_MEMORY_INTERFACE_SYSTEM, int device = 0);
  void check_write(uint64_t size, const RemoteRegion& remote, uint64_t offset,
                   uint64_t immediate) const;
  void post_receive(ReceiveSlot& slot);
  void close_all();

  std::string provider_;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  uint64_t next_key_ = 1;
  std::map<std::pair<uintptr_t, uint64_t>, Registration> registrations_;
  std::deque<WriteNotice> notices_;
  // Contexts of posted writes; a slot is free again at its completion (a
  // timed-out write keeps its slot until the provider lets go of it).
  std::vector<std::unique_ptr<WriteSlot>> writes_;
  static constexpr size_t kWriteSlots = 64;
  // Receives kept posted for providers that consume one per remote write
  // with immediate data (FI_RX_CQ_DATA); each is reposted when consumed.
  std::vector<std::unique_ptr<ReceiveSlot>> receives_;
  static constexpr size_t kPostedReceives = 64;
};

}  // namespace polychip::comm
