// One direction of a same-host link: a single-producer single-consumer byte
// ring in a POSIX shared-memory segment. It carries exactly the bytes a TCP
// socket would (frame headers and payloads), so the transport's framing,
// validation and checksums are the same on both; what it saves is the
// kernel's two copies and the socket buffers of loopback TCP.
//
// The receiver creates the segment and sends its name and a random token
// over the authenticated TCP connection; the sender maps it and checks the
// token. Neither side trusts the other's counters: a head or tail that
// would make the ring hold more than its capacity is DATA_CORRUPTION.
//
// Wake-ups: a side about to sleep in poll() arms its "waiting" flag and
// re-checks the ring; the other side, after moving bytes, takes the flag and
// rings a doorbell on the TCP connection (sequentially consistent flag and
// counter accesses, so no wake-up is lost).
//
// Beside the ring, a mailbox: one small message per collective sequence
// number, for collectives too small for frames to pay (a frame costs a
// plan, a header and a ring pass on each side; a message is a few stores).
// Two slots (even and odd sequence numbers), each free again once the
// receiver took its message: a rank may run one collective ahead of a
// peer (a broadcast root does) without waiting.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "transport/byte_ring.hpp"

namespace polychip::comm {

inline constexpr uint32_t kShmRingMagic = 0x31534350;  // "PCS1"
// The segment: this control block, padded to kShmRingControlBytes, then the
// ring's bytes. Counters sit on their own cache lines: the sender writes
// head and the receiver tail, each only reading the other's.
inline constexpr uint64_t kShmRingControlBytes = 4096;
inline constexpr uint64_t kShmMailBytes = 240;
struct ShmMailSlot {
  std::atomic<uint64_t> posted;  // 1 + the sequence number of the message held (0: none yet)
  uint64_t bytes;                // the message's size (the sender wrote it: checked)
  uint8_t data[kShmMailBytes];
};
struct ShmRingControl {
  uint32_t magic;
  uint32_t version;
  uint64_t capacity;
  uint8_t token[32];
  alignas(64) std::atomic<uint64_t> head;  // bytes ever written (sender)
  alignas(64) std::atomic<uint64_t> tail;  // bytes ever consumed (receiver)
  alignas(64) std::atomic<uint32_t> reader_waiting;
  alignas(64) std::atomic<uint32_t> writer_waiting;
  alignas(64) ShmMailSlot mail[2];                  // written by the sender
  alignas(64) std::atomic<uint64_t> mail_taken[2];  // by the receiver: a slot's last `posted` taken
};
static_assert(sizeof(ShmRingControl) <= kShmRingControlBytes);
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared counters must be lock-free");

class ShmRing final : public ByteRing {
 public:
  using Token = std::array<uint8_t, 32>;

  // Receiver side: a new segment with `capacity` bytes of ring (a power of
  // two). Throws UNAVAILABLE when shared memory cannot be created.
  static ShmRing create(uint64_t capacity);
  // Sender side: maps the segment `name` and checks its token and capacity.
  // Throws UNAVAILABLE when it cannot be opened (another host, another
  // container) and DATA_CORRUPTION when it is not the ring that was offered.
  static ShmRing open(const std::string& name, const Token& token, uint64_t capacity);

  ShmRing(ShmRing&& other) noexcept;
  ShmRing& operator=(ShmRing&& other) noexcept;
  ShmRing(const ShmRing&) = delete;
  ShmRing& operator=(const ShmRing&) = delete;
  ~ShmRing() override;

  const std::string& name() const { return name_; }
  const Token& token() const { return token_; }
  uint64_t capacity() const { return capacity_; }
  // Removes the name (the mapping stays): done once the sender mapped it or
  // declined, so no segment outlives the job even if it crashes.
  void unlink();

  uint64_t write(const void* data, uint64_t size) override;
  uint64_t peek(const uint8_t** data) override;
  void consume(uint64_t bytes) override;
  bool arm_reader() override;
  bool arm_writer() override;
  bool take_reader_waiting() override;
  bool take_writer_waiting() override;

  // The mailbox. Sender: posts the message for `seq`; false (nothing
  // written) while that slot's previous message is not taken yet. With
  // `slot_known_free` the receiver's counter is not read (a cache line the
  // other core wrote last: a miss on every call's path).
  bool post_mail(uint64_t seq, const void* data, uint64_t bytes, bool slot_known_free = false);
  // Receiver: copies the message for `seq` into `out` (kShmMailBytes room)
  // and frees its slot; -1 while it is not posted.
  int64_t take_mail(uint64_t seq, void* out);
  // Before sleeping, as arm_reader()/arm_writer(): false when the message
  // awaited is posted, or the slot to post into is free, already.
  bool arm_mail_reader(uint64_t seq);
  bool arm_mail_writer(uint64_t seq);

 private:
  ShmRing() = default;
  void release();  // unlinks and unmaps (destructor, move-assignment)
  // head - tail, checked against the capacity (the other side wrote one of them).
  uint64_t used(const char* other_side) const;
  uint64_t readable() const;
  uint64_t writable() const;
  bool mail_posted(uint64_t seq) const;  // and not taken yet
  bool mail_slot_free(uint64_t seq) const;

  std::string name_;
  Token token_{};
  uint64_t capacity_ = 0;
  void* mapping_ = nullptr;
  uint64_t mapping_bytes_ = 0;
  ShmRingControl* control_ = nullptr;
  uint8_t* data_ = nullptr;
  bool linked_ = false;
};

}  // namespace polychip::comm
