// The rendezvous store: a small authenticated key/value server on rank 0
// (or in the process that created the unique id). Ranks publish their
// PeerInfo and read everyone else's; the server exits once `world` ranks
// have reported ready, or at its deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "security/handshake.hpp"

namespace polychip::comm {

class StoreServer {
 public:
  // Takes a listening socket; serves until `world` ranks added to the
  // "ready" counter, it is destroyed, or twice `timeout_seconds` (the ranks'
  // timeout: one for the rendezvous, one for the mesh) and a grace passed.
  StoreServer(Fd listener, Credentials credentials, double timeout_seconds);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;
  void join();
  // Connections dropped because they failed the handshake.
  int refused_connections() const { return refused_.load(); }

 private:
  void serve();
  Fd listener_;
  Credentials credentials_;
  double timeout_seconds_;
  std::atomic<int> refused_{0};
  std::atomic<bool> stop_{false};
  int wake_pipe_[2] = {-1, -1};
  std::thread thread_;
};

class StoreClient {
 public:
  StoreClient(const std::string& host, uint16_t port, const Credentials& credentials, uint32_t rank,
              uint32_t world, const Deadline& deadline);
  void set(const std::string& key, const std::vector<uint8_t>& value);
  // Waits until the key exists (or the deadline).
  std::vector<uint8_t> get(const std::string& key);
  int64_t add(const std::string& key, int64_t increment);
  // Address of our end of the connection: the interface that routes to the
  // store, which is what other ranks should use to reach us.
  std::string local_address() const;
  int fd() const { return fd_.get(); }

 private:
  std::vector<uint8_t> request(const StoreRequest& r);
  // A peer-lost notice the store sent before it closed, if one is waiting
  // unread (it names the rank whose loss ended rank 0); empty otherwise.
  std::string unread_peer_lost_notice();
  Fd fd_;
  Deadline deadline_;
};

inline constexpr const char* kStoreReadyKey = "polychip/ready";
inline constexpr double kLostNoticeDrainSeconds = 1.0;
inline constexpr const char* kStoreServerGone = "is gone (it exited, failed or was killed)";

// While a rank builds its connections, watches its store connection: the
// store tells every rank still setting up when another one left before it
// was ready, and a store that closes means rank 0 did. Either raises
// cancelled(), so set-up waits on deadlines made with it end at once.
class LostPeerWatch {
 public:
  explicit LostPeerWatch(const StoreClient& store);
  ~LostPeerWatch();
  LostPeerWatch(const LostPeerWatch&) = delete;
  LostPeerWatch& operator=(const LostPeerWatch&) = delete;
  // Stops watching (the connection is free for requests again). Returns who
  // left, empty when nobody did.
  std::string stop();
  // Waits up to `grace` for the store's word, then stops.
  std::string stop_after(std::chrono::milliseconds grace);
  std::shared_ptr<const std::atomic<bool>> cancelled() const { return cancelled_; }

 private:
  int fd_;
  int wake_pipe_[2] = {-1, -1};
  std::shared_ptr<std::atomic<bool>> cancelled_;
  std::string reason_;  // written by the thread before it raises cancelled_
  std::thread thread_;
};

}  // namespace polychip::comm
