// In-process data-parallel ranks for the training tests: a thread and a
// communicator each, over real sockets or shared memory.
#pragma once

#include <string>
#include <thread>
#include <vector>

#include "polychip/comm/communicator.hpp"
#include "polychip/error.hpp"

namespace polychip::training {

// Runs body(rank, comm) on `ranks` threads; returns each rank's Error
// message ("" for a rank that threw none).
template <typename Body>
std::vector<std::string> run_rank_threads(int ranks, Body body, double timeout_seconds = 60) {
  comm::CommConfig config;
  config.timeout_seconds = timeout_seconds;
  const comm::UniqueId id = comm::Communicator::create_unique_id(config);
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        comm::Communicator comm(id, r, ranks, config);
        body(r, comm);
      } catch (const Error& e) {
        errors[static_cast<size_t>(r)] = e.message();
      }
    });
  for (std::thread& t : threads) t.join();
  return errors;
}

}  // namespace polychip::training
