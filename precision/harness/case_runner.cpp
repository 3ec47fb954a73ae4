#include "case_runner.hpp"

#include <bit>
#include <chrono>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "device_io.hpp"
#include "dominant_value.hpp"
#include "exact_inputs.hpp"
#include "exhaustive_unary.hpp"
#include "metrics.hpp"
#include "polychip/error.hpp"
#include "problem.hpp"

namespace polychip::precision {
OutputMetrics compare_problem_output(const Problem& p, size_t k, const HostTensor& got,
                                     const HostTensor& exact, const Tolerance& tol) {
  const double terms = k < p.terms_magnitude.size() ? p.terms_magnitude[k] : 0;
  const double scale = k < p.error_scale.size() ? p.error_scale[k] : 0;
  const std::vector<ElementErrorScale> elementwise = tol.mode == ToleranceMode::kClose
                                                         ? elementwise_error_scales(p)
                                                         : std::vector<ElementErrorScale>{};
  return compare_output(got, exact, tol, p.reduce_len, terms, scale,
                        elementwise.empty() ? nullptr : &elementwise);
}

namespace {

// Tolerance key: the op, or "gemm:<variant>" for a case of that variant.
std::string tolerance_key(const CaseSpec& spec) {
  if (spec.op == "gemm")
    for (std::string_view variant : kGemmToleranceVariants)
      if (spec.has(std::string(variant))) return "gemm:" + std::string(variant);
  return spec.op;
}

std::string multi_index(const Shape& shape, int64_t flat) {
  std::string s;
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t extent = std::max<int64_t>(1, shape[d]);
    s = fmt::format("{}{}", flat % extent, s.empty() ? "" : ", " + s);
    flat /= extent;
  }
  return "[" + s + "]";
}

struct Measured {
  std::vector<OutputMetrics> metrics;  // one per output
  size_t worst = 0;                    // output with the largest tolerance fraction
  double fraction() const { return metrics.empty() ? 0 : metrics[worst].max_tolerance_fraction; }
  bool within() const {
    for (const auto& m : metrics)
      if (!m.within_tolerance()) return false;
    return true;
  }
};

Measured measure(const Problem& p, const std::vector<HostTensor>& got,
                 const std::vector<HostTensor>& exact, const std::vector<Tolerance>& tols) {
  Measured out;
  for (size_t k = 0; k < got.size(); ++k) {
    out.metrics.push_back(compare_problem_output(p, k, got[k], exact[k], tols[k]));
    if (out.metrics[k].max_tolerance_fraction > out.metrics[out.worst].max_tolerance_fraction)
      out.worst = k;
  }
  return out;
}

// The reference each element is judged against: the exact result, or the
// NVIDIA reference's value where the device is nearer to that (equal, for
// NaN and Inf). A device is never judged worse than NVIDIA on the same
// element: PyTorch's tanh-form gelu gradient cancels to a relative error of
// 6e-4 near x = -4 in f32, its relu gradient passes dy through at x = NaN,
// its activation gradients give Inf * 0 = NaN at +-Inf, and a chip doing
// the same is aligned with it. `followed` counts the elements where that
// reference differs from the exact one.
std::vector<HostTensor> nearer_reference(const std::vector<HostTensor>& exact,
                                         const std::vector<HostTensor>& nvidia,
                                         const std::vector<HostTensor>& device, int64_t& followed) {
  std::vector<HostTensor> judged = exact;
  for (size_t k = 0; k < judged.size(); ++k)
    for (size_t i = 0; i < judged[k].values.size() && is_floating(judged[k].dtype); ++i) {
      const double e = round_to_dtype(exact[k].values[i], exact[k].dtype);
      const double n = nvidia[k].values[i], d = device[k].values[i];
      const bool same_as_nvidia = (std::isnan(n) && std::isnan(d)) || n == d;
      const bool nearer_nvidia = std::isfinite(d) && std::isfinite(n) && std::isfinite(e) &&
                                 std::fabs(d - n) < std::fabs(d - e);
      if (!(same_as_nvidia || nearer_nvidia) || (std::isnan(n) ? std::isnan(e) : n == e)) continue;
      judged[k].values[i] = n;
      ++followed;
    }
  return judged;
}

struct DeviceRun {
  std::vector<HostTensor> outputs;
  // A write outside an output's elements or a modified input ("" if none).
  std::string layout_error;
};

// Uploads the inputs, allocates canary-filled outputs between guard bands,
// runs the op and reads everything back.
DeviceRun run_on_device(const Problem& p, const CaseContext& ctx) {
  DeviceRun run;
  std::vector<std::unique_ptr<DeviceTensor>> tensors;
  std::vector<TensorView> views;
  for (size_t k = 0; k < p.inputs.size(); ++k)
    tensors.push_back(std::make_unique<DeviceTensor>(ctx.device, p.inputs[k], p.strided, true,
                                                     p.broadcast && k == 1));
  for (const auto& t : p.outputs)
    tensors.push_back(std::make_unique<DeviceTensor>(ctx.device, t, p.strided, false));
  for (const auto& t : tensors) views.push_back(t->view());
  ctx.dispatcher->call(p.spec.op, views, p.attrs, *ctx.stream);
  ctx.stream->synchronize();
  for (size_t k = 0; k < tensors.size(); ++k) {
    if (run.layout_error.empty()) {
      std::string e = tensors[k]->check_canary();
      if (!e.empty())
        run.layout_error = fmt::format("{} '{}': {}", k < p.inputs.size() ? "input" : "output",
                                       tensor_name(p, k), e);
    }
    if (k >= p.inputs.size()) {
      run.outputs.push_back(tensors[k]->download());
      continue;
    }
    // An input must come back unchanged (no output aliases it here).
    HostTensor back = tensors[k]->download();
    for (size_t i = 0; i < back.values.size() && run.layout_error.empty(); ++i) {
      double a = back.values[i], b = p.inputs[k].values[i];
      if (!(a == b || (std::isnan(a) && std::isnan(b))))
        run.layout_error =
            fmt::format("input '{}' was modified at element {}", tensor_name(p, k), i);
    }
  }
  return run;
}

// "" when both runs gave the same bits, else where they first differ.
std::string first_difference(const Problem& p, const std::vector<HostTensor>& a,
                             const std::vector<HostTensor>& b) {
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t i = 0; i < a[k].values.size(); ++i) {
      const double x = a[k].values[i], y = b[k].values[i];
      // Values are exact widenings of the dtype's bits, so equal doubles
      // (with equal signs of zero and NaN payloads) mean equal bits.
      if (std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y)) continue;
      return fmt::format(
          "nondeterministic: runs differ at element {} {} of '{}' (first run {} = {}, "
          "second {} = {})",
          i, multi_index(a[k].shape, static_cast<int64_t>(i)), output_name(p, k), hex_float(x), x,
          hex_float(y), y);
    }
  return "";
}

// How far the worst element is off, in the terms that mean something for
// it: a tolerance multiple is noise against an exact 0 (its ulp is the
// smallest subnormal) or a 0-ulp bound, so those get absolute / ulp terms.
// The ulp limit named is the one applied (bound + rounding), not the bound.
std::string describe_worst(const OutputMetrics& m, const Tolerance& tol, DType dt) {
  // Exact-input cases allow no error: any miss has an infinite fraction.
  if (tol.mode == ToleranceMode::kExact && std::isfinite(m.worst_device) &&
      std::isfinite(m.worst_exact))
    return fmt::format("worst is off by {:.3g} where exact inputs allow 0", m.max_abs_error);
  if (!std::isfinite(m.max_tolerance_fraction)) return "worst is a NaN/Inf mismatch";
  if (m.worst_exact == 0)
    return fmt::format("worst is off by {:.3g} from an exact 0", m.max_abs_error);
  if (tol.mode == ToleranceMode::kUlp)
    return fmt::format(
        "worst is {:.3g} ulp off, {:g} ulp allowed (bound {:g} + {:g} for the "
        "exact value's rounding)",
        m.max_ulp_error, ulp_limit(tol, dt), tol.ulp, ulp_limit(tol, dt) - tol.ulp);
  return fmt::format("worst uses {:.3g}x the tolerance", m.max_tolerance_fraction);
}

// "" when every output can tell a right kernel from a constant one, else
// why not (dominant_value.hpp). fill's output is one value by definition
// (and checked exactly).
std::string mistrust(const Problem& p, const std::vector<HostTensor>& exact) {
  if (p.spec.op == "fill") return "";
  for (size_t k = 0; k < exact.size(); ++k)
    if (const auto d = dominant_value(exact[k].values))
      return fmt::format(
          "mistrusted: {} of {} exact values of '{}' are {}; a kernel writing that constant "
          "would pass too, so the case proves nothing",
          d->count, exact[k].values.size(), output_name(p, k), d->value);
  return "";
}

nlohmann::json base_record(const CaseSpec& spec, const std::string& adapter,
                           const std::string& repro) {
  return {{"id", case_id(spec)},
          {"suite", "precision"},
          {"adapter", adapter},
          {"op", spec.op},
          {"dtype", dtype_name(spec.dtype)},
          {"repro", repro}};
}

// Up to 64 values in hex float, as a JSON array (a note when truncated).
nlohmann::json hex_list(const std::vector<double>& v) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < v.size() && i < 64; ++i) out.push_back(hex_float(v[i]));
  if (v.size() > 64) out.push_back(fmt::format("... {} more", v.size() - 64));
  return out;
}

// The inputs behind one output element of ops that reduce: gemm's row of
// op(a), column of op(b) and c; the row of a last-axis reduction, softmax,
// norm or loss.
void add_related_inputs(const Problem& p, const HostTensor& out, int64_t flat,
                        nlohmann::json& ins) {
  std::string_view name = p.op->name, fam = p.op->family;
  if (name == "gemm") {
    const Shape& a = p.inputs[0].shape;
    const bool batched = a.size() == 3;
    const int64_t m = out.shape[batched], n = out.shape[batched + 1];
    const int64_t k = p.spec.dims.back();
    const int64_t batch = flat / (m * n), i = flat / n % m, j = flat % n;
    const bool ta = p.attrs.ints[attr::kTransA] != 0, tb = p.attrs.ints[attr::kTransB] != 0;
    std::vector<double> row, col;
    for (int64_t q = 0; q < k; ++q) {
      row.push_back(
          p.inputs[0].values[static_cast<size_t>(batch * m * k + (ta ? q * m + i : i * k + q))]);
      col.push_back(
          p.inputs[1].values[static_cast<size_t>(batch * k * n + (tb ? j * k + q : q * n + j))]);
    }
    ins[fmt::format("a row {}", i)] = hex_list(row);
    ins[fmt::format("b column {}", j)] = hex_list(col);
    ins["c"] = hex_float(p.inputs[2].values[static_cast<size_t>(flat)]);
    return;
  }
  if (name == "embedding_backward") {
    // dweight[id, j] sums dy[r, j] over the rows r whose id is `id`.
    const int64_t d = out.shape[1], id = flat / d, j = flat % d;
    std::vector<double> rows, terms;
    for (size_t r = 0; r < p.inputs[0].values.size(); ++r)
      if (p.inputs[0].values[r] == static_cast<double>(id)) {
        rows.push_back(static_cast<double>(r));
        terms.push_back(p.inputs[1].values[r * static_cast<size_t>(d) + static_cast<size_t>(j)]);
      }
    nlohmann::json positions = nlohmann::json::array();
    for (double r : rows) positions.push_back(static_cast<int64_t>(r));
    ins[fmt::format("rows with id {}", id)] = positions;
    ins[fmt::format("dy column {} of those rows", j)] = hex_list(terms);
    return;
  }
  const bool by_axis = fam == "softmax" || fam == "reduction";
  if (by_axis && p.attrs.ints[attr::kAxis] == 0 && !p.inputs.empty() &&
      p.inputs[0].shape.size() == 2) {
    // Reduced along the rows: the column behind the element.
    const HostTensor& x = p.inputs[0];
    const int64_t rows = x.shape[0], cols = x.shape[1];
    if (cols <= 0) return;
    std::vector<double> v;
    for (int64_t r = 0; r < rows; ++r)
      v.push_back(x.values[static_cast<size_t>(r * cols + flat % cols)]);
    ins[fmt::format("{} column {}", p.op->tensors[0].name, flat % cols)] = hex_list(v);
    return;
  }
  const bool rowwise = fam == "softmax" || fam == "norm" || fam == "loss" ||
                       (fam == "reduction" && p.attrs.ints[attr::kAxis] == -1);
  if (!rowwise || p.inputs.empty() || p.inputs[0].shape.empty()) return;
  // A norm's dgamma and dbeta sum over every row: they have no row.
  if (fam == "norm" && name.ends_with("_backward") && out.shape.size() == 1) return;
  const HostTensor& x = p.inputs[0];
  const int64_t len = x.shape.back();
  if (len <= 0) return;
  const int64_t rows = element_count(x.shape) / len, n_out = element_count(out.shape);
  if (rows <= 0 || n_out % rows) return;
  const int64_t row = flat / (n_out / rows);
  std::vector<double> v(x.values.begin() + row * len, x.values.begin() + (row + 1) * len);
  ins[fmt::format("{} row {}", p.op->tensors[0].name, row)] = hex_list(v);
}

}  // namespace

nlohmann::json make_bare_record(const CaseSpec& spec, const std::string& adapter, Verdict verdict,
                                const std::string& message, const std::string& repro) {
  nlohmann::json r = base_record(spec, adapter, repro);
  r["verdict"] = verdict_name(verdict);
  r["message"] = message;
  return r;
}

CaseOutcome run_case(const CaseSpec& spec, const CaseContext& ctx) {
  const auto start = std::chrono::steady_clock::now();
  const std::string repro = ctx.repro_prefix + case_id(spec);
  CaseOutcome out;
  out.record = base_record(spec, ctx.adapter, repro);
  out.record["device_type"] = ctx.device.device_type();
  auto finish = [&](Verdict v, const std::string& message) {
    // A failing case covered by a waiver is reported as Waived, with it.
    if (is_failure(v) && ctx.waivers) {
      if (auto w = ctx.waivers->match(ctx.adapter, ctx.device.device_type(), spec.op, spec.dtype,
                                      case_id(spec))) {
        out.record["waiver"] = to_json(*w);
        out.record["waived_verdict"] = verdict_name(v);
        v = Verdict::kWaived;
      }
    }
    out.verdict = v;
    out.record["verdict"] = verdict_name(v);
    if (!message.empty()) out.record["message"] = message;
    out.record["duration_ms"] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return out;
  };

  // Every f32 input of a unary op: chunked through the device, checked
  // without materialising the problem (exhaustive_unary.hpp).
  if (is_exhaustive_f32(spec)) {
    ExhaustiveOutcome e = run_exhaustive_f32(spec, ctx);
    out.record.update(e.fields);
    return finish(e.verdict, e.message);
  }

  Problem p;
  try {
    p = build_problem(spec, ctx.references.oracle);
  } catch (const Error& e) {
    return finish(Verdict::kFail, fmt::format("harness: cannot build the case: {}", e.message()));
  }
  out.record["reduce_len"] = p.reduce_len;

  // Does the device claim it can run this at all?
  const auto sig = problem_signature(p);
  for (DType dt : sig)
    if (is_floating(dt) && !ctx.device.properties().supports(dt)) {
      // Refused for the dtype, not for the case: no partial support of the op.
      out.record["unsupported_dtype"] = dtype_name(dt);
      return finish(Verdict::kNotSupported, fmt::format("{} does not support dtype {}",
                                                        ctx.device.label(), dtype_name(dt)));
    }
  if (!ctx.dispatcher->has_kernel(ctx.device, spec.op, sig))
    return finish(Verdict::kNotSupported,
                  fmt::format("{} has no kernel for {}({})", ctx.device.label(), spec.op,
                              signature_string(sig)));

  // The exact result.
  std::vector<HostTensor> exact = p.outputs;
  try {
    ctx.references.oracle(*p.op, p.inputs, exact, p.attrs);
  } catch (const Error& e) {
    return finish(Verdict::kFail, fmt::format("harness: the oracle failed: {}", e.message()));
  }

  // The device's result, twice on the same inputs and stream: every v1 op
  // is deterministic (docs/op-contract.md), so any differing bit fails.
  DeviceRun first, second;
  try {
    first = run_on_device(p, ctx);
    second = run_on_device(p, ctx);
  } catch (const Error& e) {
    if (e.code() == StatusCode::kUnsupported) return finish(Verdict::kNotSupported, e.message());
    return finish(Verdict::kFail, fmt::format("the call failed: {}", e.what()));
  }
  std::vector<HostTensor>& got = first.outputs;
  const std::string canary_error =
      !first.layout_error.empty() ? first.layout_error : second.layout_error;
  const std::string determinism_error = first_difference(p, first.outputs, second.outputs);
  if (ctx.keep_device_outputs && canary_error.empty() && determinism_error.empty())
    out.device_outputs = got;

  // Tolerances per output.
  std::vector<Tolerance> tols;
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    const std::optional<Tolerance> exact_tolerance =
        spec.has("exact") ? exact_case_tolerance(p, k) : std::nullopt;
    tols.push_back(exact_tolerance
                       ? *exact_tolerance
                       : ctx.tolerances->lookup(tolerance_key(spec), p.outputs[k].dtype));
  }
  // The NVIDIA reference on the same inputs: the outputs recorded for the
  // case where a trace has them, else the emulation.
  std::optional<Measured> nv;
  std::vector<HostTensor> nv_out = p.outputs;
  std::string nv_error;
  std::string nv_label = ctx.references.nvidia ? ctx.references.nvidia_label : "";
  bool nv_recorded = false;
  if (ctx.references.nvidia || ctx.references.nvidia_recorded) {
    try {
      std::string recorded;
      if (ctx.references.nvidia_recorded)
        recorded = ctx.references.nvidia_recorded(spec, *p.op, p.inputs, nv_out, p.attrs);
      nv_recorded = !recorded.empty();
      if (nv_recorded)
        nv_label = recorded;
      else if (ctx.references.nvidia)
        ctx.references.nvidia(*p.op, p.inputs, nv_out, p.attrs);
      if (nv_recorded || ctx.references.nvidia) nv = measure(p, nv_out, exact, tols);
    } catch (const Error& e) {
      nv_error = e.message();
    }
  }

  int64_t followed = 0;
  const std::vector<HostTensor> judged =
      nv ? nearer_reference(exact, nv_out, got, followed) : exact;
  if (followed > 0) out.record["elements_judged_against_nvidia"] = followed;
  Measured dev = measure(p, got, judged, tols);

  // Metrics: the worst output's, plus every output's.
  const size_t w = dev.worst;
  nlohmann::json outputs = nlohmann::json::array();
  for (size_t k = 0; k < got.size(); ++k) {
    nlohmann::json o = {{"name", output_name(p, k)},
                        {"dtype", dtype_name(got[k].dtype)},
                        {"metrics", to_json(dev.metrics[k])},
                        {"tolerance", to_json(tols[k])}};
    if (nv) o["nvidia_metrics"] = to_json(nv->metrics[k]);
    outputs.push_back(o);
  }
  nlohmann::json metrics = got.empty() ? nlohmann::json::object() : to_json(dev.metrics[w]);
  double ratio = NAN;
  if (nv && !got.empty()) {
    double nv_frac = nv->metrics[w].max_tolerance_fraction;
    metrics["nvidia_max_tolerance_fraction"] =
        std::isfinite(nv_frac) ? nlohmann::json(nv_frac) : nlohmann::json(hex_float(nv_frac));
    metrics["nvidia_max_ulp_error"] = std::isfinite(nv->metrics[w].max_ulp_error)
                                          ? nlohmann::json(nv->metrics[w].max_ulp_error)
                                          : nlohmann::json(hex_float(nv->metrics[w].max_ulp_error));
    metrics["nvidia_within_tolerance"] = nv->within();
    if (nv_frac > 0)
      ratio = dev.fraction() / nv_frac;
    else
      ratio = dev.fraction() > 0 ? INFINITY : 1.0;
    metrics["error_ratio_to_nvidia"] =
        std::isfinite(ratio) ? nlohmann::json(ratio) : nlohmann::json(hex_float(ratio));
  } else if (!nv_error.empty()) {
    metrics["nvidia_unavailable"] = nv_error;
  }
  out.record["metrics"] = metrics;
  out.record["outputs"] = outputs;
  out.record["references"] = {{"oracle", "float64"}, {"nvidia", nv_label}};
  if (!got.empty()) out.record["tolerance"] = to_json(tols[w]);

  // The worst element, with its inputs in hex float.
  if (!got.empty() && dev.metrics[w].worst_index >= 0) {
    const auto& m = dev.metrics[w];
    nlohmann::json we = {{"output", output_name(p, w)},
                         {"index", multi_index(got[w].shape, m.worst_index)},
                         {"flat_index", m.worst_index},
                         {"device", hex_float(m.worst_device)},
                         {"exact", hex_float(m.worst_exact)}};
    if (nv) we["nvidia"] = hex_float(nv_out[w].values[static_cast<size_t>(m.worst_index)]);
    nlohmann::json ins = nlohmann::json::object();
    for (size_t k = 0; k < p.inputs.size(); ++k)
      if (p.inputs[k].shape == got[w].shape)
        ins[tensor_name(p, k)] = hex_float(p.inputs[k].values[static_cast<size_t>(m.worst_index)]);
    add_related_inputs(p, got[w], m.worst_index, ins);
    if (!ins.empty()) we["inputs"] = ins;
    out.record["worst"] = we;
  }

  if (!canary_error.empty()) return finish(Verdict::kFail, canary_error);
  if (!determinism_error.empty()) return finish(Verdict::kFail, determinism_error);
  if (!dev.within()) {
    const auto& m = dev.metrics[w];
    return finish(Verdict::kFail,
                  fmt::format("{} of {} elements of '{}' beyond tolerance ({}: element {} {}: "
                              "device {} = {} vs exact {} = {})",
                              m.mismatches, m.elements, output_name(p, w),
                              describe_worst(m, tols[w], got[w].dtype), m.worst_index,
                              multi_index(got[w].shape, m.worst_index), hex_float(m.worst_device),
                              m.worst_device, hex_float(m.worst_exact), m.worst_exact));
  }
  if (const std::string why = mistrust(p, exact); !why.empty())
    return finish(Verdict::kMistrusted, why);
  if (nv && !got.empty() && dev.fraction() > tols[w].quality_floor &&
      dev.fraction() > tols[w].quality_ratio * nv->metrics[w].max_tolerance_fraction)
    return finish(Verdict::kQualityWarning,
                  fmt::format("within tolerance, but its error is {:.3g}x the NVIDIA {}'s", ratio,
                              nv_recorded ? "recording" : "emulation"));
  return finish(Verdict::kPass, "");
}

}  // namespace polychip::precision
