#include "transport/shm/shm_ring.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "polychip/error.hpp"
#include "transport/tcp/socket.hpp"
#include "wire/wire.hpp"

namespace polychip::comm {

namespace {

std::string errno_message(const char* call, const std::string& name) {
  return std::string(call) + "(" + name + "): " + std::strerror(errno);
}

}  // namespace

ShmRing ShmRing::create(uint64_t capacity) {
  if (capacity == 0 || (capacity & (capacity - 1)) != 0) {
    throw_error(
        StatusCode::kInvalidArgument,
        "shared-memory ring capacity must be a power of two, got " + std::to_string(capacity));
  }
  ShmRing ring;
  random_bytes(ring.token_.data(), ring.token_.size());
  ring.name_ = "/polychip-" + to_hex({ring.token_.data(), 8});
  ring.capacity_ = capacity;
  ring.mapping_bytes_ = kShmRingControlBytes + capacity;
  int fd = ::shm_open(ring.name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw_error(StatusCode::kUnavailable, errno_message("shm_open", ring.name_));
  ring.linked_ = true;
  Fd owner(fd);
  if (::ftruncate(fd, static_cast<off_t>(ring.mapping_bytes_)) != 0) {
    ring.unlink();
    throw_error(StatusCode::kUnavailable, errno_message("ftruncate", ring.name_));
  }
  ring.mapping_ = ::mmap(nullptr, ring.mapping_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (ring.mapping_ == MAP_FAILED) {
    ring.mapping_ = nullptr;
    ring.unlink();
    throw_error(StatusCode::kUnavailable, errno_message("mmap", ring.name_));
  }
  ring.control_ = new (ring.mapping_) ShmRingControl{};
  ring.control_->magic = kShmRingMagic;
  ring.control_->version = kWireVersion;
  ring.control_->capacity = capacity;
  std::memcpy(ring.control_->token, ring.token_.data(), ring.token_.size());
  ring.data_ = static_cast<uint8_t*>(ring.mapping_) + kShmRingControlBytes;
  return ring;
}

ShmRing ShmRing::open(const std::string& name, const Token& token, uint64_t capacity) {
  ShmRing ring;
  ring.name_ = name;
  ring.token_ = token;
  ring.capacity_ = capacity;
  ring.mapping_bytes_ = kShmRingControlBytes + capacity;
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) throw_error(StatusCode::kUnavailable, errno_message("shm_open", name));
  Fd owner(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != ring.mapping_bytes_) {
    throw_error(StatusCode::kDataCorruption,
                "shared-memory ring " + name + " does not have the offered size");
  }
  ring.mapping_ = ::mmap(nullptr, ring.mapping_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (ring.mapping_ == MAP_FAILED) {
    ring.mapping_ = nullptr;
    throw_error(StatusCode::kUnavailable, errno_message("mmap", name));
  }
  ring.control_ = static_cast<ShmRingControl*>(ring.mapping_);
  if (ring.control_->magic != kShmRingMagic || ring.control_->version != kWireVersion ||
      ring.control_->capacity != capacity ||
      std::memcmp(ring.control_->token, token.data(), token.size()) != 0) {
    throw_error(StatusCode::kDataCorruption,
                "shared-memory ring " + name + " is not the one the peer offered");
  }
  ring.data_ = static_cast<uint8_t*>(ring.mapping_) + kShmRingControlBytes;
  return ring;
}

ShmRing::ShmRing(ShmRing&& other) noexcept { *this = std::move(other); }

ShmRing& ShmRing::operator=(ShmRing&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    token_ = other.token_;
    capacity_ = other.capacity_;
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = other.mapping_bytes_;
    control_ = std::exchange(other.control_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    linked_ = std::exchange(other.linked_, false);
  }
  return *this;
}

ShmRing::~ShmRing() { release(); }

void ShmRing::release() {
  unlink();
  if (mapping_) ::munmap(mapping_, mapping_bytes_);
  mapping_ = nullptr;
}

void ShmRing::unlink() {
  if (linked_) ::shm_unlink(name_.c_str());
  linked_ = false;
}

uint64_t ShmRing::used(const char* other_side) const {
  uint64_t head = control_->head.load(std::memory_order_seq_cst);
  uint64_t tail = control_->tail.load(std::memory_order_seq_cst);
  if (head - tail > capacity_) {
    throw_error(StatusCode::kDataCorruption, "shared-memory ring " + name_ + ": the " + other_side +
                                                 "'s counter is inconsistent");
  }
  return head - tail;
}

uint64_t ShmRing::readable() const { return used("sender"); }

uint64_t ShmRing::writable() const { return capacity_ - used("receiver"); }

uint64_t ShmRing::write(const void* data, uint64_t size) {
  uint64_t n = std::min(size, writable());
  if (n == 0) return 0;
  uint64_t head = control_->head.load(std::memory_order_relaxed);
  uint64_t at = head & (capacity_ - 1);
  uint64_t first = std::min(n, capacity_ - at);
  const auto* src = static_cast<const uint8_t*>(data);
  std::memcpy(data_ + at, src, first);
  if (n > first) std::memcpy(data_, src + first, n - first);
  control_->head.store(head + n, std::memory_order_seq_cst);
  return n;
}

uint64_t ShmRing::peek(const uint8_t** data) {
  uint64_t ready = readable();
  uint64_t at = control_->tail.load(std::memory_order_relaxed) & (capacity_ - 1);
  *data = data_ + at;
  return std::min(ready, capacity_ - at);
}

void ShmRing::consume(uint64_t bytes) {
  uint64_t tail = control_->tail.load(std::memory_order_relaxed);
  control_->tail.store(tail + bytes, std::memory_order_seq_cst);
}

bool ShmRing::arm_reader() {
  control_->reader_waiting.store(1, std::memory_order_seq_cst);
  if (readable() == 0) return true;
  control_->reader_waiting.store(0, std::memory_order_relaxed);
  return false;
}

bool ShmRing::arm_writer() {
  control_->writer_waiting.store(1, std::memory_order_seq_cst);
  if (writable() == 0) return true;
  control_->writer_waiting.store(0, std::memory_order_relaxed);
  return false;
}

bool ShmRing::take_reader_waiting() {
  return control_->reader_waiting.load(std::memory_order_seq_cst) != 0 &&
         control_->reader_waiting.exchange(0, std::memory_order_seq_cst) != 0;
}

bool ShmRing::take_writer_waiting() {
  return control_->writer_waiting.load(std::memory_order_seq_cst) != 0 &&
         control_->writer_waiting.exchange(0, std::memory_order_seq_cst) != 0;
}

bool ShmRing::mail_posted(uint64_t seq) const {
  const uint64_t slot = seq % 2;
  return control_->mail[slot].posted.load(std::memory_order_seq_cst) == seq + 1 &&
         control_->mail_taken[slot].load(std::memory_order_relaxed) != seq + 1;
}

bool ShmRing::mail_slot_free(uint64_t seq) const {
  const uint64_t slot = seq % 2;
  return control_->mail_taken[slot].load(std::memory_order_seq_cst) ==
         control_->mail[slot].posted.load(std::memory_order_relaxed);
}

bool ShmRing::post_mail(uint64_t seq, const void* data, uint64_t bytes, bool slot_known_free) {
  if (bytes > kShmMailBytes) {
    throw_error(StatusCode::kInternal, "a mailbox message of " + std::to_string(bytes) +
                                           " bytes exceeds the mailbox (" +
                                           std::to_string(kShmMailBytes) + ")");
  }
  if (!slot_known_free && !mail_slot_free(seq)) return false;
  ShmMailSlot& slot = control_->mail[seq % 2];
  slot.bytes = bytes;
  std::memcpy(slot.data, data, bytes);
  slot.posted.store(seq + 1, std::memory_order_seq_cst);
  return true;
}

int64_t ShmRing::take_mail(uint64_t seq, void* out) {
  if (!mail_posted(seq)) return -1;
  ShmMailSlot& slot = control_->mail[seq % 2];
  const uint64_t bytes = slot.bytes;
  if (bytes > kShmMailBytes) {
    throw_error(StatusCode::kDataCorruption, "shared-memory ring " + name_ +
                                                 ": the sender's mailbox message claims " +
                                                 std::to_string(bytes) + " bytes");
  }
  std::memcpy(out, slot.data, bytes);
  control_->mail_taken[seq % 2].store(seq + 1, std::memory_order_seq_cst);
  return static_cast<int64_t>(bytes);
}

bool ShmRing::arm_mail_reader(uint64_t seq) {
  control_->reader_waiting.store(1, std::memory_order_seq_cst);
  if (!mail_posted(seq)) return true;
  control_->reader_waiting.store(0, std::memory_order_relaxed);
  return false;
}

bool ShmRing::arm_mail_writer(uint64_t seq) {
  control_->writer_waiting.store(1, std::memory_order_seq_cst);
  if (!mail_slot_free(seq)) return true;
  control_->writer_waiting.store(0, std::memory_order_relaxed);
  return false;
}

}  // namespace polychip::comm
