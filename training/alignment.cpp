#include "alignment.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "polychip/error.hpp"

namespace polychip::training {

AlignmentCriteria alignment_criteria(const std::string& tier) {
  if (tier != "exact" && tier != "cross-vendor" && tier != "statistical")
    throw Error(StatusCode::kInvalidArgument,
                "unknown alignment tier '" + tier + "' (tiers: exact, cross-vendor, statistical)");
  AlignmentCriteria c;
  c.tier = tier;
  return c;
}

CurveComparison compare_loss_curves(const std::vector<double>& reference,
                                    const std::vector<double>& run,
                                    const AlignmentCriteria& criteria) {
  if (reference.size() != run.size() || reference.empty())
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("compare_loss_curves: {} reference steps, {} run steps",
                            reference.size(), run.size()));
  const bool exact = criteria.tier == "exact";
  CurveComparison c;
  c.steps = static_cast<int64_t>(reference.size());
  c.allowed_outside = exact ? 0 : std::max<int64_t>(1, c.steps / 100);
  double relative_sum = 0;
  int64_t relative_count = 0;
  for (int64_t i = 0; i < c.steps; ++i) {
    const double ref = reference[i], got = run[i];
    const double diff = std::isfinite(got) ? std::fabs(got - ref) : INFINITY;
    const double bound =
        exact ? criteria.exact_atol : criteria.atol + criteria.rtol * std::fabs(ref);
    const double relative = diff / std::max(std::fabs(ref), 1e-30);
    if (!(diff <= bound)) {
      ++c.steps_outside;
      if (c.first_outside_step == 0) c.first_outside_step = i + 1;
    }
    if (c.largest_step == 0 || diff > c.largest_abs) {
      c.largest_step = i + 1;
      c.largest_abs = diff;
      c.largest_relative = relative;
    }
    if (i + 1 >= criteria.mean_from_step) {
      relative_sum += relative;
      ++relative_count;
    }
  }
  c.mean_relative = relative_count ? relative_sum / relative_count : 0;
  const bool within = c.steps_outside <= c.allowed_outside;
  const bool mean_ok = exact || relative_count == 0 || c.mean_relative < criteria.max_mean_relative;
  c.pass = within && mean_ok;
  c.summary = fmt::format(
      "{} tier over {} steps: {} step(s) outside (allowed {}){}; largest |Δloss| {:.3g} "
      "({:.3g} relative) at step {}{}",
      criteria.tier, c.steps, c.steps_outside, c.allowed_outside,
      c.first_outside_step ? fmt::format(", the first at step {}", c.first_outside_step) : "",
      c.largest_abs, c.largest_relative, c.largest_step,
      exact ? ""
            : fmt::format("; mean relative error from step {}: {:.3g}% (limit {:g}%)",
                          criteria.mean_from_step, 100 * c.mean_relative,
                          100 * criteria.max_mean_relative));
  return c;
}

CurveComparison compare_with_envelope(const LossEnvelope& envelope, const std::vector<double>& run,
                                      const AlignmentCriteria& criteria) {
  if (static_cast<int64_t>(run.size()) != envelope.steps() || run.empty())
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("compare_with_envelope: {} envelope steps, {} run steps",
                            envelope.steps(), run.size()));
  CurveComparison c;
  c.steps = envelope.steps();
  c.allowed_outside = std::max<int64_t>(1, c.steps / 100);
  for (int64_t i = 0; i < c.steps; ++i) {
    const double got = run[i];
    const double outside =
        std::isfinite(got) ? std::max({0.0, envelope.loss_min[i] - got, got - envelope.loss_max[i]})
                           : INFINITY;
    const double margin = criteria.margin_std * envelope.loss_std[i] + criteria.margin_atol;
    if (!(outside <= margin)) {
      ++c.steps_outside;
      if (c.first_outside_step == 0) c.first_outside_step = i + 1;
    }
    if (c.largest_step == 0 || outside > c.largest_abs) {
      c.largest_step = i + 1;
      c.largest_abs = outside;
      c.largest_relative = outside / std::max(std::fabs(envelope.loss_mean[i]), 1e-30);
    }
  }
  c.pass = c.steps_outside <= c.allowed_outside;
  c.summary = fmt::format(
      "statistical tier over {} steps against {} seeds' envelope (margin {:g} std + {:g}): {} "
      "step(s) outside (allowed {}){}; largest distance outside the envelope {:.3g} ({:.3g} "
      "relative) at step {}",
      c.steps, envelope.members.size(), criteria.margin_std, criteria.margin_atol, c.steps_outside,
      c.allowed_outside,
      c.first_outside_step ? fmt::format(", the first at step {}", c.first_outside_step) : "",
      c.largest_abs, c.largest_relative, c.largest_step);
  return c;
}

ToleranceJustification justified_rtol(const LossEnvelope& envelope) {
  ToleranceJustification j;
  for (int64_t i = 0; i < envelope.steps(); ++i) {
    const double mean = std::max(std::fabs(envelope.loss_mean[i]), 1e-30);
    const double spread = (envelope.loss_max[i] - envelope.loss_min[i]) / mean;
    if (j.largest_step == 0 || spread > j.largest_relative_spread) {
      j.largest_relative_spread = spread;
      j.largest_step = i + 1;
    }
    j.largest_relative_std = std::max(j.largest_relative_std, envelope.loss_std[i] / mean);
  }
  j.rtol = std::max(1.5 * j.largest_relative_spread, 0.001);
  j.summary = fmt::format(
      "largest relative spread across seeds {:.4g} (max - min over the mean, step {}; largest "
      "std / mean {:.4g}) -> rtol = max(1.5 x {:.4g}, 0.001) = {:.4g}",
      j.largest_relative_spread, j.largest_step, j.largest_relative_std, j.largest_relative_spread,
      j.rtol);
  return j;
}

double step1_grad_rtol(const std::string& precision) {
  return precision == "bf16" ? kStep1GradRtolBf16 : kStep1GradRtol;
}

double step1_direction_rtol(const std::string& precision) {
  return precision == "bf16" ? kStep1DirectionRtolBf16 : kStep1GradRtol;
}

namespace {

// Step1Diagnosis::culprit: the median ratio over the tensors with a nonzero
// reference is the common factor; the largest |ratio / factor - 1| names
// the culprit (a non-finite run norm first of all).
void name_culprit(const std::vector<std::pair<std::string, double>>& reference,
                  const std::vector<std::pair<std::string, double>>& run, Step1Diagnosis& d) {
  std::vector<double> ratios;
  for (size_t i = 0; i < reference.size(); ++i)
    if (reference[i].second != 0 && std::isfinite(run[i].second))
      ratios.push_back(run[i].second / reference[i].second);
  if (ratios.empty()) return;
  std::vector<double> sorted = ratios;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  d.common_scale = sorted[sorted.size() / 2];
  for (size_t i = 0; i < reference.size(); ++i) {
    const double ref = reference[i].second;
    if (ref == 0 && std::isfinite(run[i].second)) continue;
    const double deviation = std::isfinite(run[i].second)
                                 ? std::fabs(run[i].second / (d.common_scale * ref) - 1)
                                 : INFINITY;
    if (d.culprit.empty() || deviation > d.culprit_relative) {
      d.culprit = reference[i].first;
      d.culprit_relative = deviation;
    }
  }
}

}  // namespace

Step1Diagnosis diagnose_step1(const std::vector<std::pair<std::string, double>>& reference,
                              const std::vector<std::pair<std::string, double>>& run, double rtol) {
  if (reference.size() != run.size())
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("step-1 diagnosis: {} reference tensors, {} run tensors",
                            reference.size(), run.size()));
  Step1Diagnosis d;
  for (size_t i = 0; i < reference.size(); ++i) {
    const auto& [name, ref] = reference[i];
    if (run[i].first != name)
      throw Error(StatusCode::kInvalidArgument, "step-1 diagnosis: tensor " + std::to_string(i) +
                                                    " is '" + run[i].first + "' in the run and '" +
                                                    name + "' in the reference");
    const double got = run[i].second;
    const double diff = std::isfinite(got) ? std::fabs(got - ref) : INFINITY;
    const double relative = diff / std::max(std::fabs(ref), 1e-30);
    if (d.worst.empty() || relative > d.worst_relative) {
      d.worst = name;
      d.worst_relative = relative;
    }
    if (!(diff <= kStep1GradAtol + rtol * std::fabs(ref)) && !d.first_out) {
      d.first_out = name;
      d.pass = false;
      d.summary = fmt::format(
          "step 1: the gradient of {} is the first out of bounds (L2 norm {:.9g}, reference "
          "{:.9g}: {:.3g} relative, limit {:g})",
          name, got, ref, relative, rtol);
    }
  }
  name_culprit(reference, run, d);
  if (d.pass)
    d.summary = fmt::format(
        "step 1: every parameter's gradient within {:g} relative (worst {} at "
        "{:.3g})",
        rtol, d.worst, d.worst_relative);
  else
    d.summary += fmt::format(
        "; with the factor common to every tensor ({:.6g}: clipping by the global norm) "
        "taken out, {} deviates most ({:.3g} relative): the op computing its gradient is the "
        "first suspect",
        d.common_scale, d.culprit, d.culprit_relative);
  return d;
}

}  // namespace polychip::training

namespace polychip::training {

GradientDiagnosis diagnose_gradients(const std::vector<GradientCheck>& reference,
                                     const std::vector<GradientCheck>& run,
                                     const Gpt2ParamLayout& layout, double rtol,
                                     double direction_rtol) {
  const auto at_step = [](const std::vector<GradientCheck>& checks,
                          int64_t step) -> const GradientCheck* {
    for (const GradientCheck& c : checks)
      if (c.step == step) return &c;
    return nullptr;
  };
  const GradientCheck *ref1 = at_step(reference, 1), *run1 = at_step(run, 1);
  if (!ref1 || !run1)
    throw Error(StatusCode::kInvalidArgument, std::string("gradient diagnosis: the ") +
                                                  (ref1 ? "run" : "reference") +
                                                  " has no gradient check of step 1");
  GradientDiagnosis d;
  const std::vector<TensorDeviation> step1 = gradient_deviations(*ref1, *run1, layout);
  double culprit_relative = -1;
  for (size_t t = 0; t < step1.size(); ++t) {
    const TensorDeviation& dev = step1[t];
    const double ref_norm = ref1->tensors[t].norm;
    // Within atol + rtol |ref|: the relative figures times the reference norm.
    const bool outside =
        !(dev.norm_relative * ref_norm <= kStep1GradAtol + rtol * ref_norm) ||
        !(dev.direction_relative * ref_norm <= kStep1GradAtol + direction_rtol * ref_norm) ||
        (ref_norm == 0 && dev.relative() > 0);
    if (outside && !d.first_out) {
      d.first_out = dev.name;
      d.pass = false;
    }
    if (dev.relative() > culprit_relative) {
      culprit_relative = dev.relative();
      d.culprit = dev.name;
      d.culprit_norm_relative = dev.norm_relative;
      d.culprit_direction_relative = dev.direction_relative;
    }
  }
  d.culprit_op = gradient_op(d.culprit);
  std::string later_text;
  for (const GradientCheck& r : run) {
    const GradientCheck* ref = at_step(reference, r.step);
    if (r.step == 1 || !ref) continue;
    GradientDiagnosis::Later worst{r.step, "", -1};
    for (const TensorDeviation& dev : gradient_deviations(*ref, r, layout))
      if (dev.relative() > worst.relative) worst = {r.step, dev.name, dev.relative()};
    d.later.push_back(worst);
    later_text += fmt::format("{}step {} {} ({:.3g})", later_text.empty() ? "" : ", ", worst.step,
                              worst.tensor, worst.relative);
  }
  const std::string culprit = fmt::format(
      "{} deviates most (norm {:.3g}, direction {:.3g} relative; its gradient is computed by {})",
      d.culprit, d.culprit_norm_relative, d.culprit_direction_relative, d.culprit_op);
  d.summary = d.pass ? fmt::format(
                           "step 1: every parameter's gradient before clipping within {:g} "
                           "relative in norm and {:g} in direction; {}",
                           rtol, direction_rtol, culprit)
                     : fmt::format(
                           "step 1: the gradients before clipping leave {:g} relative in norm or "
                           "{:g} in direction from {} on; {}: the first suspect",
                           rtol, direction_rtol, *d.first_out, culprit);
  if (!later_text.empty()) d.summary += "; the most deviating tensor later: " + later_text;
  return d;
}

}  // namespace polychip::training
