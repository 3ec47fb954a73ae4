#include "algorithms/gdr_ring.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "polychip/dispatcher.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"
#include "polychip/runtime.hpp"
#include "polychip/tensor.hpp"

namespace polychip::comm {
namespace {

// Immediate data (32 bits: what verbs carries): kind | step | slice | low 8 bits of seq.
constexpr uint32_t kStepBits = 14;
constexpr int kMaxWorld = 1 << kStepBits;
constexpr uint32_t kMaxSlices = 256;

int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

GdrRing::GdrRing(GdrEndpoint& endpoint, GdrRingArgs args)
    : endpoint_(endpoint), a_(std::move(args)) {
  const bool reduce = a_.collective == GdrCollective::kAllReduce;
  scatters_ = a_.collective == GdrCollective::kAllReduce ||
              a_.collective == GdrCollective::kReduceScatter ||
              a_.collective == GdrCollective::kReduce;
  gathers_ = a_.collective == GdrCollective::kAllReduce ||
             a_.collective == GdrCollective::kAllGather ||
             a_.collective == GdrCollective::kBroadcast;
  shift_ = a_.collective == GdrCollective::kReduceScatter ? 1 : 0;
  if (a_.world < 2 || a_.world > kMaxWorld || a_.count == 0 ||
      (reduce && a_.count < static_cast<uint64_t>(a_.world)))
    throw_error(StatusCode::kInternal,
                fmt::format("GDR ring: {} elements over {} ranks", a_.count, a_.world));
  element_ = dtype_size(a_.dtype);
  next_ = mod(a_.rank + 1, a_.world);
  prev_ = mod(a_.rank - 1, a_.world);
  // Every chunk holds at least `base` elements: every slice gets one or more.
  const uint64_t base = reduce ? a_.count / static_cast<uint64_t>(a_.world) : a_.count;
  const uint64_t wanted =
      (base * element_ + a_.slice_bytes - 1) / std::max<uint64_t>(a_.slice_bytes, 1);
  slices_ =
      static_cast<uint32_t>(std::clamp<uint64_t>(wanted, 1, std::min<uint64_t>(kMaxSlices, base)));
  // A chain's one chunk moves one step from each rank.
  const bool chain =
      a_.collective == GdrCollective::kBroadcast || a_.collective == GdrCollective::kReduce;
  writes_per_phase_ = chain ? slices_ : static_cast<uint64_t>(a_.world - 1) * slices_;
  scatter_arrived_.assign(writes_per_phase_, false);
  gather_arrived_.assign(writes_per_phase_, false);
  if (!scatters_) scatter_posted_ = scatter_added_ = writes_per_phase_;
  if (!gathers_) gather_posted_ = writes_per_phase_;
  // The credit guards an all-reduce's output between its two phases.
  if (!reduce) credit_posted_ = credit_arrived_ = true;
}

GdrRing::~GdrRing() {
  for (const WriteCompletion& w : writes_)
    if (!w.done) endpoint_.fabric().forget(&w);
}

uint64_t GdrRing::immediate(Kind kind, uint32_t step, uint32_t slice) const {
  return (uint64_t{kind} << 30) | (uint64_t{step} << 16) | (uint64_t{slice} << 8) | (a_.seq & 0xFF);
}

std::pair<uint64_t, uint64_t> GdrRing::slice_of(int chunk, uint32_t slice) const {
  const uint64_t n = static_cast<uint64_t>(a_.world), c = static_cast<uint64_t>(chunk);
  const bool reduce = a_.collective == GdrCollective::kAllReduce;
  const uint64_t length = reduce ? a_.count / n + (c < a_.count % n ? 1 : 0) : a_.count;
  const uint64_t first = reduce ? c * (a_.count / n) + std::min(c, a_.count % n) : c * a_.count;
  const uint64_t begin = slice * length / slices_, end = (slice + 1) * length / slices_;
  return {first + begin, end - begin};
}

void GdrRing::take_notices() {
  FabricRma& fabric = endpoint_.fabric();
  fabric.progress();
  WriteNotice notice;
  while (fabric.next_notice(&notice)) {
    const auto kind = static_cast<uint32_t>(notice.data >> 30) & 3;
    const auto step = static_cast<uint32_t>(notice.data >> 16) & ((1u << kStepBits) - 1);
    const auto slice = static_cast<uint32_t>(notice.data >> 8) & 0xFF;
    const uint64_t index = uint64_t{step} * slices_ + slice;
    const bool data = kind == kScatterData || kind == kGatherData;
    if ((notice.data & 0xFF) != (a_.seq & 0xFF) || kind == 0 ||
        (data && (slice >= slices_ || index >= writes_per_phase_)) ||
        (kind == kCredit && (step != 0 || slice != 0)))
      throw_error(StatusCode::kDataCorruption,
                  fmt::format("GDR ring #{}: a remote write announced {:#x}, which belongs to no "
                              "step of this collective",
                              a_.seq, notice.data));
    if (kind == kScatterData) scatter_arrived_[index] = true;
    if (kind == kGatherData) gather_arrived_[index] = true;
    if (kind == kCredit) credit_arrived_ = true;
  }
}

bool GdrRing::writes_done() {
  while (!writes_.empty() && writes_.front().done) {
    if (!writes_.front().error.empty())
      throw_error(StatusCode::kUnavailable, "GDR ring: " + writes_.front().error);
    writes_.pop_front();
  }
  return writes_.empty();
}

bool GdrRing::post(const void* local, uint64_t bytes, const RemoteRegion& remote, uint64_t offset,
                   Kind kind, uint32_t step, uint32_t slice) {
  writes_.emplace_back();
  if (endpoint_.fabric().post_write(endpoint_.peer(kind == kCredit ? prev_ : next_), local, bytes,
                                    remote, offset, immediate(kind, step, slice), &writes_.back()))
    return true;
  writes_.pop_back();
  return false;
}

bool GdrRing::post_data(Kind kind, uint64_t index) {
  const auto step = static_cast<int>(index / slices_);
  const auto slice = static_cast<uint32_t>(index % slices_);
  const int p = a_.rank, n = a_.world;
  const bool scatter = kind == kScatterData, reduce = a_.collective == GdrCollective::kAllReduce;
  // All-reduce: the reduce-scatter sends chunk p - s, the all-gather p + 1 - s (final
  // after the reduce-scatter); reduce-scatter: block p - s - 1; all-gather: block p - s.
  const int chunk = mod(p - step - shift_ + (scatter || !reduce ? 0 : 1), n);
  const auto [first, count] = slice_of(chunk, slice);
  const uint8_t* from = static_cast<const uint8_t*>(a_.recv_local) + first * element_;
  if (scatter && step > 0 && !reduce)  // reduce-scatter: the running sum
    from = static_cast<const uint8_t*>(a_.scratch_local) + running_sums_offset() + first * element_;
  if (step == 0 && scatters_ == scatter) {  // this rank's own input
    const uint64_t own_first = scatters_ ? 0 : static_cast<uint64_t>(p) * a_.count;
    from = static_cast<const uint8_t*>(a_.send_local) + (first - own_first) * element_;
  }
  return post(from, count * element_, scatter ? a_.next.scratch : a_.next.recv, first * element_,
              kind, static_cast<uint32_t>(step), slice);
}

void GdrRing::add_slice(int chunk, uint32_t slice, bool into_output, uint64_t output_origin) {
  const Device& device = *a_.send.device();
  const auto [first, count] = slice_of(chunk, slice);
  const auto n = static_cast<int64_t>(count);
  const uint64_t at = first * element_;
  const TensorView in(*a_.send.device(), a_.send.memory(), a_.dtype, {n}, {1},
                      a_.send.offset() + at);
  const TensorView partial(*a_.scratch, a_.dtype, {n}, {1}, at);
  static const polychip_op_attrs attrs = default_attrs(*find_op("add"));
  if (into_output) {
    const TensorView out(device, a_.recv.memory(), a_.dtype, {n}, {1},
                         a_.recv.offset() + at - output_origin * element_);
    device.runtime().dispatcher().call("add", {in, partial, out}, attrs, *a_.stream);
  } else {
    const TensorView sums(*a_.scratch, a_.dtype, {n}, {1}, running_sums_offset() + at);
    device.runtime().dispatcher().call("add", {in, partial, sums}, attrs, *a_.stream);
  }
  // The NIC reads this slice next: the kernel must be done.
  a_.stream->synchronize();
}

bool GdrRing::progress_broadcast(bool* moved) {
  const int position = mod(a_.rank - a_.root, a_.world);  // along the chain
  const bool root = position == 0, last = position == a_.world - 1;
  const uint64_t all = slices_;
  while (!last && gather_posted_ < all && (root || gather_arrived_[gather_posted_])) {
    const auto slice = static_cast<uint32_t>(gather_posted_);
    const auto [first, count] = slice_of(0, slice);
    const void* from =
        static_cast<const uint8_t*>(root ? a_.send_local : a_.recv_local) + first * element_;
    if (!post(from, count * element_, a_.next.recv, first * element_, kGatherData, 0, slice)) break;
    ++gather_posted_;
    *moved = true;
  }
  for (uint64_t i = 0; !root && i < all; ++i)
    if (!gather_arrived_[i]) return false;
  return (last || gather_posted_ == all) && writes_done();
}

bool GdrRing::progress_reduce(bool* moved) {
  const int position = mod(a_.rank - a_.root - 1, a_.world);  // along the chain
  const bool first = position == 0, root = position == a_.world - 1;
  const uint64_t all = slices_;
  while (!first && scatter_added_ < all && scatter_arrived_[scatter_added_]) {
    add_slice(0, static_cast<uint32_t>(scatter_added_), root);
    ++scatter_added_;
    *moved = true;
  }
  // A slice goes on once this rank added its input to it (the first rank's: at once).
  while (!root && scatter_posted_ < all && (first || scatter_posted_ < scatter_added_)) {
    const auto slice = static_cast<uint32_t>(scatter_posted_);
    const auto [at, count] = slice_of(0, slice);
    const void* from = first ? static_cast<const uint8_t*>(a_.send_local) + at * element_
                             : static_cast<const uint8_t*>(a_.scratch_local) +
                                   running_sums_offset() + at * element_;
    if (!post(from, count * element_, a_.next.scratch, at * element_, kScatterData, 0, slice))
      break;
    ++scatter_posted_;
    *moved = true;
  }
  return (first || scatter_added_ == all) && (root || scatter_posted_ == all) && writes_done();
}

bool GdrRing::progress(bool* moved) {
  take_notices();
  writes_done();
  if (a_.collective == GdrCollective::kBroadcast) return progress_broadcast(moved);
  if (a_.collective == GdrCollective::kReduce) return progress_reduce(moved);
  const uint64_t all = writes_per_phase_, slices = slices_;
  // Reduce-scatter: a slice goes on once the step before added it here.
  while (scatter_posted_ < all &&
         (scatter_posted_ < slices || scatter_posted_ - slices < scatter_added_)) {
    if (!post_data(kScatterData, scatter_posted_)) break;
    ++scatter_posted_;
    *moved = true;
  }
  while (scatter_added_ < all && scatter_arrived_[scatter_added_]) {
    const auto step = static_cast<int>(scatter_added_ / slices);
    const int chunk = mod(a_.rank - step - 1 - shift_, a_.world);
    // A reduce-scatter's blocks pass through running sums up to their own rank.
    const bool own = a_.collective == GdrCollective::kAllReduce || chunk == a_.rank;
    add_slice(chunk, static_cast<uint32_t>(scatter_added_ % slices), own,
              own && a_.collective == GdrCollective::kReduceScatter
                  ? static_cast<uint64_t>(chunk) * a_.count
                  : 0);
    ++scatter_added_;
    *moved = true;
  }
  const bool scattered = scatter_added_ == all && scatter_posted_ == all;
  if (!gathers_) return scattered && writes_done();
  // Prev may overwrite this rank's output only once nothing here reads it
  // for the reduce-scatter any more (the writes posted from it).
  if (scattered && !credit_posted_ && writes_done()) {
    if (post(endpoint_.credit_source(), sizeof(uint64_t), a_.prev.credit, 0, kCredit, 0, 0)) {
      credit_posted_ = true;
      *moved = true;
    }
  }
  // All-gather: a slice goes on once it is final here (this rank's own
  // chunk after the reduce-scatter, then what prev wrote the step before).
  while (scattered && credit_arrived_ && gather_posted_ < all &&
         (gather_posted_ < slices || gather_arrived_[gather_posted_ - slices])) {
    if (!post_data(kGatherData, gather_posted_)) break;
    ++gather_posted_;
    *moved = true;
  }
  if (!credit_posted_ || gather_posted_ < all) return false;
  for (uint64_t i = all - slices; i < all; ++i)
    if (!gather_arrived_[i]) return false;
  return writes_done();
}

}  // namespace polychip::comm
