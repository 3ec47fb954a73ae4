// `polychip certify`: certify adapters against a conformance suite; and the
// hidden `certify-worker` it runs in child processes (one per adapter, and
// again after a crash or hang).
#include <memory>
#include <string>

#include "certify.hpp"
#include "command.hpp"
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
                     "precision (each adapter alone) or comm (one rank per --adapters entry)")
          ->check(CLI::IsMember({"precision", "comm"}));
      sub.add_option("--level", o->level, "quick, standard or full")
          ->check(CLI::IsMember({"quick", "standard", "full"}));
      sub.add_option("--adapters", o->adapters,
                     "adapter names or device types, comma separated (cpu,sim.faithful)")
          ->required()
          ->delimiter(',');
      sub.add_option("--out", o->out_dir, "folder for results.json and junit.xml")
          ->default_val("certify-results");
      sub.add_option("--case", *case_id, "run exactly this case id (a reproducer)");
      sub.add_option("--timeout", o->timeout_seconds, "seconds a single case may take")
          ->check(CLI::PositiveNumber);
      sub.add_option(
          "--tolerances", o->tolerances_path,
          "tolerances JSON file (default: the built-in conformance/data/tolerances.json)");
      sub.add_option("--waivers", o->waivers_path,
                     "waivers JSON file (default: the built-in conformance/data/waivers.json)");
      sub.add_flag("!--no-progress", o->progress, "no progress lines on stderr");
      return [o, case_id] {
        if (!case_id->empty()) o->case_id = *case_id;
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
      sub.add_option("--first", o->first);
      sub.add_option("--result-fd", o->result_fd);
      sub.add_option("--tolerances", o->tolerances_path);
      sub.add_option("--waivers", o->waivers_path);
      return [o, case_id] {
        if (!case_id->empty()) o->case_id = *case_id;
        return polychip::conformance::run_worker(*o);
      };
    });

}  // namespace
