#include "transport/rdma/fabric_rma.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "polychip/error.hpp"
#include "polychip/memory.hpp"
#include "transport/rdma/fabric_library.hpp"

namespace polychip::comm {
namespace {

constexpr uint32_t kFabricApiVersion = FI_VERSION(1, 9);
constexpr uint32_t kFabricHmemApiVersion = FI_VERSION(1, 10);  // FI_HMEM
// Endpoints opened in turn while the name each takes is busy (see below).
constexpr int kEndpointAttempts = 16;

std::string fabric_error(int rc) { return fabric_library().strerror(rc < 0 ? -rc : rc); }

void check(int rc, const std::string& what) {
  if (rc < 0) throw_error(StatusCode::kUnavailable, what + ": " + fabric_error(rc));
}

using Clock = std::chrono::steady_clock;
Clock::time_point deadline_after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// The one context type every operation passes: big enough for FI_CONTEXT2.
struct OperationContext {
  fi_context2 provider_space;
};

}  // namespace

// A posted receive: the context first, so a completion's op_context is the slot.
struct FabricRma::ReceiveSlot {
  OperationContext context{};
  uint8_t buffer[8] = {};
};

// A posted write, likewise: busy from post to completion.
struct FabricRma::WriteSlot {
  OperationContext context{};
  bool busy = false;
  WriteCompletion* completion = nullptr;
};

const std::vector<std::string>& FabricRma::preferred_providers() {
  // NIC providers first; tcp;ofi_rxm works on any IP network.
  static const std::vector<std::string> providers = {"verbs;ofi_rxm", "efa", "cxi", "tcp;ofi_rxm"};
  return providers;
}

FabricRma::FabricRma(const std::string& provider, const std::string& node, bool device_memory) {
  const FabricLibrary& lib = fabric_library();
  std::vector<std::string> candidates;
  if (!provider.empty()) {
    candidates = {provider};
  } else if (const char* env = std::getenv("POLYCHIP_NET_PROVIDER"); env && *env) {
    candidates = {env};
  } else {
    candidates = preferred_providers();
  }
  // With FI_HMEM (libfabric 1.10 and later) first where device memory is
  // wanted, then without: such a provider still reaches system memory.
  auto open_info = [&](const std::string& name, bool hmem) {
    fi_info* hints = lib.dupinfo(nullptr);  // fi_allocinfo()
    if (!hints) throw_error(StatusCode::kOutOfMemory, "fi_allocinfo failed");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_RMA | (hmem ? FI_HMEM : 0);
    hints->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                                  FI_MR_ENDPOINT | (hmem ? FI_MR_HMEM : 0);
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->fabric_attr->prov_name = strdup(name.c_str());
    const int rc = lib.getinfo(hmem ? kFabricHmemApiVersion : kFabricApiVersion,
                               node.empty() ? nullptr : node.c_str(), nullptr,
                               node.empty() ? 0 : FI_SOURCE, hints, &info_);
    lib.freeinfo(hints);
    if (rc == 0 && info_) return 0;
    info_ = nullptr;
    return rc == 0 ? -FI_ENODATA : rc;
  };
  std::string reasons;
  for (const std::string& name : candidates) {
    int rc = device_memory ? open_info(name, true) : -FI_ENODATA;
    if (rc != 0) rc = open_info(name, false);
    if (rc == 0) {
      provider_ = name;
      break;
    }
    reasons += (reasons.empty() ? "" : "; ") + name + ": " + fabric_error(rc);
  }
  if (!info_) {
    throw_error(StatusCode::kUnavailable,
                "no libfabric provider with FI_EP_RDM, FI_MSG and FI_RMA (" + reasons + ")");
  }
  try {
    check(lib.fabric(info_->fabric_attr, &fabric_, nullptr), provider_ + ": fi_fabric");
    check(fi_domain(fabric_, info_, &domain_, nullptr), provider_ + ": fi_domain");
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_DATA;
    cq_attr.wait_obj = FI_WAIT_NONE;
    check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), provider_ + ": fi_cq_open");
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    check(fi_av_open(domain_, &av_attr, &av_, nullptr), provider_ + ": fi_av_open");
    // shm names an endpoint's region in /dev/shm after the pid and a
    // per-process endpoint count ("1234:0:0"). A rank killed by SIGKILL leaves
    // its region behind (the provider cleans up on exit and on catchable
    // signals only); a later process given the same pid then finds its first
    // name taken (EBUSY): the next endpoint takes the next name.
    int rc = -FI_EBUSY;
    for (int attempt = 0; rc == -FI_EBUSY && attempt < kEndpointAttempts; ++attempt) {
      if (ep_) {
        fi_close(&ep_->fid);
        ep_ = nullptr;
      }
      check(fi_endpoint(domain_, info_, &ep_, nullptr), provider_ + ": fi_endpoint");
      check(fi_ep_bind(ep_, &av_->fid, 0), provider_ + ": binding the address vector");
      check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV),
            provider_ + ": binding the completion queue");
      rc = fi_enable(ep_);
    }
    check(rc, provider_ + ": fi_enable");
    for (size_t i = 0; i < kWriteSlots; ++i) writes_.push_back(std::make_unique<WriteSlot>());
    if (info_->mode & FI_RX_CQ_DATA) {
      for (size_t i = 0; i < kPostedReceives; ++i) {
        receives_.push_back(std::make_unique<ReceiveSlot>());
        post_receive(*receives_.back());
      }
    }
  } catch (...) {
    close_all();
    throw;
  }
}

FabricRma::~FabricRma() { close_all(); }

void FabricRma::close_all() {
  for (auto& [range, r] : registrations_) fi_close(&r.mr->fid);
  registrations_.clear();
  if (ep_) fi_close(&ep_->fid);
  if (av_) fi_close(&av_->fid);
  if (cq_) fi_close(&cq_->fid);
  if (domain_) fi_close(&domain_->fid);
  if (fabric_) fi_close(&fabric_->fid);
  if (info_) fabric_library().freeinfo(info_);
  ep_ = nullptr;
  av_ = nullptr;
  cq_ = nullptr;
  domain_ = nullptr;
  fabric_ = nullptr;
  info_ = nullptr;
}

std::vector<uint8_t> FabricRma::address() const {
  std::vector<uint8_t> name(64);
  size_t length = name.size();
  int rc = fi_getname(&ep_->fid, name.data(), &length);
  if (rc == -FI_ETOOSMALL) {
    name.resize(length);
    rc = fi_getname(&ep_->fid, name.data(), &length);
  }
  check(rc, provider_ + ": fi_getname");
  name.resize(length);
  return name;
}

uint64_t FabricRma::add_peer(const std::vector<uint8_t>& address) {
  if (info_->addr_format == FI_ADDR_STR) {
    // A name such as "fi_shm://1234", read up to its NUL: its length varies
    // (shm's names carry a pid and an endpoint counter).
    if (address.size() < 2 || std::find(address.begin(), address.end(), 0) != address.end() - 1) {
      throw_error(StatusCode::kInvalidArgument,
                  provider_ + ": a peer address of " + std::to_string(address.size()) +
                      " bytes is not a NUL-terminated name, as this provider's are");
    }
  } else if (address.empty() || address.size() != this->address().size()) {
    throw_error(StatusCode::kInvalidArgument,
                provider_ + ": a peer address of " + std::to_string(address.size()) +
                    " bytes is not one of this provider's (" +
                    std::to_string(this->address().size()) + " bytes)");
  }
  fi_addr_t peer = FI_ADDR_NOTAVAIL;
  const int inserted = fi_av_insert(av_, address.data(), 1, &peer, 0, nullptr);
  if (inserted != 1 || peer == FI_ADDR_NOTAVAIL) {
    throw_error(StatusCode::kInvalidArgument,
                provider_ + ": the address vector refused a peer address" +
                    (inserted < 0 ? ": " + fabric_error(inserted) : std::string()));
  }
  return peer;
}

namespace {

// [data, data + size) inside a registration that may hold more: what a peer
// writes there (its address shifts likewise whether it is a virtual address
// or an offset).
RemoteRegion part_of(const RemoteRegion& whole, uintptr_t whole_begin, const void* data,
                     uint64_t size) {
  return {whole.address + (reinterpret_cast<uintptr_t>(data) - whole_begin), whole.key, size};
}

}  // namespace

RemoteRegion FabricRma::register_memory(void* data, uint64_t size) {
  return register_memory(data, size, POLYCHIP_MEMORY_INTERFACE_SYSTEM, 0);
}

RemoteRegion FabricRma::register_memory(void* data, uint64_t size, polychip_memory_interface where,
                                        int device) {
  const Registration& r = registration_for(data, size, where, device);
  return part_of(r.region, r.begin, data, size);
}

bool FabricRma::can_register(polychip_memory_interface where) const {
  switch (where) {
    case POLYCHIP_MEMORY_INTERFACE_SYSTEM:
      return true;
    case POLYCHIP_MEMORY_INTERFACE_CUDA:
    case POLYCHIP_MEMORY_INTERFACE_ROCR:
    case POLYCHIP_MEMORY_INTERFACE_ZE:
      return (info_->caps & FI_HMEM) != 0;
    default:  // a dma-buf needs FI_MR_DMABUF (libfabric 1.20)
      return false;
  }
}

fid_mr* FabricRma::register_region(const void* data, uint64_t size, uint64_t access,
                                   polychip_memory_interface where, int device) {
  fid_mr* mr = nullptr;
  if (where == POLYCHIP_MEMORY_INTERFACE_SYSTEM) {
    check(fi_mr_reg(domain_, data, size, access, 0, next_key_++, 0, &mr, nullptr),
          provider_ + ": registering " + std::to_string(size) + " bytes");
  } else {
    iovec iov{const_cast<void*>(data), size};
    fi_mr_attr attr{};
    attr.mr_iov = &iov;
    attr.iov_count = 1;
    attr.access = access;
    attr.requested_key = next_key_++;
    switch (where) {
      case POLYCHIP_MEMORY_INTERFACE_CUDA:
        attr.iface = FI_HMEM_CUDA;
        attr.device.cuda = device;
        break;
      case POLYCHIP_MEMORY_INTERFACE_ROCR:
        attr.iface = FI_HMEM_ROCR;
        break;
      default:  // ZE: can_register let nothing else through
        attr.iface = FI_HMEM_ZE;
        attr.device.ze = device;
        break;
    }
    check(fi_mr_regattr(domain_, &attr, 0, &mr),
          provider_ + ": registering " + std::to_string(size) + " bytes of " +
              memory_interface_name(where) + " device " + std::to_string(device) + " memory");
  }
  if (info_->domain_attr->mr_mode & FI_MR_ENDPOINT) {
    try {
      check(fi_mr_bind(mr, &ep_->fid, 0), provider_ + ": fi_mr_bind");
      check(fi_mr_enable(mr), provider_ + ": fi_mr_enable");
    } catch (...) {
      fi_close(&mr->fid);
      throw;
    }
  }
  return mr;
}

const FabricRma::Registration& FabricRma::registration_for(const void* data, uint64_t size,
                                                           polychip_memory_interface where,
                                                           int device) {
  if (!data || size == 0) {
    throw_error(StatusCode::kInvalidArgument, "register_memory: an empty or null region");
  }
  if (where == POLYCHIP_MEMORY_INTERFACE_DMABUF) {
    throw_error(StatusCode::kUnsupported,
                "memory exported as a dma-buf cannot be registered: this libfabric has no "
                "FI_MR_DMABUF (1.20 and later)");
  }
  if (!can_register(where))
    throw_error(StatusCode::kUnsupported,
                provider_ + " was opened without FI_HMEM: it cannot register " +
                    memory_interface_name(where) +
                    " device memory (GPUDirect RDMA needs a "
                    "provider with FI_HMEM, e.g. verbs with nvidia-peermem or dma-buf)");
  const auto begin = reinterpret_cast<uintptr_t>(data);
  // A registered region that holds the whole range serves it.
  for (const auto& [range, r] : registrations_) {
    if (range.first <= begin && begin - range.first + size <= range.second) return r;
  }
  Registration r;
  r.begin = begin;
  r.mr = register_region(data, size,
                         FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
                         where, device);
  r.region.key = fi_mr_key(r.mr);
  r.region.address = (info_->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? begin : 0;
  r.region.size = size;
  return registrations_.emplace(std::make_pair(begin, size), r).first->second;
}

void FabricRma::deregister_memory(const void* data, uint64_t size) {
  const auto found = registrations_.find({reinterpret_cast<uintptr_t>(data), size});
  if (found == registrations_.end()) return;
  fi_close(&found->second.mr->fid);
  registrations_.erase(found);
}

FabricRma::LentMemory FabricRma::lend_memory(const void* data, uint64_t size) {
  if (!data || size == 0) {
    throw_error(StatusCode::kInvalidArgument, "lend_memory: an empty or null region");
  }
  LentMemory lent;
  // The source of local writes only: no peer may reach a caller's buffer.
  try {
    lent.mr = register_region(data, size, FI_SEND | FI_WRITE, POLYCHIP_MEMORY_INTERFACE_SYSTEM, 0);
  } catch (const Error& e) {
    // Pinning providers (verbs) count it against RLIMIT_MEMLOCK.
    throw_error(e.code(), e.message() +
                              " (a caller's buffer, for a zero-copy write; if the "
                              "provider pins memory, check `ulimit -l`)");
  }
  lent.descriptor = fi_mr_desc(lent.mr);
  return lent;
}

void FabricRma::end_lent(LentMemory& lent) {
  if (lent.mr) fi_close(&lent.mr->fid);
  lent = {};
}

void FabricRma::post_receive(ReceiveSlot& slot) {
  // A receive that only carries remote CQ data needs no payload space; the
  // small buffer keeps providers that dislike null buffers content.
  int rc;
  while ((rc = static_cast<int>(fi_recv(ep_, slot.buffer, sizeof slot.buffer, nullptr,
                                        FI_ADDR_UNSPEC, &slot.context))) == -FI_EAGAIN) {
    fi_cq_read(cq_, nullptr, 0);
  }
  check(rc, provider_ + ": posting a receive");
}

void FabricRma::progress() {
  fi_cq_data_entry entries[16];
  const ssize_t n = fi_cq_read(cq_, entries, 16);
  if (n == -FI_EAGAIN) return;
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    fi_cq_readerr(cq_, &err, 0);
    char detail[256] = "";
    const char* provider_text =
        fi_cq_strerror(cq_, err.prov_errno, err.err_data, detail, sizeof detail);
    const std::string why =
        fabric_error(err.err) + " (" + (provider_text ? provider_text : "") + ")";
    if (err.op_context && (err.flags & FI_WRITE)) {
      // The write's owner decides what its failure means.
      auto* slot = static_cast<WriteSlot*>(err.op_context);
      if (slot->completion) *slot->completion = {true, provider_ + ": a write failed: " + why};
      slot->busy = false;
      slot->completion = nullptr;
      return;
    }
    throw_error(StatusCode::kUnavailable, provider_ + ": an operation failed: " + why);
  }
  check(static_cast<int>(n), provider_ + ": fi_cq_read");
  for (ssize_t i = 0; i < n; ++i) {
    const fi_cq_data_entry& e = entries[i];
    if (e.flags & FI_REMOTE_CQ_DATA) {
      notices_.push_back({e.data});
      if ((e.flags & FI_RECV) && e.op_context)  // it consumed one of our receives: repost it
        post_receive(*static_cast<ReceiveSlot*>(e.op_context));
    } else if ((e.flags & FI_WRITE) && e.op_context) {
      auto* slot = static_cast<WriteSlot*>(e.op_context);
      if (slot->completion) slot->completion->done = true;
      slot->busy = false;
      slot->completion = nullptr;
    }
  }
}

bool FabricRma::next_notice(WriteNotice* notice) {
  if (notices_.empty()) return false;
  *notice = notices_.front();
  notices_.pop_front();
  return true;
}

size_t FabricRma::immediate_bytes() const { return info_->domain_attr->cq_data_size; }

void FabricRma::check_write(uint64_t size, const RemoteRegion& remote, uint64_t offset,
                            uint64_t immediate) const {
  if (offset > remote.size || size > remote.size - offset) {
    throw_error(StatusCode::kInvalidArgument, "fabric write of " + std::to_string(size) +
                                                  " bytes at offset " + std::to_string(offset) +
                                                  " leaves the peer's region of " +
                                                  std::to_string(remote.size) + " bytes");
  }
  const size_t data_bytes = immediate_bytes();
  if (data_bytes < 8 && immediate >> (8 * data_bytes) != 0) {
    throw_error(StatusCode::kInvalidArgument, provider_ + " carries " + std::to_string(data_bytes) +
                                                  " bytes of immediate data; " +
                                                  std::to_string(immediate) + " does not fit");
  }
}

bool FabricRma::post_write(uint64_t peer, const void* local, uint64_t size,
                           const RemoteRegion& remote, uint64_t offset, uint64_t immediate,
                           WriteCompletion* completion, const LentMemory* lent) {
  check_write(size, remote, offset, immediate);
  void* descriptor = lent ? lent->descriptor : fi_mr_desc(registration_for(local, size).mr);
  auto free_slot =
      std::find_if(writes_.begin(), writes_.end(), [](const auto& w) { return !w->busy; });
  if (free_slot == writes_.end()) return false;
  WriteSlot& slot = **free_slot;
  const ssize_t rc = fi_writedata(ep_, local, size, descriptor, immediate, peer,
                                  remote.address + offset, remote.key, &slot.context);
  if (rc == -FI_EAGAIN) return false;
  check(static_cast<int>(rc), provider_ + ": fi_writedata");
  *completion = {};
  slot.busy = true;
  slot.completion = completion;
  return true;
}

void FabricRma::write(uint64_t peer, const void* local, uint64_t size, const RemoteRegion& remote,
                      uint64_t offset, uint64_t immediate, double timeout_seconds) {
  const auto deadline = deadline_after(timeout_seconds);
  WriteCompletion completion;
  while (!post_write(peer, local, size, remote, offset, immediate, &completion)) {
    progress();
    if (Clock::now() > deadline)
      throw_error(StatusCode::kDeadlineExceeded, provider_ + ": the write queue stayed full");
  }
  while (!completion.done) {
    progress();
    if (!completion.done && Clock::now() > deadline) {
      // The slot stays busy until the provider completes it; only the
      // completion, which lives on this stack, is forgotten.
      forget(&completion);
      throw_error(StatusCode::kDeadlineExceeded,
                  provider_ + ": a write of " + std::to_string(size) + " bytes did not complete");
    }
  }
  if (!completion.error.empty()) throw_error(StatusCode::kUnavailable, completion.error);
}

void FabricRma::forget(const WriteCompletion* completion) {
  for (auto& w : writes_)
    if (w->completion == completion) w->completion = nullptr;
}

WriteNotice FabricRma::wait_write(double timeout_seconds) {
  const auto deadline = deadline_after(timeout_seconds);
  WriteNotice notice;
  while (!next_notice(&notice)) {
    progress();
    if (notices_.empty() && Clock::now() > deadline) {
      throw_error(StatusCode::kDeadlineExceeded, provider_ + ": no remote write arrived");
    }
  }
  return notice;
}

}  // namespace polychip::comm
