#include "transport/rdma/rma_ring.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "polychip/error.hpp"

namespace polychip::comm {
namespace {

constexpr uint64_t kCountBits = 18;  // the count minus one
constexpr uint64_t kMaxCount = uint64_t{1} << kCountBits;
constexpr uint64_t kKindShift = kCountBits;
constexpr uint64_t kSeqShift = kKindShift + 2;
constexpr uint64_t kRankShift = kSeqShift + 2;
constexpr uint64_t kBoxBytes = 64;
static_assert(kRmaMaxWriteBytes <= kMaxCount);

uint8_t* allocate_registrable(uint64_t bytes) {
  void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (!p)
    throw_error(StatusCode::kOutOfMemory,
                "RDMA lane: cannot allocate " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, bytes);
  return static_cast<uint8_t*>(p);
}

}  // namespace

uint64_t encode_rma_notice(const RmaNotice& n) {
  if (n.rank < 0 || n.rank >= kRmaMaxRanks || n.bytes == 0 || n.bytes > kMaxCount ||
      n.seq >= kRmaWritesInFlight || n.kind > RmaNoticeKind::kPlaced) {
    throw_error(StatusCode::kInternal, "RDMA notice out of range: rank " + std::to_string(n.rank) +
                                           ", " + std::to_string(n.bytes) + " bytes");
  }
  return uint64_t(n.rank) << kRankShift | uint64_t(n.seq) << kSeqShift |
         uint64_t(n.kind) << kKindShift | (n.bytes - 1);
}

RmaNotice decode_rma_notice(uint64_t immediate) {
  if (immediate >> 32 != 0) {
    throw_error(StatusCode::kDataCorruption,
                "RDMA notice " + std::to_string(immediate) + " has bits above its 32");
  }
  const uint64_t kind = immediate >> kKindShift & 3;
  if (kind > uint64_t(RmaNoticeKind::kPlaced)) {
    throw_error(StatusCode::kDataCorruption, "RDMA notice " + std::to_string(immediate) +
                                                 " is of no kind (" + std::to_string(kind) + ")");
  }
  return {static_cast<int>(immediate >> kRankShift), static_cast<RmaNoticeKind>(kind),
          static_cast<uint32_t>((immediate & (kMaxCount - 1)) + 1),
          static_cast<uint32_t>(immediate >> kSeqShift & (kRmaWritesInFlight - 1))};
}

RmaEndpoint::RmaEndpoint(std::unique_ptr<FabricRma> fabric, int rank, int world)
    : fabric_(std::move(fabric)),
      rank_(rank),
      receivers_(world, nullptr),
      senders_(world, nullptr) {
  if (world > kRmaMaxRanks) {
    throw_error(StatusCode::kUnavailable, "RDMA lanes carry at most " +
                                              std::to_string(kRmaMaxRanks) +
                                              " ranks, the job has " + std::to_string(world));
  }
}

void RmaEndpoint::attach(int peer, RmaRing* receiver, RmaRing* sender) {
  receivers_.at(peer) = receiver;
  senders_.at(peer) = sender;
}

bool RmaEndpoint::progress() {
  fabric_->progress();
  bool any = false;
  WriteNotice notice;
  while (fabric_->next_notice(&notice)) {
    const RmaNotice n = decode_rma_notice(notice.data);
    const bool credit = n.kind == RmaNoticeKind::kCredit;
    RmaRing* ring = n.rank < static_cast<int>(receivers_.size())
                        ? (credit ? senders_[n.rank] : receivers_[n.rank])
                        : nullptr;
    if (!ring) {
      throw_error(StatusCode::kDataCorruption, "RDMA notice from rank " + std::to_string(n.rank) +
                                                   ", which has no lane to this rank");
    }
    if (credit)
      ring->credited(n.bytes);
    else
      ring->landed(n.bytes, n.seq, n.kind == RmaNoticeKind::kPlaced);
    any = true;
  }
  return any;
}

RmaRing::RmaRing(RmaEndpoint& endpoint, uint64_t capacity, bool is_receiver)
    : endpoint_(endpoint), capacity_(capacity), is_receiver_(is_receiver) {
  if (capacity == 0 || (capacity & (capacity - 1)) != 0) {
    throw_error(StatusCode::kInvalidArgument,
                "RDMA ring capacity must be a power of two, got " + std::to_string(capacity));
  }
  memory_ = allocate_registrable(capacity_ + kBoxBytes);
  box_ = capacity_;
  const RemoteRegion whole = endpoint_.fabric().register_memory(memory_, capacity_ + kBoxBytes);
  region_ = whole;
  if (is_receiver_) {
    region_.size = capacity_;  // the credit's source, past the ring, is not the peer's to write
  } else {
    region_.address = whole.address + box_;  // a virtual address or an offset: both shift
    region_.size = kBoxBytes;
  }
}

std::unique_ptr<RmaRing> RmaRing::receiver(RmaEndpoint& endpoint, uint64_t capacity) {
  return std::unique_ptr<RmaRing>(new RmaRing(endpoint, capacity, true));
}

std::unique_ptr<RmaRing> RmaRing::sender(RmaEndpoint& endpoint, uint64_t capacity) {
  return std::unique_ptr<RmaRing>(new RmaRing(endpoint, capacity, false));
}

RmaRing::~RmaRing() {
  for (Run& run : runs_) endpoint_.fabric().end_lent(run.lent);
  for (Placement& p : placements_) endpoint_.fabric().end_lent(p.lent);
  endpoint_.fabric().deregister_memory(memory_, capacity_ + kBoxBytes);
  std::free(memory_);
}

void RmaRing::connect(uint64_t peer_handle, const RemoteRegion& peer_region) {
  peer_ = peer_handle;
  peer_region_ = peer_region;
  connected_ = true;
}

void RmaRing::landed(uint32_t bytes, uint32_t seq, bool placed) {
  if (!is_receiver_ || (!placed && head_ + bytes - tail_ > capacity_)) {
    throw_error(StatusCode::kDataCorruption, "RDMA lane: the peer wrote " + std::to_string(bytes) +
                                                 " bytes past the ring's free space");
  }
  if (placed && placed_head_ + bytes > placed_allowed_) {
    throw_error(StatusCode::kDataCorruption,
                "RDMA lane: the peer placed " + std::to_string(placed_head_ + bytes) +
                    " bytes in all, more than the " + std::to_string(placed_allowed_) +
                    " this rank offered");
  }
  if (seq != next_seq_) {
    throw_error(StatusCode::kDataCorruption,
                "RDMA lane: write " + std::to_string(seq) + " landed where write " +
                    std::to_string(next_seq_) +
                    " was due (the provider reorders writes; use POLYCHIP_COMM_TRANSPORT=tcp)");
  }
  next_seq_ = (next_seq_ + 1) % kRmaWritesInFlight;
  (placed ? placed_head_ : head_) += bytes;
}

void RmaRing::credited(uint32_t bytes) {
  if (is_receiver_ || credit_ + bytes > posted_) {
    throw_error(
        StatusCode::kDataCorruption,
        "RDMA lane: the peer handed back " + std::to_string(bytes) + " bytes it was never sent");
  }
  credit_ += bytes;
}

bool RmaRing::post_staged() {
  // Retire in order: `written_` counts a prefix of the stream.
  while (in_flight_ > 0 && writes_[first_].completion.done) {
    Write& w = writes_[first_];
    // Data that did not land ends the lane; the TCP connection usually
    // says why first (the peer left).
    if (!w.completion.error.empty()) throw_error(StatusCode::kUnavailable, w.completion.error);
    if (w.placed) {
      placements_.front().written += w.bytes;
      placed_written_ += w.bytes;
      if (placements_.front().written == placements_.front().bytes) {
        endpoint_.fabric().end_lent(placements_.front().lent);
        placements_.pop_front();
      }
    } else {
      written_ += w.bytes;
    }
    first_ = (first_ + 1) % kRmaWritesInFlight;
    --in_flight_;
  }
  while (!runs_.empty() && runs_.front().end <= written_) {
    endpoint_.fabric().end_lent(runs_.front().lent);
    runs_.pop_front();
  }
  bool posted = false;
  auto run = runs_.begin();
  while (in_flight_ < kRmaWritesInFlight && posted_ < staged_) {
    while (run->end <= posted_) ++run;
    const uint64_t at = posted_ & (capacity_ - 1);
    const uint64_t n = std::min({run->end - posted_, capacity_ - at, kRmaMaxWriteBytes});
    const uint8_t* from = run->source ? run->source + (posted_ - run->begin) : memory_ + at;
    if (!post_write(from, n, peer_region_, at, run->source ? &run->lent : nullptr, false))
      return posted;
    posted_ += n;
    posted = true;
  }
  // Placements after the ring's bytes: a placed payload follows its header.
  for (Placement& p : placements_) {
    while (in_flight_ < kRmaWritesInFlight && p.posted < p.bytes) {
      const uint64_t n = std::min(p.bytes - p.posted, kRmaMaxWriteBytes);
      if (!post_write(p.source + p.posted, n, p.to, p.posted, &p.lent, true)) return posted;
      p.posted += n;
      posted = true;
    }
  }
  return posted;
}

bool RmaRing::post_write(const uint8_t* from, uint64_t bytes, const RemoteRegion& to,
                         uint64_t offset, const FabricRma::LentMemory* lent, bool placed) {
  const uint64_t immediate =
      encode_rma_notice({endpoint_.rank(), placed ? RmaNoticeKind::kPlaced : RmaNoticeKind::kData,
                         static_cast<uint32_t>(bytes), next_seq_});
  Write& w = writes_[(first_ + in_flight_) % kRmaWritesInFlight];
  if (!endpoint_.fabric().post_write(peer_, from, bytes, to, offset, immediate, &w.completion,
                                     lent))
    return false;
  w.bytes = bytes;
  w.placed = placed;
  ++in_flight_;
  next_seq_ = (next_seq_ + 1) % kRmaWritesInFlight;
  return true;
}

bool RmaRing::post_credit() {
  // A credit that fails needs no report: its peer left, and whatever still
  // waits on that peer hears it from the TCP connection.
  if (in_flight_ > 0 && writes_[0].completion.done) in_flight_ = 0;
  const uint64_t owed = tail_ - credited_;
  if (in_flight_ > 0 || owed == 0 || (owed < capacity_ / 4 && tail_ != head_)) return false;
  const uint64_t n = std::min(owed, kMaxCount);
  const uint64_t immediate =
      encode_rma_notice({endpoint_.rank(), RmaNoticeKind::kCredit, static_cast<uint32_t>(n)});
  if (!endpoint_.fabric().post_write(peer_, memory_ + box_, sizeof(uint64_t), peer_region_, 0,
                                     immediate, &writes_[0].completion))
    return false;
  in_flight_ = 1;
  credited_ += n;
  return true;
}

bool RmaRing::progress() {
  const bool notices = endpoint_.progress();
  if (!connected_) return notices;
  return (is_receiver_ ? post_credit() : post_staged()) || notices;
}

bool RmaRing::drained() const {
  // A credit in flight is left to complete on its own (the peer may have
  // left already, its collective done).
  if (is_receiver_) return tail_ == credited_ || tail_ != head_ || in_flight_ > 0;
  return in_flight_ == 0 && written_ == staged_ && placements_.empty();
}

uint64_t RmaRing::write(const void* data, uint64_t size) {
  const uint64_t n = std::min(size, free_space());
  if (n == 0) return 0;
  const uint64_t at = staged_ & (capacity_ - 1);
  const uint64_t first = std::min(n, capacity_ - at);
  const auto* src = static_cast<const uint8_t*>(data);
  std::memcpy(memory_ + at, src, first);
  if (n > first) std::memcpy(memory_, src + first, n - first);
  if (runs_.empty() || runs_.back().source)
    runs_.push_back({staged_, staged_ + n, nullptr, {}});
  else
    runs_.back().end += n;
  staged_ += n;
  post_staged();
  return n;
}

uint64_t RmaRing::lend(const void* data, uint64_t size) {
  const uint64_t n = std::min(size, free_space());
  if (n < kRmaLendMinBytes) return write(data, size);
  runs_.push_back({staged_, staged_ + n, static_cast<const uint8_t*>(data),
                   endpoint_.fabric().lend_memory(data, n)});
  staged_ += n;
  post_staged();
  return n;
}

void RmaRing::place(const void* data, uint64_t size, const RemoteRegion& to) {
  if (size == 0 || size > to.size) {
    throw_error(StatusCode::kInvalidArgument, "RDMA lane: placing " + std::to_string(size) +
                                                  " bytes into an offered region of " +
                                                  std::to_string(to.size));
  }
  placements_.push_back({static_cast<const uint8_t*>(data), size, 0, 0, to,
                         endpoint_.fabric().lend_memory(data, size)});
  post_staged();
}

uint64_t RmaRing::lent_in_use() const {
  for (const Run& run : runs_)
    if (run.source && run.end > written_) return staged_ - std::max(run.begin, written_);
  return 0;
}

uint64_t RmaRing::peek(const uint8_t** data) {
  const uint64_t at = tail_ & (capacity_ - 1);
  *data = memory_ + at;
  return std::min(head_ - tail_, capacity_ - at);
}

void RmaRing::consume(uint64_t bytes) {
  tail_ += bytes;
  post_credit();
}

bool RmaRing::arm_reader() {
  progress();
  return head_ == tail_;
}

bool RmaRing::arm_writer() {
  progress();
  return free_space() == 0;
}

}  // namespace polychip::comm
