#include "transport/hang_report.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "algorithms/plan.hpp"

namespace polychip::comm {
namespace {

std::string where(const WaitState& s) {
  if (s.in == WaitingIn::kPointToPoint) return "send/recv";
  return "collective #" + std::to_string(s.seq) + " " + describe_call(s.call);
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

HangView classify_hang(int me, const std::vector<WaitState>& states, double asked_seconds) {
  const WaitState& mine = states[me];
  std::vector<int> mismatched, not_entered, left, with_me;
  std::string ranks_json, details;
  for (int r = 0; r < static_cast<int>(states.size()); ++r) {
    const WaitState& s = states[r];
    std::string state, said;
    if (r == me) {
      state = "timed-out";
    } else if (!s.answered) {
      state = "no-answer";
      said = fmt::format("gave no answer within {:g} s", asked_seconds) +
             " (not inside any polychip call: busy elsewhere, stopped, or hung in its own code)";
      not_entered.push_back(r);
    } else if (s.in != mine.in) {
      state = "elsewhere";
      said = "waits in " + where(s);
      not_entered.push_back(r);
    } else if (s.in == WaitingIn::kPointToPoint || (s.seq == mine.seq && s.call == mine.call)) {
      state = "in-call";
      said = "waits in the same call";
      with_me.push_back(r);
    } else if (s.seq == mine.seq) {
      state = "other-call";
      said = "waits in the same collective number with another call: " + describe_call(s.call);
      mismatched.push_back(r);
    } else if (s.seq < mine.seq) {
      state = "behind";
      said = "waits in an earlier " + where(s) + ", so it never entered this one";
      not_entered.push_back(r);
    } else {
      state = "ahead";
      said = "already left this call and waits in " + where(s);
      left.push_back(r);
    }
    if (!said.empty()) details += "; rank " + std::to_string(r) + " " + said;
    ranks_json += std::string(ranks_json.empty() ? "" : ",") + "{\"rank\":" + std::to_string(r) +
                  ",\"state\":\"" + state + "\"";
    if (r == me || s.answered) ranks_json += ",\"waiting_in\":" + json_string(where(s));
    ranks_json += "}";
  }
  auto list = [](const std::vector<int>& ranks) {
    std::string out;
    for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
    return out;
  };
  HangView view;
  std::string summary;
  if (!mismatched.empty()) {
    view.hang_class = "signature-mismatch";
    summary = "rank(s) " + list(mismatched) + " called something else at this collective number";
  } else if (!not_entered.empty()) {
    view.hang_class = "missing-enter";
    summary = "rank(s) " + list(not_entered) + " never entered this call";
  } else if (!left.empty()) {
    view.hang_class = "missing-exit";
    summary = "every rank entered this call; rank(s) " + list(left) +
              " left it without sending what this rank waits for";
  } else {
    view.hang_class = "all-stuck";
    summary =
        "every rank waits in this very call and none can go on (none is missing: a "
        "deadlock in the calls' order or a transport that lost frames)";
  }
  view.text = " — job-wide view (every rank asked on the timeout): " + view.hang_class + ": " +
              summary + details;
  view.json = "{\"polychip_comm_hang\":{\"rank\":" + std::to_string(me) + ",\"class\":\"" +
              view.hang_class + "\",\"waiting_in\":" + json_string(where(mine)) + ",\"ranks\":[" +
              ranks_json + "]}}";
  return view;
}

}  // namespace polychip::comm
