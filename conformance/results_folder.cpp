#include "results_folder.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "polychip/atomic_file.hpp"
#include "polychip/error.hpp"
#include "supervisor.hpp"

namespace polychip::conformance {
namespace {

namespace fs = std::filesystem;

constexpr std::array<const char*, 2> kPair = {kResultsFileName, kJunitFileName};

// What a signal handler may use: messages formatted before the handlers are
// installed, and the dispositions they replaced.
struct Interruption {
  int signal;
  std::array<char, 4096> message;
  size_t length = 0;
  struct sigaction replaced = {};
};
std::array<Interruption, 2> interruptions = {Interruption{SIGINT, {}}, Interruption{SIGTERM, {}}};

void on_interrupt(int signal) {
  for (const Interruption& i : interruptions)
    if (i.signal == signal) {
      ssize_t ignored = ::write(2, i.message.data(), i.length);
      (void)ignored;
    }
  stop_running_worker();
  // Ends the process as the signal would once this handler returns (the
  // signal is blocked until then): a shell or CI runner sees 128 + signal.
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

}  // namespace

std::string earlier_results_note(const std::string& dir) {
  std::vector<std::string> kept;
  for (const char* name : kPair) {
    const std::string previous = std::string(name) + kPreviousSuffix;
    std::error_code ec;
    if (fs::is_regular_file(fs::path(dir) / previous, ec)) kept.push_back(previous);
  }
  if (kept.empty()) return "";
  return fmt::format("the earlier run's results are set aside in {}: {}", dir,
                     fmt::join(kept, ", "));
}

RunInProgress::RunInProgress(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("cannot create --out '{}': {}", dir, ec.message()));
  for (const char* name : kPair) {
    const fs::path file = fs::path(dir) / name;
    const fs::file_status status = fs::symlink_status(file, ec);
    if (!fs::exists(status) || fs::is_directory(status)) continue;
    fs::rename(file, fs::path(dir) / (std::string(name) + kPreviousSuffix), ec);
    if (ec)
      throw_error(StatusCode::kInvalidArgument,
                  fmt::format("cannot set the earlier run's {} aside in --out '{}': {}", name, dir,
                              ec.message()));
  }
  const std::string earlier = earlier_results_note(dir);
  const bool terminal = ::isatty(2);
  for (Interruption& i : interruptions) {
    const std::string message = fmt::format(
        "{}polychip certify: interrupted by SIG{}: this run wrote no results.json or junit.xml "
        "in {}{}\n",
        terminal ? "\r\033[K" : "", sigabbrev_np(i.signal), dir,
        earlier.empty() ? "" : "; " + earlier);
    i.length = std::min(message.size(), i.message.size());
    std::copy_n(message.data(), i.length, i.message.data());
    ::sigaction(i.signal, nullptr, &i.replaced);
    // A signal the run was started to ignore (nohup, a background job of
    // a script) stays ignored.
    if (i.replaced.sa_handler == SIG_IGN) continue;
    struct sigaction handler = {};
    handler.sa_handler = on_interrupt;
    ::sigemptyset(&handler.sa_mask);
    ::sigaction(i.signal, &handler, nullptr);
  }
}

RunInProgress::~RunInProgress() {
  for (Interruption& i : interruptions) ::sigaction(i.signal, &i.replaced, nullptr);
}

void write_results_pair(const std::string& dir, const std::string& results_json,
                        const std::string& junit_xml) {
  const std::array<std::string_view, 2> contents = {results_json, junit_xml};
  std::vector<std::string> targets, temporaries;
  for (const char* name : kPair) targets.push_back((fs::path(dir) / name).string());
  size_t moved = 0;
  try {
    for (size_t i = 0; i < targets.size(); ++i)
      temporaries.push_back(write_temporary_beside(targets[i], contents[i]));
    for (; moved < targets.size(); ++moved) move_into_place(temporaries[moved], targets[moved]);
  } catch (const Error&) {
    // Neither file of this run stays: not the temporaries, not a file
    // already moved into place.
    for (size_t i = moved; i < temporaries.size(); ++i) ::unlink(temporaries[i].c_str());
    for (size_t i = 0; i < moved; ++i) ::unlink(targets[i].c_str());
    throw;
  }
  for (const char* name : kPair) {
    std::error_code ec;
    fs::remove(fs::path(dir) / (std::string(name) + kPreviousSuffix), ec);
  }
}

}  // namespace polychip::conformance
