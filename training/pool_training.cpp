#include "pool_training.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "polychip/error.hpp"
#include "polychip/whole_file.hpp"
#include "supervisor.hpp"
#include "train_run.hpp"

namespace polychip::training {
namespace {

[[noreturn]] void internal(const std::string& what) { throw Error(StatusCode::kInternal, what); }

// A scratch folder that is removed with everything in it.
class ScratchFolder {
 public:
  ScratchFolder() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "polychip_pool_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      internal(fmt::format("mixed pool: cannot create a scratch folder: {}", std::strerror(errno)));
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Runs argv[0] with `argv`, its stdout and stderr into `log`; its exit code
// (128 + N for signal N). The job's ranks end with it: the launcher waits
// for them and kills what is left when one fails. The job runs in a process
// group of its own, registered as the running worker, so a certify that a
// signal ends takes the launcher and its ranks with it.
int run_to_log(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) internal(fmt::format("mixed pool: fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0) _exit(126);
    ::execv(args[0], args.data());
    _exit(127);
  }
  ::setpgid(pid, pid);  // as the child does: whichever runs first
  const conformance::RunningWorkerRegistration registration(pid);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) internal(fmt::format("mixed pool: waitpid: {}", std::strerror(errno)));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

PoolTrainingRun train_pool(const PoolTrainingRequest& request) {
  ScratchFolder scratch;
  std::string devices;
  for (const std::string& d : request.devices) devices += (devices.empty() ? "" : ",") + d;
  const std::filesystem::path run_folder = scratch.path() / "run", log = scratch.path() / "log";
  const std::vector<std::string> argv = {request.polychip,
                                         "train",
                                         "--np",
                                         std::to_string(request.devices.size()),
                                         "-a",
                                         devices,
                                         "--preset",
                                         request.preset,
                                         "--precision",
                                         request.precision,
                                         "--steps",
                                         std::to_string(request.steps),
                                         "--dp-profile",
                                         "--out",
                                         run_folder.string()};
  PoolTrainingRun run;
  run.command = fmt::format(
      "{} train --np {} -a {} --preset {} --precision {} --steps {} --dp-profile --out DIR",
      request.polychip, request.devices.size(), devices, request.preset, request.precision,
      request.steps);
  const auto start = std::chrono::steady_clock::now();
  run.exit_code = run_to_log(argv, log);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.output = std::filesystem::exists(log) ? read_whole_file(log.string(), "the pool's log") : "";
  if (run.exit_code != 0) return run;
  const nlohmann::json state = nlohmann::json::parse(
      read_whole_file((run_folder / "training_state.json").string(), "the pool's run folder"),
      nullptr, false);
  if (state.is_discarded() || !state.contains("history") || !state.contains("data_parallel"))
    internal("mixed pool: " + (run_folder / "training_state.json").string() +
             " is not the training state of a data-parallel run");
  for (const nlohmann::json& row : state["history"]) {
    run.loss.push_back(row.at(1).get<double>());
    run.grad_norm.push_back(row.at(2).get<double>());
  }
  run.rows_per_rank = state["data_parallel"].at("rows_per_rank").get<std::vector<int64_t>>();
  const std::filesystem::path report_file = run_folder / kDataParallelReport;
  const nlohmann::json report = nlohmann::json::parse(
      read_whole_file(report_file.string(), "the pool's run folder"), nullptr, false);
  if (report.is_discarded() || !report.contains("measured_step_seconds"))
    internal("mixed pool: " + report_file.string() + " is not the planner's report");
  run.predicted_step_seconds = report.at("predicted_step_seconds").get<double>();
  run.measured_step_seconds = report.at("measured_step_seconds").get<double>();
  run.eta = report.at("eta").get<double>();
  run.gain = report.at("gain").get<double>();
  run.planner_split = report.at("planner_split").get<std::string>();
  return run;
}

}  // namespace polychip::training
