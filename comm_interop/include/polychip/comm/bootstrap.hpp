// Where ranks come from: NCCL-style unique ids, or the environment of an
// existing launcher (torchrun, Open MPI, PMI, Slurm).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace polychip::comm {

// 128 opaque bytes (like ncclUniqueId): the rendezvous address and a fresh
// 32-byte job secret. Rank 0 creates it and sends it to the other ranks
// over a trusted channel (MPI_Bcast, a file, ...); whoever holds it can join.
struct UniqueId {
  std::array<uint8_t, 128> bytes{};
  std::string to_hex() const;
  // Throws INVALID_ARGUMENT on a malformed id.
  static UniqueId from_hex(const std::string& hex);
};

// Rank, world and rendezvous point as the launcher describes them.
struct LaunchInfo {
  int rank = 0;
  int world = 1;
  std::string launcher;        // "torchrun", "openmpi", "pmi", "slurm", "polychip"
  std::string master_address;  // rank 0's store
  uint16_t master_port = 0;
  bool master_port_derived = false;  // no MASTER_PORT: derived from the job id
  // POLYCHIP_COMM_STORE_FD (rank 0 only): the store's socket, bound and held
  // by the local launcher since it chose the port, so no other process can
  // take the port before rank 0 serves it. -1: rank 0 binds the port itself.
  int store_listener_fd = -1;
  std::string job_key;  // launcher's job identity (derives the default secret)
  std::vector<uint8_t> secret;
  bool secret_from_environment = false;  // POLYCHIP_COMM_SECRET (hex or text)
};

// Without MASTER_PORT the store port is derived from the job id within
// [kDerivedPortFirst, kDerivedPortFirst + kDerivedPortCount): below the
// kernel's default ephemeral range, so no outgoing connection holds it.
inline constexpr uint16_t kDerivedPortFirst = 20000;
inline constexpr uint16_t kDerivedPortCount = 12768;  // up to 32767

// Reads RANK/WORLD_SIZE (torchrun), OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/
// PMI_SIZE, SLURM_PROCID/SLURM_NTASKS (first found, in this order), plus
// MASTER_ADDR / MASTER_PORT (defaults: 127.0.0.1 or the first Slurm node,
// and a port derived from the job id). Throws NOT_FOUND naming the
// variables when no launcher is recognised.
LaunchInfo detect_launch();

// The first host of a Slurm node list ("node[03-05,7]" -> "node03").
std::string first_slurm_host(const std::string& nodelist);

}  // namespace polychip::comm
