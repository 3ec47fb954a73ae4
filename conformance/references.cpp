#include "references.hpp"

#include <string>

#include <fmt/format.h>

#include "polychip/error.hpp"
#include "precision/oracle/oracle.hpp"
#if POLYCHIP_HAVE_NVIDIA_REFERENCE
#include "reference/nvidia_reference.hpp"
#include "trace_recording.hpp"
#endif

namespace polychip::conformance {

precision::References default_references(
    [[maybe_unused]] std::shared_ptr<const reference::TraceStore> recorded) {
  precision::References r;
  r.oracle = precision::kOracle;
#if POLYCHIP_HAVE_NVIDIA_REFERENCE
  r.nvidia = reference::kNvidiaReference;
  r.nvidia_label = std::string(reference::kEmulatedProvenance);
  if (recorded)
    r.nvidia_recorded = [recorded](const precision::CaseSpec& spec, const OpSpec& op,
                                   std::span<const precision::HostTensor> inputs,
                                   std::span<precision::HostTensor> outputs,
                                   const polychip_op_attrs& attrs) -> std::string {
      const reference::TraceKey key = trace_key(spec);
      if (!recorded->find(key)) return "";
      return reference::nvidia_reference_run_or_replay(recorded.get(), key, op, inputs, outputs,
                                                       attrs);
    };
#endif
  return r;
}

std::shared_ptr<const reference::TraceStore> read_nvidia_trace(
    [[maybe_unused]] const std::string& path) {
#if POLYCHIP_HAVE_NVIDIA_REFERENCE
  return std::make_shared<const reference::TraceStore>(reference::TraceStore::read(path));
#else
  throw_error(StatusCode::kUnsupported,
              "--nvidia-trace needs reference/, which this build leaves out");
#endif
}

std::string nvidia_reference_description(
    [[maybe_unused]] const reference::TraceStore* recorded,
    [[maybe_unused]] const std::vector<precision::CaseSpec>& cases) {
  const std::string emulated = "NVIDIA emulation on the CPU (reference/): emulated, not measured";
#if POLYCHIP_HAVE_NVIDIA_REFERENCE
  if (recorded) {
    size_t held = 0;
    for (const auto& spec : cases) held += recorded->find(trace_key(spec)) != nullptr;
    return fmt::format("outputs {} for {} of the {} cases; elsewhere the {}",
                       recorded->provenance().to_string(), held, cases.size(), emulated);
  }
#endif
  return emulated;
}

}  // namespace polychip::conformance
