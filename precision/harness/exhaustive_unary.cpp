#include "exhaustive_unary.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "device_io.hpp"
#include "elementwise_error_scale.hpp"
#include "metrics.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::precision {
namespace {

constexpr std::array<std::string_view, 8> kOps = {"exp",  "log",     "sqrt", "rsqrt",
                                                  "tanh", "sigmoid", "gelu", "silu"};
constexpr uint64_t kAllPatterns = uint64_t{1} << 32;
constexpr uint32_t kCanaryWord = 0xFFFFFFFFu;  // the canary of device_io.hpp, as one f32 word
constexpr uint64_t kGuardWords = kGuardBytes / sizeof(float);
// Failures kept with their values in the record (the count is always exact).
constexpr size_t kFailuresKept = 8;
// The float64 evaluation's relative error is below 1e-13 for these ops
// (libm's exp/log/tanh/erfc are within a few double ulps; gelu's erfc
// argument is rounded once, which its condition number, 2t^2 <= 200 where
// f32 results are normal, turns into < 1e-13). That moves an element's
// tolerance fraction by far less than this margin, so outside it the fast
// verdict is the oracle's verdict.
constexpr double kInconclusiveMargin = 1e-5;
constexpr double kEdgeMargin = 1e-12;  // relative distance to a binade edge

// The oracle's formulas (precision/oracle/oracle_elementwise.cpp) in double.
double sigmoid(double x) {
  if (x >= 0) return 1 / (1 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1 + e);
}
double gelu(double x) {
  constexpr double kSqrt1_2 = 0.70710678118654752440;
  if (std::isinf(x)) return x > 0 ? x : -0.0;  // the limits
  return x / 2 * std::erfc(-x * kSqrt1_2);
}
double silu(double x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0;
  return x * sigmoid(x);
}
using ExactFn = double (*)(double);
ExactFn fast_exact(std::string_view op) {
  if (op == "exp") return [](double x) { return std::exp(x); };
  if (op == "log") return [](double x) { return std::log(x); };
  if (op == "sqrt") return [](double x) { return std::sqrt(x); };
  if (op == "rsqrt") return [](double x) { return 1 / std::sqrt(x); };
  if (op == "tanh") return [](double x) { return std::tanh(x); };
  if (op == "sigmoid") return sigmoid;
  if (op == "gelu") return gelu;
  return silu;
}

// Whether the exact value may lie in the binade next to the float64
// value's `r` (a power of two is that close), where the ulp differs.
bool near_a_binade_edge(double r) {
  if (!std::isfinite(r) || r == 0) return false;
  int e = 0;
  const double m = std::fabs(std::frexp(r, &e));  // in [0.5, 1)
  return m < 0.5 * (1 + kEdgeMargin) || m > 1 - kEdgeMargin;
}
// Whether the exact value may round to f32's max where `r` rounds to Inf, or
// the reverse.
bool near_overflow(double r) {
  const double threshold = 0x1.ffffffp127;  // max f32 + half an ulp
  return std::fabs(std::fabs(r) / threshold - 1) < kEdgeMargin;
}

// Whether a fraction computed from the float64 value decides the verdict.
// Near a binade edge the exact value may sit in the neighbouring binade,
// whose ulp is half or twice as large, so the true fraction is only known to
// lie within [fraction / 2, 2 fraction].
bool settled(double fraction, bool at_edge) {
  const double lo = at_edge ? fraction / 2 : fraction, hi = at_edge ? 2 * fraction : fraction;
  return hi < 1 - kInconclusiveMargin || lo > 1 + kInconclusiveMargin;
}

struct Failure {
  uint32_t input_bits = 0;
  float device = 0;
  double exact = 0, ulp = 0, fraction = 0;
};

// The check of one range of elements (one thread's share of a chunk).
struct Tally {
  uint64_t mismatches = 0;
  double worst_fraction = -1, worst_ulp = 0;
  Failure worst;
  // The first kFailuresKept failures, in input order (those the oracle
  // settled come after the fast check's of the same thread's share).
  std::vector<Failure> first;
  std::vector<uint32_t> deferred;  // indices the fast check could not settle
  void add(const Failure& f) {
    if (f.fraction > 1) {
      ++mismatches;
      if (first.size() < kFailuresKept) first.push_back(f);
    }
    if (std::isfinite(f.ulp)) worst_ulp = std::max(worst_ulp, f.ulp);
    if (f.fraction > worst_fraction) {
      worst_fraction = f.fraction;
      worst = f;
    }
  }
  void merge(const Tally& o) {
    mismatches += o.mismatches;
    for (const Failure& f : o.first)
      if (first.size() < kFailuresKept) first.push_back(f);
    worst_ulp = std::max(worst_ulp, o.worst_ulp);
    if (o.worst_fraction > worst_fraction) {
      worst_fraction = o.worst_fraction;
      worst = o.worst;
    }
  }
};

float as_float(uint32_t bits) { return std::bit_cast<float>(bits); }

// Judges elements of `op` against `tol`; whether the op's absolute term is
// per element (elementwise_error_scale.hpp) is decided once, not per input.
class Judge {
 public:
  Judge(std::string_view op, const Tolerance& tol)
      : op_(op), tol_(tol), per_element_(has_elementwise_error_scale(op)) {}
  Failure operator()(uint32_t bits, float device, double exact) const {
    const double atol =
        per_element_ ? elementwise_atol(tol_, DType::kF32,
                                        activation_error_scale(op_, DType::kF32, as_float(bits)))
                     : tol_.atol_factor;
    const ElementError e = element_error(device, exact, DType::kF32, tol_, atol);
    return {bits, device, exact, e.ulp, e.fraction};
  }

 private:
  std::string_view op_;
  const Tolerance& tol_;
  bool per_element_;
};

// Fast check of elements [begin, end) of a chunk whose inputs start at
// `first_bits`.
Tally check_range(std::string_view op, uint32_t first_bits, const float* got, uint64_t begin,
                  uint64_t end, const Tolerance& tol) {
  Tally t;
  const ExactFn f_exact = fast_exact(op);
  const Judge judge(op, tol);
  for (uint64_t i = begin; i < end; ++i) {
    const uint32_t bits = first_bits + static_cast<uint32_t>(i);
    const double exact = f_exact(as_float(bits));
    const Failure f = judge(bits, got[i], exact);
    if (!near_overflow(exact) && settled(f.fraction, near_a_binade_edge(exact)))
      t.add(f);
    else
      t.deferred.push_back(static_cast<uint32_t>(i));
  }
  return t;
}

// The long double oracle on the elements the fast check deferred.
void settle_deferred(const OpSpec& op, const polychip_op_attrs& attrs, HostOpFn oracle,
                     uint32_t first_bits, const float* got, const std::vector<uint32_t>& deferred,
                     const Tolerance& tol, Tally& tally) {
  if (deferred.empty()) return;
  HostTensor x{DType::kF32, {static_cast<int64_t>(deferred.size())}, {}};
  for (uint32_t i : deferred) x.values.push_back(as_float(first_bits + i));
  std::vector<HostTensor> y = {HostTensor{DType::kF32, x.shape, {}}};
  oracle(op, std::span<const HostTensor>(&x, 1), y, attrs);
  const Judge judge(op.name, tol);
  for (size_t k = 0; k < deferred.size(); ++k)
    tally.add(judge(first_bits + deferred[k], got[deferred[k]], y[0].values[k]));
}

// Checks a chunk on every hardware thread; returns the merged tally and
// how many elements went to the oracle.
Tally check_chunk(const OpSpec& op, const polychip_op_attrs& attrs, HostOpFn oracle,
                  uint32_t first_bits, const float* got, uint64_t n, const Tolerance& tol,
                  uint64_t& deferred_count) {
  const uint64_t threads =
      std::clamp<uint64_t>(std::thread::hardware_concurrency(), 1, std::max<uint64_t>(1, n >> 16));
  std::vector<Tally> parts(threads);
  std::vector<std::thread> pool;
  for (uint64_t k = 0; k < threads; ++k)
    pool.emplace_back([&, k] {
      parts[k] = check_range(op.name, first_bits, got, n * k / threads, n * (k + 1) / threads, tol);
    });
  for (auto& th : pool) th.join();
  Tally all;
  for (auto& part : parts) {
    deferred_count += part.deferred.size();
    settle_deferred(op, attrs, oracle, first_bits, got, part.deferred, tol, part);
    all.merge(part);
  }
  return all;
}

// One dispatch chunk on the device: inputs and output between guard bands.
class DeviceChunk {
 public:
  DeviceChunk(const Device& device, uint64_t capacity)
      : in_(device, bytes(capacity)), out_(device, bytes(capacity)), staging_(words(capacity)) {}

  // Runs `op` on the bit patterns first_bits .. first_bits + n - 1; the
  // results are in results() afterwards. "" or what went wrong with the
  // memory around the tensors.
  std::string run(const CaseContext& ctx, const std::string& op, const polychip_op_attrs& attrs,
                  uint32_t first_bits, uint64_t n) {
    const uint64_t size = bytes(n);
    std::fill_n(staging_.begin(), words(n), kCanaryWord);
    for (uint64_t i = 0; i < n; ++i) staging_[kGuardWords + i] = first_bits + uint32_t(i);
    in_.copy_from_host(staging_.data(), size);
    std::fill_n(staging_.begin(), words(n), kCanaryWord);
    out_.copy_from_host(staging_.data(), size);
    const Shape shape = {static_cast<int64_t>(n)}, strides = {1};
    const TensorView views[] = {TensorView(in_, DType::kF32, shape, strides, kGuardBytes),
                                TensorView(out_, DType::kF32, shape, strides, kGuardBytes)};
    ctx.dispatcher->call(op, views, attrs, *ctx.stream);
    ctx.stream->synchronize();
    // The input first (in staging_), then the output, which stays there.
    in_.copy_to_host(staging_.data(), size);
    for (uint64_t i = 0; i < words(n); ++i) {
      const bool element = i >= kGuardWords && i < kGuardWords + n;
      const uint32_t expected = element ? first_bits + uint32_t(i - kGuardWords) : kCanaryWord;
      if (staging_[i] != expected)
        return element ? fmt::format("input 'x' was modified at element {}", i - kGuardWords)
                       : fmt::format("a write outside input 'x' at word {} of its buffer", i);
    }
    out_.copy_to_host(staging_.data(), size);
    for (uint64_t i = 0; i < kGuardWords; ++i) {
      if (staging_[i] != kCanaryWord)
        return fmt::format(
            "output 'y': a write outside its elements: {} byte(s) before its "
            "first element",
            (kGuardWords - i) * sizeof(float));
      if (staging_[kGuardWords + n + i] != kCanaryWord)
        return fmt::format(
            "output 'y': a write outside its elements: element offset +{} past "
            "its last element",
            i + 1);
    }
    return "";
  }
  const float* results() const { return reinterpret_cast<const float*>(&staging_[kGuardWords]); }

 private:
  static uint64_t words(uint64_t n) { return n + 2 * kGuardWords; }
  static uint64_t bytes(uint64_t n) { return words(n) * sizeof(float); }
  Buffer in_, out_;
  std::vector<uint32_t> staging_;
};

std::string bits_hex(uint32_t bits) { return fmt::format("0x{:08x}", bits); }

nlohmann::json failure_json(const Failure& f) {
  return {{"input_bits", bits_hex(f.input_bits)},
          {"input", hex_float(as_float(f.input_bits))},
          {"device_bits", bits_hex(std::bit_cast<uint32_t>(f.device))},
          {"device", hex_float(f.device)},
          {"exact", hex_float(f.exact)},
          {"ulp_error", std::isfinite(f.ulp) ? nlohmann::json(f.ulp) : nlohmann::json("inf")}};
}

std::string describe(const Failure& f) {
  return fmt::format("x = {} ({:.9g}): device {} = {:.9g}, exact {:.17g}", bits_hex(f.input_bits),
                     as_float(f.input_bits), bits_hex(std::bit_cast<uint32_t>(f.device)), f.device,
                     f.exact);
}

// first_bits parsed from the spec's from= token; false unless it is written
// as exhaustive_f32_case writes it ("0x" and 8 lower-case hex digits), so
// that a case has one id (its chunks' repro ids, waivers and records name
// that one).
bool parse_from(const CaseSpec& spec, uint32_t& out) {
  const std::string v = spec.value_of("from");
  if (v.size() != 10) return false;
  const std::from_chars_result r = std::from_chars(v.data() + 2, v.data() + v.size(), out, 16);
  return r.ec == std::errc() && v == fmt::format("0x{:08x}", out);
}

}  // namespace

std::span<const std::string_view> exhaustive_f32_ops() { return kOps; }

CaseSpec exhaustive_f32_case(std::string_view op, uint32_t first_bits, uint64_t count) {
  return CaseSpec{std::string(op),
                  DType::kF32,
                  {static_cast<int64_t>(count)},
                  {"exhaustive", fmt::format("from=0x{:08x}", first_bits)},
                  1};
}

std::vector<CaseSpec> exhaustive_f32_cases(uint64_t per_case) {
  if (per_case == 0 || kAllPatterns % per_case)
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("exhaustive cases: {} must divide 2^32", per_case));
  std::vector<CaseSpec> out;
  for (std::string_view op : kOps)
    for (uint64_t first = 0; first < kAllPatterns; first += per_case)
      out.push_back(exhaustive_f32_case(op, static_cast<uint32_t>(first), per_case));
  return out;
}

bool is_exhaustive_f32(const CaseSpec& spec) {
  return spec.dtype == DType::kF32 && spec.has("exhaustive");
}

ExhaustiveOutcome run_exhaustive_f32(const CaseSpec& spec, const CaseContext& ctx) {
  ExhaustiveOutcome out;
  auto fail = [&](std::string message) {
    out.verdict = Verdict::kFail;
    out.message = std::move(message);
    return out;
  };
  uint32_t first_bits = 0;
  if (std::find(kOps.begin(), kOps.end(), spec.op) == kOps.end() || spec.dims.size() != 1 ||
      !parse_from(spec, first_bits) || spec.dims[0] <= 0 ||
      first_bits + static_cast<uint64_t>(spec.dims[0]) > kAllPatterns)
    return fail(fmt::format(
        "harness: cannot build the case: an exhaustive f32 case is <op>/f32/<count>/exhaustive+"
        "from=0x<8 lower-case hex digits>/seed=<n> with op one of exp, log, sqrt, rsqrt, tanh, "
        "sigmoid, gelu, silu and from + count <= 2^32"));
  const uint64_t count = static_cast<uint64_t>(spec.dims[0]);
  const OpSpec& op = *find_op(spec.op);
  const DTypeSignature sig = {DType::kF32, DType::kF32};
  if (!ctx.device.properties().supports(DType::kF32) ||
      !ctx.dispatcher->has_kernel(ctx.device, spec.op, sig)) {
    out.verdict = Verdict::kNotSupported;
    out.message = fmt::format("{} has no kernel for {}(f32, f32)", ctx.device.label(), spec.op);
    return out;
  }
  const polychip_op_attrs attrs = default_attrs(op);
  const Tolerance tol = ctx.tolerances->lookup(spec.op, DType::kF32);
  out.fields["tolerance"] = to_json(tol);

  const auto start = std::chrono::steady_clock::now();
  Tally tally;
  uint64_t deferred = 0, failing_chunk = kAllPatterns;
  try {
    DeviceChunk chunk(ctx.device, std::min(count, kExhaustiveDispatchChunk));
    for (uint64_t done = 0; done < count; done += kExhaustiveDispatchChunk) {
      const uint64_t n = std::min(kExhaustiveDispatchChunk, count - done);
      const uint32_t chunk_first = first_bits + static_cast<uint32_t>(done);
      const std::string layout = chunk.run(ctx, spec.op, attrs, chunk_first, n);
      const CaseSpec chunk_spec = exhaustive_f32_case(spec.op, chunk_first, n);
      if (!layout.empty())
        return fail(fmt::format("{} (inputs {} .. {}; chunk: {}{})", layout, bits_hex(chunk_first),
                                bits_hex(chunk_first + uint32_t(n - 1)), ctx.repro_prefix,
                                case_id(chunk_spec)));
      const uint64_t before = tally.mismatches;
      tally.merge(check_chunk(op, attrs, ctx.references.oracle, chunk_first, chunk.results(), n,
                              tol, deferred));
      if (before == 0 && tally.mismatches > 0) failing_chunk = chunk_first;
    }
  } catch (const Error& e) {
    if (e.code() == StatusCode::kUnsupported) {
      out.verdict = Verdict::kNotSupported;
      out.message = e.message();
      return out;
    }
    return fail(fmt::format("the call failed: {}", e.what()));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.fields["metrics"] = {
      {"elements", count},
      {"mismatches", tally.mismatches},
      {"max_ulp_error", tally.worst_ulp},
      {"max_tolerance_fraction", std::isfinite(tally.worst_fraction)
                                     ? nlohmann::json(tally.worst_fraction)
                                     : nlohmann::json(hex_float(tally.worst_fraction))},
      {"oracle_evaluations", deferred},
      {"elements_per_second", seconds > 0 ? static_cast<double>(count) / seconds : 0.0}};
  if (tally.worst_fraction >= 0) out.fields["worst"] = failure_json(tally.worst);
  if (tally.mismatches == 0) return out;

  nlohmann::json failures = nlohmann::json::array();
  for (const Failure& f : tally.first) failures.push_back(failure_json(f));
  out.fields["failures"] = failures;
  const uint64_t chunk_n = std::min(kExhaustiveDispatchChunk, first_bits + count - failing_chunk);
  const std::string chunk_repro =
      ctx.repro_prefix +
      case_id(exhaustive_f32_case(spec.op, static_cast<uint32_t>(failing_chunk), chunk_n));
  out.fields["chunk_repro"] = chunk_repro;
  return fail(
      fmt::format("{} of {} inputs beyond tolerance (worst {:.3g}x the tolerance: {}; "
                  "first: {}); one chunk with a failure: {}",
                  tally.mismatches, count, tally.worst_fraction, describe(tally.worst),
                  describe(tally.first.front()), chunk_repro));
}

}  // namespace polychip::precision
