// One direction of a lane that carries exactly the bytes a TCP socket would
// (frame headers and payloads) without a file descriptor: a shared-memory
// ring (shm/shm_ring.hpp) or a ring in registered memory written by RMA
// (rdma/rma_ring.hpp). The transport's framing, validation, checksums and
// receive-and-reduce are the same over every lane; only progress and
// wake-ups differ.
#pragma once

#include <cstdint>

namespace polychip::comm {

class ByteRing {
 public:
  virtual ~ByteRing() = default;

  // Sender: takes as much of `size` bytes as fits; returns how many.
  virtual uint64_t write(const void* data, uint64_t size) = 0;
  // Sender: like write(), but the ring may send straight from `data` later
  // instead of copying it now: the caller leaves those bytes unchanged
  // until lent_in_use() no longer counts them. Rings that copy just write.
  virtual uint64_t lend(const void* data, uint64_t size) { return write(data, size); }
  // Sender: how many of the last bytes taken are lent memory still (or
  // behind lent memory) in use: the ring has let go of all before them.
  virtual uint64_t lent_in_use() const { return 0; }
  // Receiver: bytes ready and a pointer to the contiguous part of them
  // (up to the end of the ring), then consume() what was used. Rings that
  // need progress() count what the last progress() saw land: polling the
  // provider on every look would contend for its locks with the peer.
  virtual uint64_t peek(const uint8_t** data) = 0;
  virtual void consume(uint64_t bytes) = 0;
  // Receiver: copies up to `size` ready bytes; returns how many.
  uint64_t read(void* data, uint64_t size);

  // Before sleeping: true when this side may sleep (its flag is armed and
  // the ring has nothing for it); false: there is work, do not sleep.
  virtual bool arm_reader() = 0;
  virtual bool arm_writer() = 0;
  // After moving bytes: true when the other side sleeps (ring its doorbell).
  virtual bool take_reader_waiting() = 0;
  virtual bool take_writer_waiting() = 0;
  // Moves bytes that need this side's help (posted writes, credits); true
  // when something moved. Shared memory needs none.
  virtual bool progress() { return false; }
  // Nothing staged, owed or in flight that needs this side's progress: the
  // transport may leave the lane alone (between collectives).
  virtual bool drained() const { return true; }
  // Whether the other side can wake this one from poll(): without it the
  // transport sleeps at most a millisecond at a time.
  virtual bool wakes_by_doorbell() const { return true; }
};

}  // namespace polychip::comm
