#include "progress.hpp"

#include <unistd.h>

#include <fmt/format.h>

namespace polychip::conformance {
namespace {

// The longest a CI log goes without a progress line while items finish.
constexpr std::chrono::seconds kHeartbeat{10};

}  // namespace

Progress::Progress(bool enabled)
    : enabled_(enabled), terminal_(::isatty(2)), last_line_(std::chrono::steady_clock::now()) {}

void Progress::line(const std::string& text) {
  if (!enabled_) return;
  clear();
  fmt::print(stderr, "{}\n", text);
  last_line_ = std::chrono::steady_clock::now();
}

void Progress::item(const std::string& scope, size_t index, size_t total, const std::string& what,
                    bool passed, const std::string& message) {
  if (!enabled_) return;
  const std::string head = fmt::format("[{} {}/{}] {}", scope, index + 1, total, what);
  if (terminal_) {
    fmt::print(stderr, "\r\033[K{}{}", head, passed ? "" : "\n");
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (passed && index != 0 && index + 1 != total && now - last_line_ < kHeartbeat) return;
  fmt::print(stderr, "{}{}\n", head, passed || message.empty() ? "" : ": " + message);
  last_line_ = now;
}

void Progress::clear() {
  if (enabled_ && terminal_) fmt::print(stderr, "\r\033[K");
}

}  // namespace polychip::conformance
