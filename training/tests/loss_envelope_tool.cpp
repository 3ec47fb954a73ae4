// Records and assembles the statistical tier's loss envelope
// (loss_envelope.hpp) and prints the cross-vendor tolerance it justifies
// (justified_rtol, alignment.hpp). Recording K runs takes K times a trace's
// time, so members are recorded by separate processes and combined:
//
//   training_loss_envelope_tool member DEVICE PRESET STEPS INIT_SEED OUT.json
//   training_loss_envelope_tool combine OUT.json MEMBER.json...
//   training_loss_envelope_tool justify ENVELOPE.json
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "alignment.hpp"
#include "loss_envelope.hpp"
#include "polychip/atomic_file.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "reference_trace.hpp"

namespace polychip::training {
namespace {

void print_justification(const LossEnvelope& e) {
  const ToleranceJustification j = justified_rtol(e);
  fmt::print("{} members on {} over {} steps: {}\n", e.members.size(), e.device_type, e.steps(),
             j.summary);
}

int run(const std::vector<std::string>& args) {
  if (args.size() == 6 && args[0] == "member") {
    const std::string device_type = Runtime::global().device(args[1]).device_type();
    const EnvelopeMember m = record_envelope_member(Runtime::global(), args[1], args[2],
                                                    std::stoll(args[3]), std::stoull(args[4]));
    write_file_atomically(args[5], nlohmann::json{{"preset", args[2]},
                                                  {"device_type", device_type},
                                                  {"init_seed", m.init_seed},
                                                  {"loss", m.loss}}
                                           .dump(1) +
                                       "\n");
    return 0;
  }
  if (args.size() >= 4 && args[0] == "combine") {
    std::vector<EnvelopeMember> members;
    nlohmann::json first;
    for (size_t i = 2; i < args.size(); ++i) {
      const nlohmann::json m = read_json_file(args[i], "envelope member");
      if (i == 2) first = m;
      if (m.at("preset") != first.at("preset") || m.at("device_type") != first.at("device_type"))
        throw Error(StatusCode::kInvalidArgument, args[i] + ": another preset or device type");
      members.push_back(
          {m.at("init_seed").get<uint64_t>(), m.at("loss").get<std::vector<double>>()});
    }
    const LossEnvelope e = make_envelope(first.at("preset"), first.at("device_type"), members);
    write_envelope(args[1], e);
    fmt::print("{}: {}\n", args[1], e.content_hash);
    print_justification(e);
    return 0;
  }
  if (args.size() == 2 && args[0] == "justify") {
    print_justification(read_envelope(args[1]));
    return 0;
  }
  std::cerr << "usage: training_loss_envelope_tool member DEVICE PRESET STEPS INIT_SEED OUT.json\n"
               "       training_loss_envelope_tool combine OUT.json MEMBER.json...\n"
               "       training_loss_envelope_tool justify ENVELOPE.json\n";
  return 2;
}

}  // namespace
}  // namespace polychip::training

int main(int argc, char** argv) {
  try {
    return polychip::training::run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::cerr << "training_loss_envelope_tool: " << e.what() << "\n";
    return 1;
  }
}
