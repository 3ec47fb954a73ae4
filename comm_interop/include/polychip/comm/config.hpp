// Tunables of a communicator, read from POLYCHIP_COMM_* environment
// variables (docs/comm.md lists them). Every rank must use the same
// algorithm, chunk and checksum settings; mismatches fail with a clear
// protocol error rather than silently.
#pragma once

#include <cstdint>
#include <string>

namespace polychip::comm {

struct CommConfig {
  double timeout_seconds = 300;     // POLYCHIP_COMM_TIMEOUT: every operation and setup
  bool checksum = false;            // POLYCHIP_COMM_CHECKSUM=1: CRC32C on every payload
  int sockets_per_peer = 2;         // POLYCHIP_COMM_SOCKETS
  uint64_t chunk_bytes = 1 << 20;   // POLYCHIP_COMM_CHUNK_BYTES: pipelining unit
  uint64_t small_bytes = 64 << 10;  // POLYCHIP_COMM_SMALL_BYTES: direct algorithm at or below
  std::string algorithm = "auto";   // POLYCHIP_COMM_ALGO: auto | ring | direct
  // POLYCHIP_COMM_PATH: auto (GDR when the transport is rdma, else host
  // staging; hierarchical across islands with a vendor CCL) | host (host
  // memory or staging) | hierarchical | gdr (GPUDirect RDMA: device buffers
  // registered with the NIC; sums of float dtypes (all-reduce,
  // reduce-scatter, reduce), all-gather and broadcast, on devices whose
  // adapter exports memory (and has an add kernel); any other call, or a
  // call some rank cannot take, takes the host path, the reason on stderr).
  std::string path = "auto";
  // POLYCHIP_COMM_TRANSPORT: auto (shared memory between ranks that can map
  // each other's; RDMA to other hosts when a NIC's libfabric provider opens;
  // TCP otherwise) | tcp (TCP everywhere) | rdma (RDMA lanes to every peer,
  // on POLYCHIP_NET_PROVIDER or the first provider that opens, tcp;ofi_rxm
  // and shm included). A lane that cannot be set up stays on TCP, with the
  // reason on stderr.
  std::string transport = "auto";
  // POLYCHIP_COMM_SHM_BYTES: shared-memory and RDMA ring per direction and peer
  uint64_t shm_ring_bytes = 1 << 20;
  // POLYCHIP_COMM_RDMA_PLACEMENT=0: RDMA peers write every payload into the
  // receiver's ring, none straight into the buffer it is meant for (which
  // saves the receiver a copy out of the ring per byte).
  bool rdma_placement = true;
  // POLYCHIP_COMM_STAGING: auto (overlap where the device copies on an
  // engine of its own, POLYCHIP_CAP_COPY_ENGINE) | overlap (device buffers
  // of adapters with async copies stream through the all-reduce) | whole
  // (copy in, run, copy out).
  std::string staging = "auto";
  std::string listen_address;        // POLYCHIP_COMM_LISTEN_ADDR (bind; default any)
  std::string advertise_address;     // POLYCHIP_COMM_ADVERTISE_ADDR (default: route to store)
  std::string device_type = "host";  // this rank's device type ("vendor.model")
  std::string vendor = "host";

  // Defaults overridden by the environment; throws INVALID_ARGUMENT naming
  // the variable on a malformed value.
  static CommConfig from_environment();
};

}  // namespace polychip::comm
