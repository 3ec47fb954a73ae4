#include "mutant_hunt.hpp"

#include "mutant_kernel.hpp"

namespace polychip::precision {

MutantOutcome hunt_mutant(const Mutant& mutant, const std::vector<CaseSpec>& cases,
                          const CaseContext& ctx) {
  MutantOutcome outcome{mutant, {}, {}, {}};
  const MutantChip chip(*ctx.dispatcher, ctx.device.device_type(), mutant);
  for (DType dtype : mutant.dtypes) {
    std::string killer;
    for (const CaseSpec& spec : cases) {
      if (spec.op != mutant.op || spec.dtype != dtype) continue;
      if (is_failure(run_case(spec, ctx).verdict)) {
        killer = case_id(spec);
        break;
      }
    }
    if (killer.empty()) {
      outcome.survived.push_back(dtype);
    } else {
      outcome.caught.push_back(dtype);
      outcome.caught_by.push_back(killer);
    }
  }
  return outcome;
}

}  // namespace polychip::precision
