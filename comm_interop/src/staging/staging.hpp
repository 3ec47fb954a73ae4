// Host staging of device buffers: host pointers and host-visible device
// memory (the cpu adapter's) are used in place; other device memory (sim,
// opencl, ...) is copied device -> host before the network and host ->
// device after it, with the adapter's own copies.
//
// StreamedStaging overlaps those copies with the network for one
// collective: on adapters with asynchronous copies the input comes to the
// host piece by piece on the device's stream (the transport waits only for
// the range it is about to touch), and output ranges go back as soon as the
// algorithm marks them final.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "polychip/comm/buffer_ref.hpp"
#include "polychip/memory.hpp"

namespace polychip::comm {

class Staging {
 public:
  // Host bytes borrowed from the staging pool for one call; returned on
  // destruction, so repeated collectives reuse pages instead of faulting in
  // fresh ones every call.
  class Lease {
   public:
    Lease(Staging* owner, std::vector<uint8_t> storage)
        : owner_(owner), storage_(std::move(storage)) {}
    Lease(Lease&& o) noexcept
        : owner_(std::exchange(o.owner_, nullptr)), storage_(std::move(o.storage_)) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (owner_) owner_->give_back(std::move(storage_));
    }
    uint8_t* data() { return storage_.data(); }

   private:
    Staging* owner_;
    std::vector<uint8_t> storage_;
  };
  // `bytes` of host memory (contents undefined) for the caller's call.
  uint8_t* lease(uint64_t bytes, std::vector<Lease>& leases);
  // Host pointer holding `bytes` of `b`'s current contents.
  uint8_t* input(const BufferRef& b, uint64_t bytes, std::vector<Lease>& leases);
  // Host pointer the result of `bytes` goes to (contents undefined).
  uint8_t* output(const BufferRef& b, uint64_t bytes, std::vector<Lease>& leases);
  // Writes the result back when `b` is staged device memory.
  void copy_back(const BufferRef& b, const uint8_t* host, uint64_t bytes);
  bool host_visible(const BufferRef& b) const;
  bool staged(const BufferRef& b) const { return b.on_device() && !host_visible(b); }
  // Staged memory whose adapter copies asynchronously on streams.
  bool streamable(const BufferRef& b) const;

  // Copies `bytes` between `host` and `b` at `offset` past its own offset;
  // on `stream` (asynchronous) or, with nullptr, synchronously.
  void copy(const BufferRef& b, bool to_device, uint8_t* host, uint64_t offset, uint64_t bytes,
            const Stream* stream) const;
  // Copies `bytes` from `from` to `to` at `to_offset` past its own offset,
  // on one device (`stream`: asynchronous; nullptr: synchronous).
  void copy_on_device(const BufferRef& from, const BufferRef& to, uint64_t to_offset,
                      uint64_t bytes, const Stream* stream) const;
  // One stream per device, created on first use and kept for later calls.
  const Stream& stream_for(const Device& device);

 private:
  uint8_t* mapped(const BufferRef& b, uint64_t bytes) const;
  void give_back(std::vector<uint8_t> storage);
  std::vector<std::vector<uint8_t>> pool_;
  // Keyed by adapter table and device index: BufferRef's Device pointers
  // belong to the buffers and die with them.
  std::map<std::pair<const polychip_adapter_api*, int>, std::unique_ptr<Stream>> streams_;
};

class StreamedStaging {
 public:
  // Input pieces of `piece_bytes` (the pipelining unit of the transport);
  // with `overlap` false every copy is whole and synchronous.
  StreamedStaging(Staging& staging, uint64_t piece_bytes, bool overlap)
      : staging_(staging), piece_bytes_(piece_bytes), overlap_(overlap) {}
  StreamedStaging(const StreamedStaging&) = delete;
  StreamedStaging& operator=(const StreamedStaging&) = delete;
  // Waits for every copy still queued (so no copy outlives its host buffer).
  ~StreamedStaging();

  // Host pointer for `send`; device -> host copies start now.
  uint8_t* input(const BufferRef& send, uint64_t bytes);
  // Host pointer for `recv`; `in_place` reuses the input's host bytes.
  uint8_t* output(const BufferRef& recv, uint64_t bytes, bool in_place);
  uint64_t input_pieces() const { return pieces_.size(); }
  uint64_t early_output_bytes() const { return marked_bytes_; }

  // Blocks until [p, p + n) of the input is on the host; no-op for ranges
  // outside the staged input.
  void wait_input(const uint8_t* p, uint64_t n);
  void wait_all_input() { wait_input(in_, in_bytes_); }
  // [p, p + n) of the output holds final bits: queue it host -> device.
  void output_final(const uint8_t* p, uint64_t n);
  // Queues the output the algorithm did not mark and waits for every copy.
  void finish();

 private:
  Staging& staging_;
  uint64_t piece_bytes_;
  bool overlap_;
  std::vector<Staging::Lease> leases_;
  BufferRef recv_{static_cast<void*>(nullptr)};
  uint8_t* in_ = nullptr;
  uint64_t in_bytes_ = 0;
  bool input_staged_ = false;  // copied piece by piece on a stream
  const Stream* input_stream_ = nullptr;
  std::vector<Event> pieces_;  // one per input piece, recorded after its copy
  size_t pieces_done_ = 0;     // pieces known to be on the host (in order)
  uint8_t* out_ = nullptr;
  uint64_t out_bytes_ = 0;
  bool output_staged_ = false;
  const Stream* output_stream_ = nullptr;
  uint64_t marked_bytes_ = 0;
  bool finished_ = false;
};

}  // namespace polychip::comm
