#include "polychip/comm/bootstrap.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string_view>

#include "polychip/comm/config.hpp"
#include "polychip/error.hpp"
#include "security/hmac_sha256.hpp"
#include "wire/wire.hpp"

namespace polychip::comm {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

long parse_long(const char* name, const char* text, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
    throw_error(StatusCode::kInvalidArgument, std::string(name) + "='" + text +
                                                  "' is not an integer in [" + std::to_string(lo) +
                                                  ", " + std::to_string(hi) + "]");
  }
  return v;
}

double parse_double(const char* name, const char* text) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v > 0)) {
    throw_error(StatusCode::kInvalidArgument,
                std::string(name) + "='" + text + "' is not a positive number of seconds");
  }
  return v;
}

// The usual boolean spellings, any case; anything else is refused naming
// the variable (a misspelt "ture" must not silently mean off).
bool parse_bool(const char* name, const char* text) {
  std::string v = text;
  for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* yes : {"1", "true", "yes", "on"}) {
    if (v == yes) return true;
  }
  for (const char* no : {"0", "false", "no", "off"}) {
    if (v == no) return false;
  }
  throw_error(StatusCode::kInvalidArgument,
              std::string(name) + "='" + text + "': expected 1/0, true/false, yes/no or on/off");
}

// Sets `out` from variable `name` when it is set to one of `choices`.
void read_choice(const char* name, std::initializer_list<const char*> choices, std::string& out) {
  const char* v = env(name);
  if (!v) return;
  std::string expected;
  for (const char* choice : choices) {
    if (std::string_view(v) == choice) {
      out = v;
      return;
    }
    expected += (expected.empty() ? "" : ", ") + std::string(choice);
  }
  throw_error(StatusCode::kInvalidArgument,
              std::string(name) + "='" + v + "': expected one of " + expected);
}

// Every listener (store, mesh) is IPv4, so an IPv6 literal can never be
// reached: refused naming the variable rather than retried until the timeout.
std::string ipv4_host(const char* name, const char* text) {
  if (std::strpbrk(text, ":[]") != nullptr) {
    throw_error(StatusCode::kInvalidArgument,
                std::string(name) + "='" + text +
                    "': polychip listens on IPv4 only; give an IPv4 address or a host name "
                    "that has one");
  }
  return text;
}

}  // namespace

CommConfig CommConfig::from_environment() {
  CommConfig c;
  if (const char* v = env("POLYCHIP_COMM_TIMEOUT"))
    c.timeout_seconds = parse_double("POLYCHIP_COMM_TIMEOUT", v);
  if (const char* v = env("POLYCHIP_COMM_CHECKSUM")) {
    c.checksum = parse_bool("POLYCHIP_COMM_CHECKSUM", v);
  }
  if (const char* v = env("POLYCHIP_COMM_RDMA_PLACEMENT")) {
    c.rdma_placement = parse_bool("POLYCHIP_COMM_RDMA_PLACEMENT", v);
  }
  if (const char* v = env("POLYCHIP_COMM_SOCKETS")) {
    c.sockets_per_peer = static_cast<int>(parse_long("POLYCHIP_COMM_SOCKETS", v, 1, 16));
  }
  if (const char* v = env("POLYCHIP_COMM_CHUNK_BYTES")) {
    c.chunk_bytes =
        static_cast<uint64_t>(parse_long("POLYCHIP_COMM_CHUNK_BYTES", v, 4096, long{64} << 20));
  }
  if (const char* v = env("POLYCHIP_COMM_SMALL_BYTES")) {
    c.small_bytes =
        static_cast<uint64_t>(parse_long("POLYCHIP_COMM_SMALL_BYTES", v, 0, long{1} << 40));
  }
  read_choice("POLYCHIP_COMM_ALGO", {"auto", "ring", "direct"}, c.algorithm);
  read_choice("POLYCHIP_COMM_PATH", {"auto", "host", "hierarchical", "gdr"}, c.path);
  read_choice("POLYCHIP_COMM_TRANSPORT", {"auto", "tcp", "rdma"}, c.transport);
  read_choice("POLYCHIP_COMM_STAGING", {"auto", "overlap", "whole"}, c.staging);
  if (const char* v = env("POLYCHIP_COMM_SHM_BYTES")) {
    long bytes = parse_long("POLYCHIP_COMM_SHM_BYTES", v, 4096, long{1} << 30);
    if ((bytes & (bytes - 1)) != 0) {
      throw_error(StatusCode::kInvalidArgument,
                  std::string("POLYCHIP_COMM_SHM_BYTES='") + v + "': expected a power of two");
    }
    c.shm_ring_bytes = static_cast<uint64_t>(bytes);
  }
  if (const char* v = env("POLYCHIP_COMM_LISTEN_ADDR")) c.listen_address = v;
  if (const char* v = env("POLYCHIP_COMM_ADVERTISE_ADDR"))
    c.advertise_address = ipv4_host("POLYCHIP_COMM_ADVERTISE_ADDR", v);
  return c;
}

std::string first_slurm_host(const std::string& nodelist) {
  // "a[01-03,7],b" -> "a01"; "node5,node6" -> "node5".
  std::string head;
  size_t i = 0;
  while (i < nodelist.size() && nodelist[i] != ',' && nodelist[i] != '[') head += nodelist[i++];
  if (i < nodelist.size() && nodelist[i] == '[') {
    ++i;
    std::string first;
    while (i < nodelist.size() && std::isdigit(static_cast<unsigned char>(nodelist[i]))) {
      first += nodelist[i++];
    }
    head += first;
  }
  return head;
}

LaunchInfo detect_launch() {
  LaunchInfo info;
  struct Source {
    const char *name, *rank, *world, *job;
  };
  const Source sources[] = {
      {"torchrun", "RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID"},
      {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid"},
      {"pmi", "PMI_RANK", "PMI_SIZE", "PMI_ID"},
      {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID"},
  };
  const Source* found = nullptr;
  for (const Source& s : sources) {
    if (env(s.rank) && env(s.world)) {
      found = &s;
      break;
    }
  }
  if (!found) {
    throw_error(StatusCode::kNotFound,
                "no launcher environment found: set RANK/WORLD_SIZE (torchrun style), or run "
                "under mpirun (OMPI_COMM_WORLD_RANK/SIZE), a PMI launcher (PMI_RANK/PMI_SIZE) "
                "or srun (SLURM_PROCID/SLURM_NTASKS)");
  }
  info.launcher = found->name;
  info.world = static_cast<int>(parse_long(found->world, env(found->world), 1, kMaxWorld));
  info.rank = static_cast<int>(parse_long(found->rank, env(found->rank), 0, info.world - 1));
  if (const char* j = env(found->job)) info.job_key = j;
  if (info.launcher == "slurm" && env("SLURM_STEP_ID")) {
    info.job_key += std::string(".") + env("SLURM_STEP_ID");
  }
  if (const char* a = env("MASTER_ADDR")) {
    info.master_address = ipv4_host("MASTER_ADDR", a);
  } else if (info.launcher == "slurm" &&
             (env("SLURM_STEP_NODELIST") || env("SLURM_JOB_NODELIST"))) {
    info.master_address = first_slurm_host(env("SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST")
                                                                      : env("SLURM_JOB_NODELIST"));
  } else {
    const char* local = env("OMPI_COMM_WORLD_LOCAL_SIZE");
    bool one_node =
        info.world == 1 || (local && std::atoi(local) == info.world) || info.launcher == "torchrun";
    if (!one_node) {
      throw_error(StatusCode::kInvalidArgument,
                  "ranks span several hosts: set MASTER_ADDR to rank 0's host (mpirun: -x "
                  "MASTER_ADDR=<host>)");
    }
    info.master_address = "127.0.0.1";
  }
  if (const char* p = env("MASTER_PORT")) {
    info.master_port = static_cast<uint16_t>(parse_long("MASTER_PORT", p, 1, 65535));
  } else {
    // Derived from the job id so concurrent jobs on one host do not collide,
    // and kept below Linux's ephemeral range (32768-60999 by default): a port
    // there can be held by any outgoing connection or port-0 listener on the
    // host (CI saw rank 0's bind of 35662 fail beside other tests).
    Digest h = sha256({reinterpret_cast<const uint8_t*>(info.job_key.data()), info.job_key.size()});
    info.master_port =
        static_cast<uint16_t>(kDerivedPortFirst + ((h[0] << 8 | h[1]) % kDerivedPortCount));
    info.master_port_derived = true;
  }
  if (const char* f = env("POLYCHIP_COMM_STORE_FD"); f && info.rank == 0) {
    info.store_listener_fd = static_cast<int>(parse_long("POLYCHIP_COMM_STORE_FD", f, 0, 1 << 20));
  }
  if (const char* s = env("POLYCHIP_COMM_SECRET")) {
    info.secret_from_environment = true;
    std::string text = s;
    if (text.size() >= 32 && text.size() % 2 == 0 &&
        text.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos) {
      info.secret = from_hex(text, "POLYCHIP_COMM_SECRET");
    } else {
      info.secret.assign(text.begin(), text.end());
    }
  } else {
    // Launcher-derived: only as secret as the job id and rendezvous point
    // (documented in docs/comm.md); set POLYCHIP_COMM_SECRET on shared networks.
    std::string material = "polychip-comm launcher secret v1|" + info.launcher + "|" +
                           info.job_key + "|" + info.master_address + ":" +
                           std::to_string(info.master_port);
    Digest d = sha256({reinterpret_cast<const uint8_t*>(material.data()), material.size()});
    info.secret.assign(d.begin(), d.end());
  }
  return info;
}

std::string UniqueId::to_hex() const { return comm::to_hex(bytes); }

UniqueId UniqueId::from_hex(const std::string& hex) {
  std::vector<uint8_t> raw = comm::from_hex(hex, "unique id");
  if (raw.size() != 128) {
    throw_error(StatusCode::kInvalidArgument,
                "unique id: " + std::to_string(raw.size()) + " bytes, expected 128");
  }
  UniqueId id;
  std::memcpy(id.bytes.data(), raw.data(), 128);
  return id;
}

}  // namespace polychip::comm
