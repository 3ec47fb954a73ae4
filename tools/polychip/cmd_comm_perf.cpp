// `polychip comm-perf`: nccl-tests compatible collective benchmark with
// exact result checks; runs under mpirun/srun/torchrun or spawns --np local
// ranks itself. Logic in comm_interop (polychip_comm); exit codes in
// docs/comm.md.
#include <cstdio>
#include <memory>
#include <string>

#include "command.hpp"
#include "polychip/comm/comm_perf.hpp"
#include "polychip/error.hpp"

namespace {

const bool registered = polychip::cli::register_command(
    "comm-perf", "Measure and verify collectives (nccl-tests columns)", [](CLI::App& sub) {
      auto o = std::make_shared<polychip::comm::PerfOptions>();
      sub.add_option("-c,--collective", o->collective,
                     "all_reduce | all_gather | reduce_scatter | broadcast | reduce | "
                     "all_to_all | send_recv | all")
          ->capture_default_str();
      sub.add_option("-d,--dtype", o->dtype, "f32 | f16 | bf16 | f64 | i32 | i64")
          ->capture_default_str();
      sub.add_option("-o,--op", o->op, "sum | prod | min | max | avg")->capture_default_str();
      sub.add_option("-r,--root", o->root, "root rank (broadcast, reduce)")->capture_default_str();
      auto min_bytes = std::make_shared<std::string>("8");
      auto max_bytes = std::make_shared<std::string>("64M");
      sub.add_option("-b,--min-bytes", *min_bytes, "smallest size (e.g. 8, 64K, 64M)")
          ->capture_default_str();
      auto max_option =
          sub.add_option("-e,--max-bytes", *max_bytes, "largest size")->capture_default_str();
      auto factor_option = sub.add_option("-f,--step-factor", o->step_factor, "size multiplier")
                               ->capture_default_str();
      auto sizes = std::make_shared<std::string>();
      sub.add_option("--sizes", *sizes,
                     "exact sizes to run, comma separated (e.g. 0,4092,4100,64K), instead of "
                     "-b/-e/-f")
          ->excludes(max_option)
          ->excludes(factor_option);
      auto offset = std::make_shared<std::string>("0");
      sub.add_option("--offset", *offset,
                     "every buffer starts this many bytes into its allocation (a multiple of the "
                     "dtype size); the bytes around it are checked for stray writes")
          ->capture_default_str();
      sub.add_option("-w,--warmup", o->warmup, "untimed iterations")->capture_default_str();
      sub.add_option("-n,--iters", o->iterations, "timed iterations")->capture_default_str();
      sub.add_option("--devices", o->devices,
                     "device per rank, comma separated (rank r: entry r % count), e.g. "
                     "cpu,sim.faithful,opencl; default host memory")
          ->check(polychip::cli::non_empty());
      sub.add_option("--path", o->path,
                     "auto | host | hierarchical | gdr (POLYCHIP_COMM_PATH for every rank; gdr: "
                     "device buffers written by the NIC directly, docs/comm.md)");
      sub.add_option("-J,--json", o->json_path, "write results as JSON (rank 0)")
          ->check(polychip::cli::non_empty());
      auto np = std::make_shared<int>(0);
      CLI::Option* np_option =
          sub.add_option("--np", *np, "spawn this many local ranks (built-in launcher, >= 1)");
      return [o, min_bytes, max_bytes, sizes, offset, np, np_option] {
        if (np_option->count() > 0) o->np = *np;
        try {
          o->min_bytes = polychip::comm::parse_size(*min_bytes, "--min-bytes");
          o->max_bytes = polychip::comm::parse_size(*max_bytes, "--max-bytes");
          if (!sizes->empty()) o->sizes = polychip::comm::parse_size_list(*sizes, "--sizes");
          o->offset_bytes = polychip::comm::parse_size(*offset, "--offset");
        } catch (const polychip::Error& e) {
          std::fprintf(stderr, "polychip comm-perf: %s\n", e.message().c_str());
          return polychip::comm::kPerfExitUsage;
        }
        return polychip::comm::run_comm_perf(*o);
      };
    });

}  // namespace
