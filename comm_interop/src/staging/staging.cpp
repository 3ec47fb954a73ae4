#include "staging/staging.hpp"

#include <algorithm>

#include "polychip/error.hpp"

namespace polychip::comm {
namespace {

void check_capacity(const BufferRef& b, uint64_t bytes) {
  if (!b.on_device()) {
    if (b.host() == nullptr && bytes > 0) {
      throw_error(StatusCode::kInvalidArgument,
                  "buffer: null host pointer for " + std::to_string(bytes) + " bytes");
    }
    return;
  }
  if (b.memory() == nullptr)
    throw_error(StatusCode::kInvalidArgument, "buffer: null device memory");
  if (b.capacity() < bytes) {
    throw_error(StatusCode::kInvalidArgument,
                "buffer on " + b.device()->label() + " holds " + std::to_string(b.capacity()) +
                    " bytes from its offset, the collective needs " + std::to_string(bytes));
  }
}

}  // namespace

bool Staging::host_visible(const BufferRef& b) const {
  if (!b.on_device()) return true;
  if (!b.device()->properties().has(POLYCHIP_CAP_HOST_VISIBLE_MEMORY)) return false;
  return b.device()->api().memory_host_pointer != nullptr;
}

bool Staging::streamable(const BufferRef& b) const {
  return staged(b) && b.device()->properties().has(POLYCHIP_CAP_ASYNC_COPY);
}

uint8_t* Staging::mapped(const BufferRef& b, uint64_t bytes) const {
  if (!b.on_device()) return static_cast<uint8_t*>(b.host());
  polychip_memory_host_pointer_args args{};
  args.struct_size = sizeof(args);
  args.memory = b.memory();
  b.device()->check(b.device()->api().memory_host_pointer(&args), "memory_host_pointer");
  return static_cast<uint8_t*>(args.host_pointer) + b.offset();
}

void Staging::copy(const BufferRef& b, bool to_device, uint8_t* host, uint64_t offset,
                   uint64_t bytes, const Stream* stream) const {
  if (bytes == 0) return;
  polychip_copy_args args{};
  args.struct_size = sizeof(args);
  args.size_bytes = bytes;
  args.stream = stream ? stream->handle() : nullptr;
  if (to_device) {
    args.kind = POLYCHIP_COPY_HOST_TO_DEVICE;
    args.src_host = host;
    args.dst_memory = b.memory();
    args.dst_offset = b.offset() + offset;
  } else {
    args.kind = POLYCHIP_COPY_DEVICE_TO_HOST;
    args.src_memory = b.memory();
    args.src_offset = b.offset() + offset;
    args.dst_host = host;
  }
  b.device()->check(b.device()->api().copy(&args),
                    to_device ? "copy (host staging to device)" : "copy (device to host staging)");
}

void Staging::copy_on_device(const BufferRef& from, const BufferRef& to, uint64_t to_offset,
                             uint64_t bytes, const Stream* stream) const {
  if (bytes == 0) return;
  polychip_copy_args args{};
  args.struct_size = sizeof(args);
  args.kind = POLYCHIP_COPY_DEVICE_TO_DEVICE;
  args.size_bytes = bytes;
  args.stream = stream ? stream->handle() : nullptr;
  args.src_memory = from.memory();
  args.src_offset = from.offset();
  args.dst_memory = to.memory();
  args.dst_offset = to.offset() + to_offset;
  to.device()->check(to.device()->api().copy(&args), "copy (device to device)");
}

const Stream& Staging::stream_for(const Device& device) {
  auto& slot = streams_[{&device.api(), device.index()}];
  if (!slot) slot = std::make_unique<Stream>(device);
  return *slot;
}

// A few buffers are enough: a collective stages at most an input and an
// output (p2p groups a handful more).
constexpr size_t kPooledBuffers = 4;

uint8_t* Staging::lease(uint64_t bytes, std::vector<Lease>& leases) {
  // The smallest pooled buffer that fits, else a new one.
  auto best = pool_.end();
  for (auto it = pool_.begin(); it != pool_.end(); ++it) {
    if (it->size() >= bytes && (best == pool_.end() || it->size() < best->size())) best = it;
  }
  std::vector<uint8_t> storage;
  if (best != pool_.end()) {
    storage = std::move(*best);
    pool_.erase(best);
  } else {
    storage.resize(std::max<uint64_t>(bytes, 1));
  }
  leases.emplace_back(this, std::move(storage));
  return leases.back().data();
}

void Staging::give_back(std::vector<uint8_t> storage) {
  pool_.push_back(std::move(storage));
  if (pool_.size() > kPooledBuffers) {
    auto smallest = std::min_element(pool_.begin(), pool_.end(), [](const auto& a, const auto& b) {
      return a.size() < b.size();
    });
    pool_.erase(smallest);
  }
}

uint8_t* Staging::input(const BufferRef& b, uint64_t bytes, std::vector<Lease>& leases) {
  check_capacity(b, bytes);
  if (host_visible(b)) return mapped(b, bytes);
  uint8_t* host = lease(bytes, leases);
  copy(b, false, host, 0, bytes, nullptr);
  return host;
}

uint8_t* Staging::output(const BufferRef& b, uint64_t bytes, std::vector<Lease>& leases) {
  check_capacity(b, bytes);
  if (host_visible(b)) return mapped(b, bytes);
  return lease(bytes, leases);
}

void Staging::copy_back(const BufferRef& b, const uint8_t* host, uint64_t bytes) {
  if (!staged(b)) return;
  copy(b, true, const_cast<uint8_t*>(host), 0, bytes, nullptr);
}

StreamedStaging::~StreamedStaging() {
  if (finished_) return;
  // An error left copies queued: they must not outlive the host leases.
  for (const Stream* s : {input_stream_, output_stream_}) {
    if (!s) continue;
    try {
      s->synchronize();
    } catch (const Error&) {  // the collective's own error is already on its way
    }
  }
}

uint8_t* StreamedStaging::input(const BufferRef& send, uint64_t bytes) {
  in_bytes_ = bytes;
  if (!overlap_ || !staging_.streamable(send) || bytes == 0) {
    in_ = staging_.input(send, bytes, leases_);
    return in_;
  }
  check_capacity(send, bytes);
  input_staged_ = true;
  in_ = staging_.lease(bytes, leases_);
  input_stream_ = &staging_.stream_for(*send.device());
  for (uint64_t off = 0; off < bytes; off += piece_bytes_) {
    staging_.copy(send, false, in_ + off, off, std::min(piece_bytes_, bytes - off), input_stream_);
    pieces_.emplace_back(*send.device());
    pieces_.back().record(*input_stream_);
  }
  return in_;
}

uint8_t* StreamedStaging::output(const BufferRef& recv, uint64_t bytes, bool in_place) {
  recv_ = recv;
  out_bytes_ = bytes;
  output_staged_ = staging_.staged(recv);
  if (in_place) {
    out_ = in_;
  } else {
    out_ = staging_.output(recv, bytes, leases_);
  }
  if (overlap_ && staging_.streamable(recv)) output_stream_ = &staging_.stream_for(*recv.device());
  return out_;
}

void StreamedStaging::wait_input(const uint8_t* p, uint64_t n) {
  if (!input_staged_ || n == 0 || p + n <= in_ || p >= in_ + in_bytes_) return;
  const uint64_t last = std::min<uint64_t>(p + n - in_, in_bytes_) - 1;
  const size_t needed = static_cast<size_t>(last / piece_bytes_) + 1;
  // Pieces complete in order on one stream: waiting for the last needed
  // one covers those before it.
  if (pieces_done_ >= needed) return;
  pieces_[needed - 1].synchronize();
  pieces_done_ = needed;
}

void StreamedStaging::output_final(const uint8_t* p, uint64_t n) {
  if (!output_staged_ || !output_stream_ || n == 0) return;
  staging_.copy(recv_, true, const_cast<uint8_t*>(p), static_cast<uint64_t>(p - out_), n,
                output_stream_);
  marked_bytes_ += n;
}

void StreamedStaging::finish() {
  wait_all_input();
  if (output_staged_ && marked_bytes_ < out_bytes_) {
    // Not marked piece by piece (or not exactly): copy the whole result.
    staging_.copy(recv_, true, out_, 0, out_bytes_, output_stream_);
  }
  if (output_stream_) output_stream_->synchronize();
  if (input_stream_ && input_stream_ != output_stream_) input_stream_->synchronize();
  finished_ = true;
}

}  // namespace polychip::comm
