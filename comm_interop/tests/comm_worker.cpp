// One rank of the multi-process tests. Launched by mpirun, the local
// launcher or `ip netns exec`; ranks and rendezvous come from the
// environment. Modes:
//   sweep [--devices a,b,..] [--big]   every collective x dtype x size, exact checks
//                                      (--big: up to 64 MiB)
//   kill                               rank 1 SIGKILLs itself mid all-reduce
//   kill-small, abort-small            the same mid 8-byte all-reduces (on one host:
//                                      the shared-memory mailboxes)
//   hang                               rank 1 SIGSTOPs itself mid all-reduce
//   abort                              rank 0 calls abort() mid all-reduce
// Exit codes: 0 ok, 1 wrong results, 2 a collective failed (message on stderr).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "polychip/comm/case_runner.hpp"
#include "polychip/comm/communicator.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"

using namespace polychip;
using namespace polychip::comm;

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

// Writes "rank <r>: <line>" to $COMM_WORKER_LOG_DIR/rank<r>.txt so a test can
// read each rank's outcome.
void log_outcome(const std::string& line) {
  const char* dir = std::getenv("COMM_WORKER_LOG_DIR");
  const char* rank = std::getenv("RANK");
  if (!dir || !rank) return;
  FILE* f = std::fopen((std::string(dir) + "/rank" + rank + ".txt").c_str(), "w");
  if (!f) return;
  std::fprintf(f, "%s\n", line.c_str());
  std::fclose(f);
}

int sweep(Communicator& comm, const Device* device, bool big, bool quick) {
  CaseRunner runner(comm, device);
  const int n = comm.size();
  uint64_t wrong = 0;
  int cases = 0, gdr_calls = 0;
  uint64_t placed = 0;
  const DType dtypes[] = {DType::kF32, DType::kF16, DType::kBF16,
                          DType::kF64, DType::kI32, DType::kI64};
  // 0 bytes, odd element counts, both sides of the direct/ring switch
  // (64 KiB), several pipeline chunks (the tests set POLYCHIP_COMM_CHUNK_BYTES small).
  std::vector<uint64_t> sizes = {0, 8, 24, 1000, 65536, 65536 + 8 * 3 * 4, (1 << 20) + 72};
  if (quick) sizes = {0, 24, 70000, 600000};
  for (const std::string& c : collective_names()) {
    for (DType dt : dtypes) {
      std::vector<ReduceOp> ops = {ReduceOp::kSum};
      if (c == "all_reduce")
        ops = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kAvg};
      if (c == "reduce" || c == "reduce_scatter")
        ops = {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kAvg};
      for (ReduceOp op : ops) {
        for (uint64_t size : sizes) {
          for (int in_place = 0; in_place < 2; ++in_place) {
            CaseSpec spec{c, dt, op, size * uint64_t(n) / 2, (cases % n), in_place == 1};
            CaseResult r = runner.run(spec, 0, 0);
            ++cases;
            if (r.record.path == DataPath::kGdr) ++gdr_calls;
            placed += r.record.placed_bytes;
            if (r.wrong) {
              std::fprintf(stderr,
                           "rank %d: %s %s %s size %llu in_place %d root %d: %llu wrong (%s/%s)\n",
                           comm.rank(), c.c_str(), std::string(dtype_name(dt)).c_str(),
                           std::string(reduce_op_name(op)).c_str(), (unsigned long long)spec.bytes,
                           in_place, spec.root, (unsigned long long)r.wrong,
                           std::string(algorithm_name(r.record.algorithm)).c_str(),
                           std::string(data_path_name(r.record.path)).c_str());
            }
            wrong += r.wrong;
          }
        }
      }
    }
  }
  if (big) {
    // The top of the size sweep: every collective at 64 MiB, and the
    // all-reduce at 64 MiB in every dtype.
    std::vector<std::pair<std::string, DType>> top;
    for (const std::string& c : collective_names()) top.emplace_back(c, DType::kF32);
    for (DType dt : dtypes) {
      if (dt != DType::kF32) top.emplace_back("all_reduce", dt);
    }
    for (const auto& [c, dt] : top) {
      CaseSpec spec{c, dt, ReduceOp::kSum, 64ull << 20, 0, false};
      CaseResult r = runner.run(spec, 0, 0);
      wrong += r.wrong;
      ++cases;
      if (r.record.path == DataPath::kGdr) ++gdr_calls;
      placed += r.record.placed_bytes;
      if (r.wrong)
        std::fprintf(stderr, "rank %d: 64 MiB %s %s: %llu wrong\n", comm.rank(), c.c_str(),
                     std::string(dtype_name(dt)).c_str(), (unsigned long long)r.wrong);
    }
  }
  char line[512];
  std::snprintf(line, sizeof(line),
                "rank %d (%s): %d cases, %llu wrong, %d on gdr, %llu bytes placed, last call "
                "%s/%s/%s",
                comm.rank(), comm.ranks()[comm.rank()].device_type.c_str(), cases,
                (unsigned long long)wrong, gdr_calls, (unsigned long long)placed,
                std::string(algorithm_name(comm.last_call().algorithm)).c_str(),
                std::string(data_path_name(comm.last_call().path)).c_str(),
                comm.last_call().transport.c_str());
  std::printf("%s\n", line);
  log_outcome(line);
  return wrong ? 1 : 0;
}

int fault(Communicator& comm, const std::string& mode, const Device* device) {
  const bool small = mode == "kill-small" || mode == "abort-small";
  const uint64_t count = small ? 2 : 4 << 20;  // 8 bytes, or 16 MiB of f32
  std::vector<float> a(count, 1.0f), b(count);
  // With a device, the buffers are its memory (the GDR path's case).
  std::optional<Buffer> device_a, device_b;
  if (device) {
    device_a.emplace(*device, count * 4);
    device_b.emplace(*device, count * 4);
    device_a->copy_from_host(a.data(), count * 4);
  }
  const BufferRef send = device ? BufferRef(*device_a) : BufferRef(a.data());
  const BufferRef recv = device ? BufferRef(*device_b) : BufferRef(b.data());
  std::thread trigger;
  const bool kill = mode == "kill" || mode == "kill-small";
  if ((kill || mode == "hang") && comm.rank() == 1) {
    trigger = std::thread([kill] {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      std::fprintf(stderr, "rank 1 (pid %d): %s myself now\n", static_cast<int>(::getpid()),
                   kill ? "SIGKILL" : "SIGSTOP");
      ::raise(kill ? SIGKILL : SIGSTOP);
    });
  }
  if ((mode == "abort" || mode == "abort-small") && comm.rank() == 0) {
    trigger = std::thread([&comm] {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      comm.abort("test requested abort");
    });
  }
  auto start = std::chrono::steady_clock::now();
  try {
    for (int i = 0; i < (small ? 100000000 : 100000); ++i)
      comm.all_reduce(send, recv, count, DType::kF32, ReduceOp::kSum);
  } catch (const Error& e) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    int gdr_calls = 0, mailbox_calls = 0;
    for (const CallRecord& call : comm.call_history()) {
      gdr_calls += call.path == DataPath::kGdr;
      mailbox_calls += call.mailbox;
    }
    std::fprintf(stderr,
                 "rank %d: collective failed after %.2f s (%d calls on gdr, %d by mailbox): %s\n",
                 comm.rank(), s, gdr_calls, mailbox_calls, e.what());
    log_outcome("failed after " + std::to_string(s) + " s (" + std::to_string(gdr_calls) +
                " calls on gdr, " + std::to_string(mailbox_calls) + " by mailbox): " + e.what());
    if (trigger.joinable()) trigger.join();
    return 2;
  }
  if (trigger.joinable()) trigger.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "sweep";
  std::string devices;
  bool big = false, quick = false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--devices") == 0 && i + 1 < argc) devices = argv[++i];
    if (std::strcmp(argv[i], "--big") == 0) big = true;
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
  }
  try {
    CommConfig config = CommConfig::from_environment();
    std::optional<Device> device;
    if (!devices.empty()) {
      auto list = split(devices);
      device = Runtime::global().device(list[detect_launch().rank % list.size()]);
      config.device_type = device->device_type();
      config.vendor = device->adapter_name();
    }
    auto comm = Communicator::from_environment(config);
    if (mode == "sweep") return sweep(*comm, device ? &*device : nullptr, big, quick);
    return fault(*comm, mode, device ? &*device : nullptr);
  } catch (const Error& e) {
    std::fprintf(stderr, "comm_worker: %s\n", e.what());
    log_outcome(std::string("error: ") + e.what());
    return 2;
  }
}
