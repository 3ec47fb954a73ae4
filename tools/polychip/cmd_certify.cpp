// `polychip certify`: certify adapters against a conformance suite; and the
// hidden `certify-worker` it runs in child processes (one per adapter, and
// again after a crash or hang).
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "certify.hpp"
#include "command.hpp"
#include "training_certify.hpp"
#include "worker.hpp"

namespace {

using polychip::conformance::CertifyOptions;
using polychip::conformance::WorkerOptions;

const bool certify_registered = polychip::cli::register_command(
    "certify", "Certify adapters: run a conformance suite, write results.json and junit.xml",
    [](CLI::App& sub) {
      auto o = std::make_shared<CertifyOptions>();
      auto case_id = std::make_shared<std::string>();
      sub.add_option("--suite", o->suite,
                     "precision (each device alone), comm (one rank per --adapters entry) or "
                     "training (each device trains against the reference trace)")
          ->check(CLI::IsMember({"precision", "comm", "training"}))
          ->capture_default_str();
      sub.add_option("--level", o->level,
                     "quick, standard or full (--suite training has quick only)")
          ->check(CLI::IsMember({"quick", "standard", "full"}))
          ->capture_default_str();
      sub.add_option("--adapters", o->adapters,
                     "comma separated: an adapter name (every device of it), a device type or "
                     "adapter:N (one device), e.g. cpu,sim.faithful,sim:2")
          ->required()
          ->delimiter(',')
          ->transform(polychip::cli::trimmed());
      CLI::Option* profile_option =
          sub.add_option("--profile", o->profile,
                         "precision: certification profile, the op x dtype pairs a device must "
                         "support (conformance/data/profiles.json; default: training); a profile "
                         "that does not certify (bring-up) makes a Pass a caveat")
              ->check(polychip::cli::non_empty());
      sub.add_option("--out", o->out_dir,
                     fmt::format("folder for results.json and junit.xml (default: ./{})",
                                 polychip::conformance::kDefaultOutDir))
          ->check(polychip::cli::non_empty());
      CLI::Option* case_option =
          sub.add_option("--case", *case_id, "precision: run exactly this case id (a reproducer)")
              ->check(polychip::cli::non_empty());
      CLI::Option* ops_option =
          sub.add_option("--ops", o->ops,
                         "precision: run only the level's cases of these ops, comma separated "
                         "(bring-up, debugging); a partial run is never a certification")
              ->delimiter(',')
              ->transform(polychip::cli::trimmed())
              ->check(polychip::cli::non_empty());
      CLI::Option* timeout_option =
          sub.add_option("--timeout", o->timeout_seconds, "seconds a single case may take")
              ->check(polychip::cli::positive_number())
              ->capture_default_str();
      CLI::Option* tolerances_option =
          sub.add_option("--tolerances", o->tolerances_path,
                         "precision: tolerances JSON file (default: the built-in "
                         "conformance/data/tolerances.json)")
              ->check(polychip::cli::non_empty());
      CLI::Option* waivers_option = sub.add_option("--waivers", o->waivers_path,
                                                   "precision: waivers JSON file (default: the "
                                                   "built-in conformance/data/waivers.json); "
                                                   "failures it waives are caveats")
                                        ->check(polychip::cli::non_empty());
      sub.add_flag("!--no-progress", o->progress, "no progress lines on stderr");
      CLI::Option* coverage_option =
          sub.add_flag("--coverage", o->coverage,
                       "precision: print which critical points of each op's coverage model the "
                       "level's cases reach (results.json records it on every run), run nothing");
      CLI::Option* reference_option =
          sub.add_option("--reference", o->reference_path,
                         "training: reference trace file, or loss envelope file under --tier "
                         "statistical (default: the shipped NVIDIA reference of the default "
                         "workload)")
              ->check(polychip::cli::non_empty());
      CLI::Option* record_trace_option =
          sub.add_option("--record-nvidia-trace", o->record_trace_path,
                         "precision: also write the device's outputs of every clean case to "
                         "this file, a recorded NVIDIA reference (docs/reference-numerics.md); "
                         "one device, an NVIDIA GPU")
              ->check(polychip::cli::non_empty());
      CLI::Option* nvidia_trace_option =
          sub.add_option("--nvidia-trace", o->nvidia_trace_path,
                         "precision: outputs recorded on NVIDIA hardware (a file written by "
                         "--record-nvidia-trace) replace the NVIDIA emulation for the cases it "
                         "holds")
              ->check(polychip::cli::non_empty());
      CLI::Option* tier_option =
          sub.add_option("--tier", o->tier, "training: alignment tier")
              ->check(CLI::IsMember({"exact", "cross-vendor", "statistical"}))
              ->capture_default_str();
      // Given to a suite that does not read them, they were ignored: `--suite
      // comm --case X` ran all of the comm suite and passed.
      const std::vector<std::pair<CLI::Option*, std::set<std::string>>> suites_reading = {
          {case_option, {"precision"}},
          {ops_option, {"precision"}},
          {timeout_option, {"precision", "comm"}},
          {tolerances_option, {"precision"}},
          {waivers_option, {"precision"}},
          {profile_option, {"precision"}},
          {coverage_option, {"precision"}},
          {reference_option, {"training"}},
          {tier_option, {"training"}},
          {record_trace_option, {"precision"}},
          {nvidia_trace_option, {"precision"}}};
      return [o, case_id, case_option, timeout_option, suites_reading] {
        for (const auto& [option, suites] : suites_reading) {
          if (option->count() == 0 || suites.contains(o->suite)) continue;
          fmt::print(
              stderr, "polychip certify: {} is for --suite {}; --suite {} does not use it{}\n",
              option->get_name(), fmt::join(suites, " and --suite "), o->suite,
              option == case_option ? " (results.json gives each comm case a 'repro' command line)"
                                    : "");
          return 2;
        }
        if (!case_id->empty()) o->case_id = *case_id;
        o->timeout_given = timeout_option->count() > 0;
        if (o->suite == "training") {
          if (o->out_dir.empty()) o->out_dir = polychip::conformance::kDefaultOutDir;
          return polychip::training::run_training_certify(*o);
        }
        return polychip::conformance::run_certify(*o);
      };
    });

const bool worker_registered = polychip::cli::register_command(
    "certify-worker", "internal: runs one adapter's cases for `polychip certify`",
    [](CLI::App& sub) {
      sub.group("");  // hidden from --help
      auto o = std::make_shared<WorkerOptions>();
      auto case_id = std::make_shared<std::string>();
      sub.add_option("--adapter", o->adapter)->required();
      sub.add_option("--level", o->level);
      sub.add_option("--case", *case_id);
      sub.add_option("--ops", o->ops)->delimiter(',');
      sub.add_option("--first", o->first);
      sub.add_option("--result-fd", o->result_fd);
      sub.add_option("--tolerances", o->tolerances_path);
      sub.add_option("--waivers", o->waivers_path);
      sub.add_flag("--keep-device-outputs", o->keep_device_outputs);
      sub.add_option("--nvidia-trace", o->nvidia_trace_path);
      return [o, case_id] {
        if (!case_id->empty()) o->case_id = *case_id;
        return polychip::conformance::run_worker(*o);
      };
    });

}  // namespace
