// One direction of an RDMA lane (the H2D-RDMA path, docs/comm.md "Paths"):
// the receiver's ring is host memory registered with the NIC; the sender
// stages its bytes in a registered mirror of the ring and writes them into
// the peer's ring with one-sided RMA writes, whose immediate data tells the
// receiver how many bytes landed. Large payloads are lent instead of staged:
// written straight from the caller's memory (one copy fewer per byte), which
// the caller leaves alone until lent_in_use() says the writes completed. The
// receiver hands the space back with credits, small writes into the sender's
// credit box whose immediate data carries the count. Up to four data writes
// per lane are in flight; each carries a 2-bit sequence number, so a provider
// that lands them out of order is caught (DATA_CORRUPTION) instead of believed.
//
// A placement (docs/comm.md "Placements") skips the ring: the receiver
// offered a receive's own buffer for a frame whose payload it does not
// reduce, and the sender writes that payload straight there (place()), so
// the receiver copies nothing out of its ring; the frame's header, still in
// the ring, says so. Those writes share the sequence numbers, and their
// notices say how many placed bytes landed.
//
// Immediate data is 32 bits (verbs carries no more): the writer's rank (10
// bits), the sequence number (2 bits), the kind (2 bits: into the ring, a
// credit, placed) and the byte count minus one (18 bits).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "transport/byte_ring.hpp"
#include "transport/rdma/fabric_rma.hpp"

namespace polychip::comm {

inline constexpr int kRmaMaxRanks = 1 << 10;
inline constexpr size_t kRmaWritesInFlight = 4;            // the sequence number's range
inline constexpr uint64_t kRmaMaxWriteBytes = 256 * 1024;  // 2^18: the count's range
// Below this a payload is copied into the mirror: a registration per loan
// costs more than the copy of a few pages.
inline constexpr uint64_t kRmaLendMinBytes = 64 * 1024;

enum class RmaNoticeKind : uint8_t { kData = 0, kCredit = 1, kPlaced = 2 };
struct RmaNotice {
  int rank = 0;
  RmaNoticeKind kind = RmaNoticeKind::kData;
  uint32_t bytes = 1;  // 1 .. kRmaMaxWriteBytes
  uint32_t seq = 0;    // data and placed writes: their number modulo kRmaWritesInFlight
};
uint64_t encode_rma_notice(const RmaNotice& n);
RmaNotice decode_rma_notice(uint64_t immediate);

class RmaRing;

// The fabric endpoint of one rank and the rings of its RDMA lanes: progress
// reads the completion queue and hands each notice to its ring.
class RmaEndpoint {
 public:
  RmaEndpoint(std::unique_ptr<FabricRma> fabric, int rank, int world);
  FabricRma& fabric() { return *fabric_; }
  int rank() const { return rank_; }
  void attach(int peer, RmaRing* receiver, RmaRing* sender);
  // True when a notice arrived. DATA_CORRUPTION on a notice from a rank
  // without a lane or one that overfills a ring.
  bool progress();

 private:
  std::unique_ptr<FabricRma> fabric_;
  int rank_;
  std::vector<RmaRing*> receivers_, senders_;  // by peer rank
};

class RmaRing final : public ByteRing {
 public:
  // Receiver side: a registered ring of `capacity` bytes (a power of two)
  // and the region a peer writes into.
  static std::unique_ptr<RmaRing> receiver(RmaEndpoint& endpoint, uint64_t capacity);
  // Sender side: a registered mirror of the peer's ring and the credit box
  // the peer writes into.
  static std::unique_ptr<RmaRing> sender(RmaEndpoint& endpoint, uint64_t capacity);
  // Deregisters its memory: a ring must go before its endpoint.
  ~RmaRing() override;

  // What the peer needs: the ring (receiver) or the credit box (sender).
  RemoteRegion region() const { return region_; }
  // Completes the lane once the peer's answer is in: its fabric handle and
  // its credit box (receiver) or ring (sender).
  void connect(uint64_t peer_handle, const RemoteRegion& peer_region);

  uint64_t write(const void* data, uint64_t size) override;
  uint64_t lend(const void* data, uint64_t size) override;
  uint64_t lent_in_use() const override;

  // Sender: writes all `size` bytes of `data` into the peer's offered
  // region `to`, not into its ring, from the caller's memory (a loan, as
  // lend()'s). The caller leaves them unchanged until placed_written()
  // counts them.
  void place(const void* data, uint64_t size, const RemoteRegion& to);
  // Sender: bytes ever handed to place() whose writes completed.
  uint64_t placed_written() const { return placed_written_; }
  // Receiver: placed bytes ever landed, and the most that may land: the
  // transport allows what it offered, so a notice beyond it is refused.
  uint64_t placed_landed() const { return placed_head_; }
  void allow_placed(uint64_t bytes) { placed_allowed_ += bytes; }
  uint64_t peek(const uint8_t** data) override;
  void consume(uint64_t bytes) override;
  bool arm_reader() override;
  bool arm_writer() override;
  bool take_reader_waiting() override { return false; }
  bool take_writer_waiting() override { return false; }
  bool progress() override;
  bool wakes_by_doorbell() const override { return false; }
  // Nothing staged, owed or in flight: the lane can be left alone.
  bool drained() const override;

 private:
  friend class RmaEndpoint;
  RmaRing(RmaEndpoint& endpoint, uint64_t capacity, bool is_receiver);
  void landed(uint32_t bytes, uint32_t seq, bool placed);  // receiver: a data notice
  void credited(uint32_t bytes);                           // sender: a credit notice
  // Sender: retires completed writes and posts staged bytes while fewer
  // than kRmaWritesInFlight are in flight.
  bool post_staged();
  // Sender: posts one write of the stream (into the ring at `offset`, or
  // placed) as the next in flight; false when the provider is full.
  bool post_write(const uint8_t* from, uint64_t bytes, const RemoteRegion& to, uint64_t offset,
                  const FabricRma::LentMemory* lent, bool placed);
  // Receiver: hands consumed space back once enough piled up or the ring emptied.
  bool post_credit();
  // Sender: bytes of the peer's ring not staged into and not owed back.
  uint64_t free_space() const { return capacity_ - (staged_ - credit_); }

  RmaEndpoint& endpoint_;
  uint64_t capacity_;
  bool is_receiver_;
  uint8_t* memory_ = nullptr;  // the ring, or the sender's mirror of it
  uint64_t box_ = 0;           // sender: the credit box; receiver: the credit's source
  RemoteRegion region_;
  uint64_t peer_ = 0;
  RemoteRegion peer_region_;
  bool connected_ = false;
  // Counters of bytes ever moved. Receiver: landed (head) and consumed
  // (tail), credited. Sender: staged, posted, written (completed), credit.
  uint64_t head_ = 0, tail_ = 0, credited_ = 0;
  uint64_t staged_ = 0, posted_ = 0, written_ = 0, credit_ = 0;
  // The staged stream in order: runs copied into the mirror (`source` null)
  // and loans of a caller's memory; a run goes once every byte of it was
  // written (a loan's registration with it).
  struct Run {
    uint64_t begin = 0, end = 0;
    const uint8_t* source = nullptr;
    FabricRma::LentMemory lent;
  };
  std::deque<Run> runs_;
  // Placements not yet fully posted, and those posted and not yet
  // completed, in order; the loan ends with the last write.
  struct Placement {
    const uint8_t* source = nullptr;
    uint64_t bytes = 0, posted = 0, written = 0;
    RemoteRegion to;
    FabricRma::LentMemory lent;
  };
  std::deque<Placement> placements_;
  uint64_t placed_written_ = 0;
  uint64_t placed_head_ = 0, placed_allowed_ = 0;
  // Writes in flight, oldest first (the receiver's one credit uses slot 0).
  struct Write {
    uint64_t bytes = 0;
    bool placed = false;
    WriteCompletion completion;
  };
  std::array<Write, kRmaWritesInFlight> writes_;
  size_t first_ = 0, in_flight_ = 0;
  uint32_t next_seq_ = 0;  // sender: of the next write; receiver: expected next
};

}  // namespace polychip::comm
