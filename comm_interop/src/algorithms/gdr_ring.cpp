#include "algorithms/gdr_ring.hpp"

#include <fmt/format.h>

#include "polychip/dispatcher.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"
#include "polychip/runtime.hpp"
#include "polychip/tensor.hpp"

namespace polychip::comm {
namespace {

// Immediate data (32 bits: what verbs carries): kind | step | low 16 bits of seq.
constexpr uint32_t kStepBits = 14;
constexpr int kMaxWorld = 1 << kStepBits;

int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

GdrRingAllReduce::GdrRingAllReduce(GdrEndpoint& endpoint, GdrRingArgs args)
    : endpoint_(endpoint), a_(std::move(args)) {
  if (a_.world < 2 || a_.world > kMaxWorld || a_.count < static_cast<uint64_t>(a_.world))
    throw_error(StatusCode::kInternal,
                fmt::format("GDR ring: {} elements over {} ranks", a_.count, a_.world));
  element_ = dtype_size(a_.dtype);
  next_ = mod(a_.rank + 1, a_.world);
  prev_ = mod(a_.rank - 1, a_.world);
}

uint64_t GdrRingAllReduce::immediate(Kind kind, uint32_t step) const {
  return (uint64_t{kind} << 30) | (uint64_t{step} << 16) | (a_.seq & 0xFFFF);
}

uint64_t GdrRingAllReduce::chunk_count(int chunk) const {
  const uint64_t n = static_cast<uint64_t>(a_.world), c = static_cast<uint64_t>(chunk);
  return a_.count / n + (c < a_.count % n ? 1 : 0);
}

uint64_t GdrRingAllReduce::chunk_offset(int chunk) const {
  const uint64_t n = static_cast<uint64_t>(a_.world), c = static_cast<uint64_t>(chunk);
  return c * (a_.count / n) + std::min(c, a_.count % n);
}

void GdrRingAllReduce::take_notices() {
  FabricRma& fabric = endpoint_.fabric();
  fabric.progress();
  WriteNotice notice;
  while (fabric.next_notice(&notice)) {
    const auto kind = static_cast<uint32_t>(notice.data >> 30) & 3;
    const auto step = static_cast<uint32_t>(notice.data >> 16) & ((1u << kStepBits) - 1);
    if ((notice.data & 0xFFFF) != (a_.seq & 0xFFFF) || kind == 0 ||
        step >= static_cast<uint32_t>(a_.world))
      throw_error(StatusCode::kDataCorruption,
                  fmt::format("GDR ring #{}: a remote write announced {:#x}, which belongs to no "
                              "step of this collective",
                              a_.seq, notice.data));
    arrived_.insert({kind, step});
  }
}

bool GdrRingAllReduce::writes_done() {
  while (!writes_.empty() && writes_.front().done) {
    if (!writes_.front().error.empty())
      throw_error(StatusCode::kUnavailable, "GDR ring: " + writes_.front().error);
    writes_.pop_front();
  }
  return writes_.empty();
}

bool GdrRingAllReduce::post(const void* local, uint64_t bytes, const RemoteRegion& remote,
                            uint64_t offset, Kind kind, uint32_t step) {
  writes_.emplace_back();
  if (endpoint_.fabric().post_write(endpoint_.peer(kind == kCredit ? prev_ : next_), local, bytes,
                                    remote, offset, immediate(kind, step), &writes_.back()))
    return true;
  writes_.pop_back();
  return false;
}

void GdrRingAllReduce::add_chunk(int chunk) {
  const Device& device = *a_.recv.device();
  const auto n = static_cast<int64_t>(chunk_count(chunk));
  const uint64_t at = chunk_offset(chunk) * element_;
  const TensorView in(*a_.send.device(), a_.send.memory(), a_.dtype, {n}, {1},
                      a_.send.offset() + at);
  const TensorView partial(*a_.scratch, a_.dtype, {n}, {1}, at);
  const TensorView out(device, a_.recv.memory(), a_.dtype, {n}, {1}, a_.recv.offset() + at);
  static const polychip_op_attrs attrs = default_attrs(*find_op("add"));
  device.runtime().dispatcher().call("add", {in, partial, out}, attrs, *a_.stream);
  // The NIC reads this chunk next: the kernel must be done.
  a_.stream->synchronize();
}

bool GdrRingAllReduce::progress(bool* moved) {
  take_notices();
  writes_done();
  const int n = a_.world, p = a_.rank;
  auto* send = static_cast<const uint8_t*>(a_.send_local);
  auto* recv = static_cast<const uint8_t*>(a_.recv_local);
  for (;;) {
    switch (phase_) {
      case Phase::kReduceScatter: {
        const int chunk = mod(p - step_, n);
        if (!posted_) {
          const uint8_t* from = (step_ == 0 ? send : recv) + chunk_offset(chunk) * element_;
          if (!post(from, chunk_count(chunk) * element_, a_.next.scratch,
                    chunk_offset(chunk) * element_, kScatterData, step_))
            return false;
          posted_ = true;
          *moved = true;
        }
        if (!arrived(kScatterData, step_)) return false;
        add_chunk(mod(p - step_ - 1, n));
        *moved = true;
        posted_ = false;
        if (++step_ == n - 1) phase_ = Phase::kCredit;
        break;
      }
      case Phase::kCredit:
        // Prev may overwrite this rank's output only once nothing here reads
        // it for the reduce-scatter any more (the writes posted from it).
        if (!writes_done()) return false;
        if (!post(endpoint_.credit_source(), sizeof(uint64_t), a_.prev.credit, 0, kCredit, 0))
          return false;
        *moved = true;
        phase_ = Phase::kAllGather;
        step_ = 0;
        break;
      case Phase::kAllGather: {
        if (step_ == n - 1) {
          phase_ = Phase::kFinish;
          break;
        }
        if (step_ == 0 ? !arrived(kCredit, 0) : !arrived(kGatherData, step_ - 1)) return false;
        const int chunk = mod(p + 1 - step_, n);
        if (!post(recv + chunk_offset(chunk) * element_, chunk_count(chunk) * element_,
                  a_.next.recv, chunk_offset(chunk) * element_, kGatherData, step_))
          return false;
        *moved = true;
        ++step_;
        break;
      }
      case Phase::kFinish:
        return arrived(kGatherData, n - 2) && writes_done();
    }
  }
}

}  // namespace polychip::comm
