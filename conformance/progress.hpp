// The progress lines of a certify run on stderr, one mechanism for every
// suite (off with --no-progress). A suite reports each item as it finishes:
// a precision case, a comm case group, a training step. On a terminal one
// status line is rewritten per item and an item that did not pass keeps its
// line; elsewhere (a CI log) an item that did not pass gets a line, and so
// do the first and the last item of a scope and one at least every 10 s in
// between, so that a log never sits silent through a long suite.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace polychip::conformance {

class Progress {
 public:
  explicit Progress(bool enabled);

  // A line of its own: "certify: cpu (431 cases, level quick, ...)".
  void line(const std::string& text);

  // Item `index` (from 0) of `total` in `scope` has finished: "[scope i/n]
  // what", with ": message" on a line kept for an item that did not pass.
  void item(const std::string& scope, size_t index, size_t total, const std::string& what,
            bool passed, const std::string& message);

  // Clears the status line, before other output.
  void clear();

 private:
  bool enabled_;
  bool terminal_;
  std::chrono::steady_clock::time_point last_line_;
};

}  // namespace polychip::conformance
