#include "polychip/comm/case_runner.hpp"
#include "wire/byte_io.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

#include "case_values.hpp"
#include "polychip/error.hpp"

namespace polychip::comm {
namespace {

// A buffer on the host or on the case's device, `offset` bytes into an
// allocation whose bytes before and after it are guards: a collective that
// writes outside its buffer changes them.
class CaseBuffer {
 public:
  static constexpr uint8_t kGuardByte = 0xA5;
  static constexpr uint64_t kTailGuard = 64;

  CaseBuffer(const Device* device, uint64_t bytes, uint64_t offset)
      : bytes_(bytes), offset_(offset) {
    const std::vector<uint8_t> guards(offset + bytes + kTailGuard, kGuardByte);
    if (device) {
      buffer_ = std::make_unique<Buffer>(*device, guards.size());
      buffer_->copy_from_host(guards.data(), guards.size());
    } else {
      host_ = guards;
    }
  }
  BufferRef ref(uint64_t at = 0) const {
    if (buffer_) return BufferRef(*buffer_, offset_ + at);
    return BufferRef(const_cast<uint8_t*>(host_.data()) + offset_ + at);
  }
  void write(const std::vector<uint8_t>& data, uint64_t at = 0) {
    if (data.empty()) return;
    if (buffer_)
      buffer_->copy_from_host(data.data(), data.size(), offset_ + at);
    else
      copy_bytes(host_.data() + offset_ + at, data.data(), data.size());
  }
  std::vector<uint8_t> read(uint64_t at, uint64_t size) const {
    return read_raw(offset_ + at, size);
  }
  // Guard bytes (before and after the buffer) that no longer hold kGuardByte.
  uint64_t guard_bytes_written() const {
    uint64_t changed = 0;
    for (uint8_t b : read_raw(0, offset_)) changed += b != kGuardByte;
    for (uint8_t b : read_raw(offset_ + bytes_, kTailGuard)) changed += b != kGuardByte;
    return changed;
  }

 private:
  std::vector<uint8_t> read_raw(uint64_t at, uint64_t size) const {
    std::vector<uint8_t> out(size);
    if (size == 0) return out;
    if (buffer_)
      buffer_->copy_to_host(out.data(), size, at);
    else
      copy_bytes(out.data(), host_.data() + at, size);
    return out;
  }

  uint64_t bytes_, offset_;
  std::vector<uint8_t> host_;
  std::unique_ptr<Buffer> buffer_;
};

}  // namespace

const std::vector<std::string>& collective_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (Collective c : kCollectives) all.emplace_back(collective_name(c));
    return all;
  }();
  return names;
}

double bus_bandwidth_factor(const std::string& c, int n) {
  if (c == "all_reduce") return 2.0 * (n - 1) / n;
  if (c == "all_gather" || c == "reduce_scatter" || c == "all_to_all") return double(n - 1) / n;
  return 1.0;
}

CaseRunner::CaseRunner(Communicator& comm, const Device* device) : comm_(comm), device_(device) {}

uint64_t CaseRunner::round_size(const std::string& c, DType dtype, uint64_t bytes) const {
  uint64_t unit = dtype_size(dtype);
  if (c == "all_gather" || c == "reduce_scatter" || c == "all_to_all") unit *= comm_.size();
  return bytes / unit * unit;
}

CaseResult CaseRunner::run(const CaseSpec& spec, int warmup, int iterations) {
  const int n = comm_.size(), me = comm_.rank();
  const DType dt = spec.dtype;
  const size_t w = dtype_size(dt);
  const std::string& c = spec.collective;
  check_comm_dtype(dt, "dtype");
  if (spec.root < 0 || spec.root >= n) {
    throw_error(StatusCode::kInvalidArgument,
                "root " + std::to_string(spec.root) + " out of range");
  }
  const uint64_t bytes = round_size(c, dt, spec.bytes);
  const uint64_t total = bytes / w;  // elements of the larger buffer
  const bool blocked = c == "all_gather" || c == "reduce_scatter" || c == "all_to_all";
  const uint64_t block = blocked ? total / n : total;  // per-rank count
  uint64_t in_count = total, out_count = total;
  if (c == "all_gather") in_count = block;
  if (c == "reduce_scatter") out_count = block;
  // Inputs: element index k of this rank's send buffer.
  std::vector<uint8_t> input(in_count * w);
  for (uint64_t k = 0; k < in_count; ++k)
    store_value(case_input(me, k, spec.op), dt, &input[k * w]);
  // Expected output of this rank.
  const Collective which = parse_collective(c);
  std::vector<uint8_t> expected(out_count * w);
  for (uint64_t j = 0; j < out_count; ++j)
    store_value(case_expected(which, spec.op, dt, n, me, spec.root, block, j), dt,
                &expected[j * w]);
  bool check = true;
  if (c == "reduce" && me != spec.root) check = false;
  // Buffers: in place shares one allocation the way NCCL defines it.
  if (spec.offset % w != 0) {
    throw_error(StatusCode::kInvalidArgument, "buffer offset " + std::to_string(spec.offset) +
                                                  " is not a multiple of the element size " +
                                                  std::to_string(w));
  }
  CaseBuffer out(device_, out_count * w, spec.offset);
  std::optional<CaseBuffer> separate_in;
  uint64_t in_offset = 0;
  if (spec.in_place) {
    if (c == "all_gather") in_offset = uint64_t(me) * block * w;
    if (c == "reduce_scatter") {
      separate_in.emplace(device_, in_count * w, spec.offset);  // recv lives inside send
    }
  } else {
    separate_in.emplace(device_, in_count * w, spec.offset);
  }
  const bool rs_in_place = spec.in_place && c == "reduce_scatter";
  auto in_ref = [&]() { return separate_in ? separate_in->ref() : out.ref(in_offset); };
  auto out_ref = [&]() {
    return rs_in_place ? separate_in->ref(uint64_t(me) * block * w) : out.ref();
  };
  // `which`, looked up once: the timed loop below calls `call` for
  // sub-microsecond collectives, where string compares per call would show.
  auto call = [&]() {
    switch (which) {
      case Collective::kAllReduce:
        return comm_.all_reduce(in_ref(), out_ref(), total, dt, spec.op);
      case Collective::kAllGather:
        return comm_.all_gather(in_ref(), out_ref(), block, dt);
      case Collective::kReduceScatter:
        return comm_.reduce_scatter(in_ref(), out_ref(), block, dt, spec.op);
      case Collective::kBroadcast:
        return comm_.broadcast(in_ref(), out_ref(), total, dt, spec.root);
      case Collective::kReduce:
        return comm_.reduce(in_ref(), out_ref(), total, dt, spec.op, spec.root);
      case Collective::kAllToAll:
        return comm_.all_to_all(in_ref(), out_ref(), block, dt);
      case Collective::kSendRecv:
        comm_.group_start();
        if (n > 1) {
          comm_.send(in_ref(), total, dt, (me + 1) % n);
          comm_.recv(out_ref(), total, dt, (me - 1 + n) % n);
        }
        return comm_.group_end();
    }
  };
  auto fill = [&]() {
    if (separate_in)
      separate_in->write(input);
    else
      out.write(input, in_offset);
  };
  CaseResult result;
  result.count = total;
  if (c == "send_recv" && n == 1) {
    // Nothing moves with one rank; the expected value is our own input.
    fill();
    out.write(input);
  } else {
    fill();
    call();
  }
  if (!comm_.call_history().empty()) result.record = comm_.last_call();
  if (check) {
    std::vector<uint8_t> got = rs_in_place
                                   ? separate_in->read(uint64_t(me) * block * w, out_count * w)
                                   : out.read(0, out_count * w);
    for (uint64_t j = 0; j < out_count; ++j) {
      if (std::memcmp(&got[j * w], &expected[j * w], w) != 0) ++result.wrong;
    }
  }
  result.outside = out.guard_bytes_written();
  if (separate_in) result.outside += separate_in->guard_bytes_written();
  result.wrong += result.outside;
  if (iterations > 0) {
    for (int i = 0; i < warmup; ++i) call();
    comm_.barrier();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) call();
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        iterations;
  }
  return result;
}

}  // namespace polychip::comm
