// The operator contract v1 table and its validation rules.
#include "polychip/op_contract.hpp"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

namespace polychip {
namespace {

using T = TensorSpec;
constexpr DTypeRole kT = DTypeRole::kT;
constexpr DTypeRole kF32 = DTypeRole::kF32;
constexpr DTypeRole kIndex = DTypeRole::kIndex;
constexpr DTypeRole kAnyFloat = DTypeRole::kAnyFloat;

const std::vector<DType> kFloat = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16};

std::string shape_str(const polychip_tensor& t) {
  std::string s = "[";
  for (int d = 0; d < t.rank; ++d) s += fmt::format("{}{}", d ? ", " : "", t.shape[d]);
  return s + "]";
}

bool same_shape(const polychip_tensor& a, const polychip_tensor& b) {
  return a.rank == b.rank && std::equal(a.shape, a.shape + a.rank, b.shape);
}

// --- shape rules, one per family -------------------------------------------

// `names` has one entry per tensor (an initializer list: no allocation on
// the dispatch path).
std::string all_same_shape(const OpCall& c, std::initializer_list<const char*> names) {
  for (size_t k = 1; k < c.tensors.size(); ++k)
    if (!same_shape(c.tensors[0], c.tensors[k]))
      return fmt::format("'{}' has shape {} but '{}' has shape {}", names.begin()[k],
                         shape_str(c.tensors[k]), *names.begin(), shape_str(c.tensors[0]));
  return "";
}
// A 0/1 attribute.
std::string check_flag(const OpCall& c, int slot, const char* name) {
  int64_t v = c.i(slot);
  return v == 0 || v == 1 ? "" : fmt::format("attribute '{}' = {} must be 0 or 1", name, v);
}

std::string check_binary(const OpCall& c) { return all_same_shape(c, {"a", "b", "out"}); }
std::string check_unary(const OpCall& c) { return all_same_shape(c, {"x", "y"}); }
std::string check_unary_backward(const OpCall& c) { return all_same_shape(c, {"dy", "x", "dx"}); }
std::string check_fill(const OpCall&) { return ""; }
std::string check_gelu(const OpCall& c) {
  if (auto e = check_flag(c, attr::kGeluApproximate, "approximate"); !e.empty()) return e;
  return check_unary(c);
}
std::string check_gelu_backward(const OpCall& c) {
  if (auto e = check_flag(c, attr::kGeluApproximate, "approximate"); !e.empty()) return e;
  return check_unary_backward(c);
}

std::string check_axis(const OpCall& c, const polychip_tensor& x) {
  int64_t axis = c.i(attr::kAxis);
  if (x.rank == 0) return "'x' must have rank >= 1";
  if (axis < -x.rank || axis >= x.rank)
    return fmt::format("attribute 'axis' = {} is out of range for rank {}", axis, x.rank);
  return "";
}
int64_t norm_axis(const OpCall& c, const polychip_tensor& x) {
  int64_t a = c.i(attr::kAxis);
  return a < 0 ? a + x.rank : a;
}

std::string check_reduction(const OpCall& c) {
  const auto& x = c.tensors[0];
  const auto& y = c.tensors[1];
  if (auto e = check_axis(c, x); !e.empty()) return e;
  int64_t axis = norm_axis(c, x);
  bool ok = y.rank == x.rank;
  for (int d = 0; ok && d < x.rank; ++d) ok = y.shape[d] == (d == axis ? 1 : x.shape[d]);
  if (!ok)
    return fmt::format("'y' has shape {} but must be {} with dimension {} set to 1", shape_str(y),
                       shape_str(x), axis);
  // Only argmax has an index output (i64 or i32); the first maximum of
  // nothing has no index.
  bool argmax = y.dtype == POLYCHIP_DTYPE_I64 || y.dtype == POLYCHIP_DTYPE_I32;
  if (x.shape[axis] == 0 && argmax) return "'x' is empty along 'axis': argmax is undefined";
  return "";
}

std::string check_softmax(const OpCall& c) {
  if (auto e = check_axis(c, c.tensors[0]); !e.empty()) return e;
  return all_same_shape(c, {"x", "y"});
}
std::string check_softmax_backward(const OpCall& c) {
  if (auto e = check_axis(c, c.tensors[0]); !e.empty()) return e;
  return all_same_shape(c, {"dy", "y", "dx"});
}

std::string expect_shape(const polychip_tensor& t, const char* name,
                         std::initializer_list<int64_t> dims) {
  bool ok =
      t.rank == static_cast<int>(dims.size()) && std::equal(dims.begin(), dims.end(), t.shape);
  if (ok) return "";
  std::string want = "[";
  int k = 0;
  for (auto d : dims) want += fmt::format("{}{}", k++ ? ", " : "", d);
  return fmt::format("'{}' has shape {} but must be {}]", name, shape_str(t), want);
}

std::string check_gemm(const OpCall& c) {
  const auto &a = c.tensors[0], &b = c.tensors[1], &cc = c.tensors[2], &y = c.tensors[3];
  if (a.rank != 2 && a.rank != 3) return fmt::format("'a' must have rank 2 or 3, has {}", a.rank);
  for (auto* t : {&b, &cc, &y})
    if (t->rank != a.rank) return "'a', 'b', 'c' and 'y' must all have the same rank";
  int o = a.rank - 2;
  int64_t batch = o ? a.shape[0] : 1;
  for (auto* t : {&b, &cc, &y})
    if (o && t->shape[0] != batch) return "batch dimensions of 'a', 'b', 'c', 'y' differ";
  for (auto e : {check_flag(c, attr::kTransA, "trans_a"), check_flag(c, attr::kTransB, "trans_b")})
    if (!e.empty()) return e;
  if (c.i(attr::kMathMode) < 0 || c.i(attr::kMathMode) > 2)
    return fmt::format("attribute 'math_mode' = {} is not 0, 1 or 2", c.i(attr::kMathMode));
  bool ta = c.i(attr::kTransA) != 0, tb = c.i(attr::kTransB) != 0;
  int64_t m = ta ? a.shape[o + 1] : a.shape[o], k = ta ? a.shape[o] : a.shape[o + 1];
  int64_t kb = tb ? b.shape[o + 1] : b.shape[o], n = tb ? b.shape[o] : b.shape[o + 1];
  if (k != kb)
    return fmt::format("inner dimensions differ: 'a' gives K = {}, 'b' gives K = {}", k, kb);
  for (auto [t, name] : {std::pair{&cc, "c"}, std::pair{&y, "y"}})
    if (t->shape[o] != m || t->shape[o + 1] != n)
      return fmt::format("'{}' has shape {} but must be [{}{}, {}]", name, shape_str(*t),
                         o ? fmt::format("{}, ", batch) : "", m, n);
  return "";
}

std::string check_layernorm(const OpCall& c) {
  const auto& x = c.tensors[0];
  if (x.rank != 2) return fmt::format("'x' must have rank 2 [N, D], has {}", x.rank);
  int64_t n = x.shape[0], d = x.shape[1];
  const auto& t = c.tensors;
  for (auto e : {expect_shape(t[1], "gamma", {d}), expect_shape(t[2], "beta", {d}),
                 expect_shape(t[3], "y", {n, d}), expect_shape(t[4], "mean", {n}),
                 expect_shape(t[5], "rstd", {n})})
    if (!e.empty()) return e;
  if (!(c.f(attr::kEps) > 0)) return "attribute 'eps' must be > 0";
  return "";
}
std::string check_layernorm_backward(const OpCall& c) {
  const auto& t = c.tensors;
  if (t[1].rank != 2) return "'x' must have rank 2 [N, D]";
  int64_t n = t[1].shape[0], d = t[1].shape[1];
  for (auto e : {expect_shape(t[0], "dy", {n, d}), expect_shape(t[2], "gamma", {d}),
                 expect_shape(t[3], "mean", {n}), expect_shape(t[4], "rstd", {n}),
                 expect_shape(t[5], "dx", {n, d}), expect_shape(t[6], "dgamma", {d}),
                 expect_shape(t[7], "dbeta", {d})})
    if (!e.empty()) return e;
  return "";
}
std::string check_rmsnorm(const OpCall& c) {
  const auto& t = c.tensors;
  if (t[0].rank != 2) return fmt::format("'x' must have rank 2 [N, D], has {}", t[0].rank);
  int64_t n = t[0].shape[0], d = t[0].shape[1];
  for (auto e : {expect_shape(t[1], "gamma", {d}), expect_shape(t[2], "y", {n, d}),
                 expect_shape(t[3], "rstd", {n})})
    if (!e.empty()) return e;
  if (!(c.f(attr::kEps) > 0)) return "attribute 'eps' must be > 0";
  return "";
}
std::string check_rmsnorm_backward(const OpCall& c) {
  const auto& t = c.tensors;
  if (t[1].rank != 2) return "'x' must have rank 2 [N, D]";
  int64_t n = t[1].shape[0], d = t[1].shape[1];
  for (auto e : {expect_shape(t[0], "dy", {n, d}), expect_shape(t[2], "gamma", {d}),
                 expect_shape(t[3], "rstd", {n}), expect_shape(t[4], "dx", {n, d}),
                 expect_shape(t[5], "dgamma", {d})})
    if (!e.empty()) return e;
  return "";
}

std::string check_cross_entropy(const OpCall& c) {
  const auto& t = c.tensors;
  if (t[0].rank != 2) return fmt::format("'logits' must have rank 2 [N, C], has {}", t[0].rank);
  if (t[0].shape[1] == 0) return "'logits' must have at least one class";
  int64_t n = t[0].shape[0];
  for (auto e : {expect_shape(t[1], "targets", {n}), expect_shape(t[2], "loss", {n})})
    if (!e.empty()) return e;
  return "";
}
std::string check_cross_entropy_backward(const OpCall& c) {
  const auto& t = c.tensors;
  if (t[0].rank != 2) return "'logits' must have rank 2 [N, C]";
  if (t[0].shape[1] == 0) return "'logits' must have at least one class";
  int64_t n = t[0].shape[0], k = t[0].shape[1];
  for (auto e : {expect_shape(t[1], "targets", {n}), expect_shape(t[2], "dloss", {n}),
                 expect_shape(t[3], "dlogits", {n, k})})
    if (!e.empty()) return e;
  return "";
}

std::string check_embedding(const OpCall& c) {
  const auto& t = c.tensors;
  if (t[0].rank != 1) return "'ids' must have rank 1 [N]";
  if (t[1].rank != 2) return "'weight' must have rank 2 [V, D]";
  return expect_shape(t[2], "out", {t[0].shape[0], t[1].shape[1]});
}
std::string check_embedding_backward(const OpCall& c) {
  const auto& t = c.tensors;
  if (t[0].rank != 1) return "'ids' must have rank 1 [N]";
  if (t[2].rank != 2) return "'dweight' must have rank 2 [V, D]";
  return expect_shape(t[1], "dout", {t[0].shape[0], t[2].shape[1]});
}

std::string check_rotary(const OpCall& c) {
  if (auto e = check_flag(c, attr::kInverse, "inverse"); !e.empty()) return e;
  const auto& t = c.tensors;
  if (t[0].rank != 3) return "'x' must have rank 3 [S, H, D]";
  int64_t s = t[0].shape[0], d = t[0].shape[2];
  if (d % 2) return fmt::format("'x' head dimension D = {} must be even", d);
  for (auto e : {expect_shape(t[1], "cos", {s, d / 2}), expect_shape(t[2], "sin", {s, d / 2}),
                 expect_shape(t[3], "y", {s, t[0].shape[1], d})})
    if (!e.empty()) return e;
  return "";
}

std::string check_attention(const OpCall& c) {
  if (auto e = check_flag(c, attr::kCausal, "causal"); !e.empty()) return e;
  const auto& t = c.tensors;
  const auto& q = t[0];
  if (q.rank != 4) return "'q' must have rank 4 [B, H, S, D]";
  int64_t b = q.shape[0], h = q.shape[1], s = q.shape[2], d = q.shape[3];
  for (auto e : {expect_shape(t[1], "k", {b, h, s, d}), expect_shape(t[2], "v", {b, h, s, d}),
                 expect_shape(t[3], "o", {b, h, s, d}), expect_shape(t[4], "lse", {b, h, s})})
    if (!e.empty()) return e;
  if (!(c.f(attr::kScale) > 0)) return "attribute 'scale' must be > 0";
  return "";
}
std::string check_attention_backward(const OpCall& c) {
  if (auto e = check_flag(c, attr::kCausal, "causal"); !e.empty()) return e;
  const auto& t = c.tensors;
  const auto& q = t[1];
  if (q.rank != 4) return "'q' must have rank 4 [B, H, S, D]";
  int64_t b = q.shape[0], h = q.shape[1], s = q.shape[2], d = q.shape[3];
  const char* names[] = {"do", "q", "k", "v", "o"};
  for (int k = 0; k < 5; ++k)
    if (auto e = expect_shape(t[k], names[k], {b, h, s, d}); !e.empty()) return e;
  for (auto e : {expect_shape(t[5], "lse", {b, h, s}), expect_shape(t[6], "dq", {b, h, s, d}),
                 expect_shape(t[7], "dk", {b, h, s, d}), expect_shape(t[8], "dv", {b, h, s, d})})
    if (!e.empty()) return e;
  if (!(c.f(attr::kScale) > 0)) return "attribute 'scale' must be > 0";
  return "";
}

std::string check_adamw(const OpCall& c) {
  const auto& t = c.tensors;
  if (t[0].rank != 1) return "'param' must have rank 1 [N]";
  int64_t n = t[0].shape[0];
  const char* names[] = {"param", "grad", "m", "v", "param_out", "m_out", "v_out"};
  for (int k = 1; k < 7; ++k)
    if (auto e = expect_shape(t[k], names[k], {n}); !e.empty()) return e;
  if (c.i(attr::kStep) < 1) return "attribute 'step' must be >= 1";
  if (!(c.f(attr::kAdamEps) > 0)) return "attribute 'eps' must be > 0";
  for (int slot : {attr::kBeta1, attr::kBeta2})
    if (!(c.f(slot) >= 0 && c.f(slot) < 1)) return "attributes 'beta1'/'beta2' must be in [0, 1)";
  return "";
}

// --- the table --------------------------------------------------------------
// The table reads best one op, tensor or attribute per line.
// clang-format off

OpSpec unary(const char* name, const char* summary) {
  return {name, "elementwise", summary, {T{"x", false, kT, "[*]"}, T{"y", true, kT, "[*]"}},
          {}, kFloat, check_unary, true};
}
OpSpec unary_backward(const char* name, const char* summary) {
  return {name, "elementwise", summary,
          {T{"dy", false, kT, "[*]"}, T{"x", false, kT, "[*]"}, T{"dx", true, kT, "[*]"}},
          {}, kFloat, check_unary_backward, true};
}
OpSpec binary(const char* name, const char* summary) {
  return {name, "elementwise", summary,
          {T{"a", false, kT, "[*]"}, T{"b", false, kT, "[*]"}, T{"out", true, kT, "[*]"}},
          {}, kFloat, check_binary, true};
}
OpSpec reduction(const char* name, const char* summary, DTypeRole out_role) {
  return {name, "reduction", summary,
          {T{"x", false, kT, "[*]"}, T{"y", true, out_role, "x's shape with dim 'axis' = 1"}},
          {AttrSpec{"axis", false, attr::kAxis, -1, "axis to reduce; negative counts from the end"}},
          kFloat, check_reduction, false};
}
const AttrSpec kGeluAttr{"approximate", false, attr::kGeluApproximate, 0,
                         "0: x/2 (1 + erf(x / sqrt 2)); 1: tanh form"};
const AttrSpec kSoftmaxAxis{"axis", false, attr::kAxis, -1, "softmax axis"};

std::vector<OpSpec> build_contract() {
  std::vector<OpSpec> ops;
  ops.push_back(
      {"gemm", "gemm",
       "y = alpha * op(a) @ op(b) + beta * c, op = transpose when trans_*; rank 3 is a batch of "
       "independent products. c is not read when beta == 0. y may be c. f16/bf16 accumulate in "
       "f32 and round once, unless math_mode allows reduced-precision reduction.",
       {T{"a", false, kT, "[B?, M, K] ([B?, K, M] if trans_a)"},
        T{"b", false, kT, "[B?, K, N] ([B?, N, K] if trans_b)"}, T{"c", false, kT, "[B?, M, N]"},
        T{"y", true, kT, "[B?, M, N]"}},
       {AttrSpec{"trans_a", false, attr::kTransA, 0, "0 or 1"},
        AttrSpec{"trans_b", false, attr::kTransB, 0, "0 or 1"},
        AttrSpec{"math_mode", false, attr::kMathMode, 0,
                 "0 strict fp32, 1 TF32 allowed, 2 reduced-precision reduction allowed"},
        AttrSpec{"alpha", true, attr::kAlpha, 1.0, "scale of the product"},
        AttrSpec{"beta", true, attr::kBeta, 0.0, "scale of c"}},
       kFloat, check_gemm, true});
  ops.push_back(binary("add", "out = a + b"));
  ops.push_back(binary("sub", "out = a - b"));
  ops.push_back(binary("mul", "out = a * b"));
  ops.push_back(binary("div", "out = a / b (IEEE: x/0 = ±Inf, 0/0 = NaN)"));
  ops.push_back(unary("neg", "y = -x"));
  ops.push_back(unary("exp", "y = e^x"));
  ops.push_back(unary("log", "y = ln x (x < 0: NaN, 0: -Inf)"));
  ops.push_back(unary("sqrt", "y = sqrt x"));
  ops.push_back(unary("rsqrt", "y = 1 / sqrt x"));
  ops.push_back(unary("tanh", "y = tanh x"));
  ops.push_back(unary("sigmoid", "y = 1 / (1 + e^-x)"));
  ops.push_back(unary("relu", "y = max(x, 0); relu(NaN) = NaN"));
  {
    auto g = unary("gelu",
                   "y = gelu(x), erf or tanh form (attribute approximate); at x = ±Inf the limit "
                   "(-0 or +Inf)");
    g.attrs = {kGeluAttr};
    g.check = check_gelu;
    ops.push_back(g);
  }
  ops.push_back(unary("silu", "y = x * sigmoid(x); at x = ±Inf the limit (-0 or +Inf)"));
  ops.push_back(unary_backward("relu_backward",
                                   "dx = dy where x > 0, else 0 (a select: Inf/NaN dy with x <= 0 "
                                   "gives 0)"));
  {
    auto g = unary_backward("gelu_backward", "dx = dy * gelu'(x), erf or tanh form");
    g.attrs = {kGeluAttr};
    g.check = check_gelu_backward;
    ops.push_back(g);
  }
  ops.push_back(unary_backward("silu_backward", "dx = dy * s(x) (1 + x (1 - s(x))), s = sigmoid"));
  ops.push_back(unary_backward("sigmoid_backward", "dx = dy * s(x) (1 - s(x))"));
  ops.push_back(unary_backward("tanh_backward", "dx = dy * (1 - tanh(x)^2)"));
  ops.push_back({"cast", "elementwise",
                 "y = x converted to y's dtype with round-to-nearest-even; overflow gives Inf "
                 "(f8e4m3: NaN); NaN stays NaN",
                 {T{"x", false, kAnyFloat, "[*]"}, T{"y", true, kAnyFloat, "[*]"}},
                 {},
                 {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kF8E4M3,
                  DType::kF8E5M2},
                 check_unary, false});
  ops.push_back({"fill", "elementwise", "out[...] = value rounded to out's dtype",
                 {T{"out", true, kT, "[*]"}},
                 {AttrSpec{"value", true, attr::kFillValue, 0.0, "the value"}},
                 kFloat, check_fill, false});
  ops.push_back({"copy", "elementwise", "y = x element by element; any strides on either side",
                 {T{"x", false, kT, "[*]"}, T{"y", true, kT, "[*]"}}, {}, kFloat, check_unary,
                 false});
  ops.push_back(reduction("reduce_sum", "y = sum of x along axis (f32 accumulation for f16/bf16)",
                          kT));
  ops.push_back(reduction("reduce_mean", "y = sum of x along axis / its length", kT));
  ops.push_back(reduction("reduce_max", "y = max of x along axis; NaN if any NaN", kT));
  ops.push_back(reduction("argmax", "y = index of the first maximum along axis (NaN counts as "
                                    "maximum); i64 or i32",
                          kIndex));
  ops.push_back(reduction("l2_norm", "y = sqrt(sum of x^2 along axis)", kT));
  ops.push_back({"softmax", "softmax", "y = exp(x - max) / sum exp(x - max) along axis",
                 {T{"x", false, kT, "[*]"}, T{"y", true, kT, "[*]"}}, {kSoftmaxAxis}, kFloat,
                 check_softmax, false});
  ops.push_back({"log_softmax", "softmax", "y = x - max - log sum exp(x - max) along axis",
                 {T{"x", false, kT, "[*]"}, T{"y", true, kT, "[*]"}}, {kSoftmaxAxis}, kFloat,
                 check_softmax, false});
  ops.push_back({"softmax_backward", "softmax", "dx = y * (dy - sum(dy * y)) along axis",
                 {T{"dy", false, kT, "[*]"}, T{"y", false, kT, "[*]"}, T{"dx", true, kT, "[*]"}},
                 {kSoftmaxAxis}, kFloat, check_softmax_backward, false});
  ops.push_back({"log_softmax_backward", "softmax", "dx = dy - exp(y) * sum(dy) along axis",
                 {T{"dy", false, kT, "[*]"}, T{"y", false, kT, "[*]"}, T{"dx", true, kT, "[*]"}},
                 {kSoftmaxAxis}, kFloat, check_softmax_backward, false});
  const AttrSpec eps{"eps", true, attr::kEps, 1e-5, "added to the variance"};
  ops.push_back({"layernorm", "norm",
                 "per row: mean, rstd = 1/sqrt(var + eps) (biased variance), y = (x - mean) * "
                 "rstd * gamma + beta; mean and rstd saved for backward",
                 {T{"x", false, kT, "[N, D]"}, T{"gamma", false, kT, "[D]"},
                  T{"beta", false, kT, "[D]"}, T{"y", true, kT, "[N, D]"},
                  T{"mean", true, kF32, "[N]"}, T{"rstd", true, kF32, "[N]"}},
                 {eps}, kFloat, check_layernorm, false});
  ops.push_back({"layernorm_backward", "norm", "gradients of layernorm w.r.t. x, gamma, beta",
                 {T{"dy", false, kT, "[N, D]"}, T{"x", false, kT, "[N, D]"},
                  T{"gamma", false, kT, "[D]"}, T{"mean", false, kF32, "[N]"},
                  T{"rstd", false, kF32, "[N]"}, T{"dx", true, kT, "[N, D]"},
                  T{"dgamma", true, kT, "[D]"}, T{"dbeta", true, kT, "[D]"}},
                 {}, kFloat, check_layernorm_backward, false});
  ops.push_back({"rmsnorm", "norm",
                 "per row: rstd = 1/sqrt(mean(x^2) + eps), y = x * rstd * gamma",
                 {T{"x", false, kT, "[N, D]"}, T{"gamma", false, kT, "[D]"},
                  T{"y", true, kT, "[N, D]"}, T{"rstd", true, kF32, "[N]"}},
                 {eps}, kFloat, check_rmsnorm, false});
  ops.push_back({"rmsnorm_backward", "norm", "gradients of rmsnorm w.r.t. x and gamma",
                 {T{"dy", false, kT, "[N, D]"}, T{"x", false, kT, "[N, D]"},
                  T{"gamma", false, kT, "[D]"}, T{"rstd", false, kF32, "[N]"},
                  T{"dx", true, kT, "[N, D]"}, T{"dgamma", true, kT, "[D]"}},
                 {}, kFloat, check_rmsnorm_backward, false});
  ops.push_back({"cross_entropy", "loss",
                 "loss[n] = logsumexp(logits[n, :]) - logits[n, targets[n]]; a target outside "
                 "[0, C) is an error",
                 {T{"logits", false, kT, "[N, C]"}, T{"targets", false, kIndex, "[N]"},
                  T{"loss", true, kF32, "[N]"}},
                 {}, kFloat, check_cross_entropy, false});
  ops.push_back({"cross_entropy_backward", "loss",
                 "dlogits[n, c] = dloss[n] * (softmax(logits[n])[c] - (c == targets[n]))",
                 {T{"logits", false, kT, "[N, C]"}, T{"targets", false, kIndex, "[N]"},
                  T{"dloss", false, kF32, "[N]"}, T{"dlogits", true, kT, "[N, C]"}},
                 {}, kFloat, check_cross_entropy_backward, false});
  ops.push_back({"embedding", "embedding", "out[n, :] = weight[ids[n], :]; an id outside [0, V) "
                                           "is an error",
                 {T{"ids", false, kIndex, "[N]"}, T{"weight", false, kT, "[V, D]"},
                  T{"out", true, kT, "[N, D]"}},
                 {}, kFloat, check_embedding, false});
  ops.push_back({"embedding_backward", "embedding",
                 "dweight = 0, then dweight[ids[n], :] += dout[n, :] in order of n (f32 "
                 "accumulation, rounded once): deterministic",
                 {T{"ids", false, kIndex, "[N]"}, T{"dout", false, kT, "[N, D]"},
                  T{"dweight", true, kT, "[V, D]"}},
                 {}, kFloat, check_embedding_backward, false});
  ops.push_back({"rotary_embedding", "rotary",
                 "rotate-half RoPE: for i < D/2, y[s,h,i] = x[s,h,i] cos[s,i] - x[s,h,i+D/2] "
                 "sin[s,i]; y[s,h,i+D/2] = x[s,h,i+D/2] cos[s,i] + x[s,h,i] sin[s,i]; inverse = 1 "
                 "negates sin (the backward pass)",
                 {T{"x", false, kT, "[S, H, D]"}, T{"cos", false, kF32, "[S, D/2]"},
                  T{"sin", false, kF32, "[S, D/2]"}, T{"y", true, kT, "[S, H, D]"}},
                 {AttrSpec{"inverse", false, attr::kInverse, 0, "0 forward, 1 inverse rotation"}},
                 kFloat, check_rotary, false});
  const AttrSpec scale{"scale", true, attr::kScale, 0.125, "multiplies q k^T, usually 1/sqrt(D)"};
  const AttrSpec causal{"causal", false, attr::kCausal, 1, "1: query i sees keys j <= i"};
  ops.push_back({"attention", "attention",
                 "o = softmax(scale q k^T, causal mask) v per batch and head; lse = log sum exp "
                 "of the masked scores (f32), saved for backward",
                 {T{"q", false, kT, "[B, H, S, D]"}, T{"k", false, kT, "[B, H, S, D]"},
                  T{"v", false, kT, "[B, H, S, D]"}, T{"o", true, kT, "[B, H, S, D]"},
                  T{"lse", true, kF32, "[B, H, S]"}},
                 {scale, causal}, kFloat, check_attention, false});
  ops.push_back({"attention_backward", "attention", "gradients of attention w.r.t. q, k, v",
                 {T{"do", false, kT, "[B, H, S, D]"}, T{"q", false, kT, "[B, H, S, D]"},
                  T{"k", false, kT, "[B, H, S, D]"}, T{"v", false, kT, "[B, H, S, D]"},
                  T{"o", false, kT, "[B, H, S, D]"}, T{"lse", false, kF32, "[B, H, S]"},
                  T{"dq", true, kT, "[B, H, S, D]"}, T{"dk", true, kT, "[B, H, S, D]"},
                  T{"dv", true, kT, "[B, H, S, D]"}},
                 {scale, causal}, kFloat, check_attention_backward, false});
  ops.push_back(
      {"adamw", "optimizer",
       "t = step; m' = b1 m + (1-b1) g; v' = b2 v + (1-b2) g^2; p' = p - lr (wd p + (m'/(1-b1^t)) "
       "/ (sqrt(v'/(1-b2^t)) + eps)), in f32 with g converted to f32; outputs may be the inputs",
       {T{"param", false, kF32, "[N]"}, T{"grad", false, kT, "[N]"}, T{"m", false, kF32, "[N]"},
        T{"v", false, kF32, "[N]"}, T{"param_out", true, kF32, "[N]"},
        T{"m_out", true, kF32, "[N]"}, T{"v_out", true, kF32, "[N]"}},
       {AttrSpec{"lr", true, attr::kLr, 1e-3, "learning rate"},
        AttrSpec{"beta1", true, attr::kBeta1, 0.9, ""},
        AttrSpec{"beta2", true, attr::kBeta2, 0.999, ""},
        AttrSpec{"eps", true, attr::kAdamEps, 1e-8, ""},
        AttrSpec{"weight_decay", true, attr::kWeightDecay, 0.01, "decoupled"},
        AttrSpec{"step", false, attr::kStep, 1, "1-based step number"}},
       kFloat, check_adamw, true});
  return ops;
}
// clang-format on

// Whether a family accepts arbitrary strides; the others need row-major.
bool accepts_strides(const OpSpec& op) {
  std::string_view f = op.family;
  return f == "elementwise" || f == "reduction";
}

int64_t num_elements(const polychip_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

// An empty view has no layout to get wrong: PyTorch gives [2, 0] the
// strides (1, 1), NumPy and polychip (0, 1).
bool is_row_major(const polychip_tensor& t) {
  if (num_elements(t) == 0) return true;
  int64_t expect = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

// [begin, end) bytes touched by a view; empty views touch nothing.
std::pair<uint64_t, uint64_t> byte_span(const polychip_tensor& t) {
  if (num_elements(t) == 0) return {0, 0};
  uint64_t last = 0;
  for (int d = 0; d < t.rank; ++d) last += static_cast<uint64_t>((t.shape[d] - 1) * t.strides[d]);
  size_t es = dtype_size(static_cast<DType>(t.dtype));
  return {t.byte_offset, t.byte_offset + (last + 1) * es};
}

bool exact_alias(const polychip_tensor& a, const polychip_tensor& b) {
  return a.memory == b.memory && a.byte_offset == b.byte_offset && a.dtype == b.dtype &&
         same_shape(a, b) && std::equal(a.strides, a.strides + a.rank, b.strides);
}

bool has_self_overlap(const polychip_tensor& t) {
  if (num_elements(t) == 0) return false;  // nothing is written
  for (int d = 0; d < t.rank; ++d)
    if (t.shape[d] > 1 && t.strides[d] == 0) return true;
  return false;
}

}  // namespace

const std::vector<OpSpec>& op_contract() {
  static const std::vector<OpSpec> ops = build_contract();
  return ops;
}

const OpSpec* find_op(std::string_view name) {
  static const auto index = [] {
    std::unordered_map<std::string_view, const OpSpec*> m;
    for (const auto& op : op_contract()) m.emplace(op.name, &op);
    return m;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

polychip_op_attrs default_attrs(const OpSpec& op) {
  polychip_op_attrs a{};
  a.struct_size = sizeof a;
  for (const auto& s : op.attrs) {
    if (s.is_float)
      a.floats[s.slot] = s.default_value;
    else
      a.ints[s.slot] = static_cast<int64_t>(s.default_value);
  }
  return a;
}

std::string validate_call(const OpSpec& op, const OpCall& call) {
  if (call.tensors.size() != op.tensors.size())
    return fmt::format("{} takes {} tensors, got {}", op.name, op.tensors.size(),
                       call.tensors.size());
  if (!call.attrs) return fmt::format("{}: attributes are missing", op.name);
  // The compute dtype T: the first tensor with role kT.
  polychip_dtype t_dtype = POLYCHIP_DTYPE_ANY;
  for (size_t k = 0; k < op.tensors.size(); ++k)
    if (op.tensors[k].dtype_role == kT) {
      t_dtype = call.tensors[k].dtype;
      break;
    }
  for (size_t k = 0; k < op.tensors.size(); ++k) {
    const auto& spec = op.tensors[k];
    const auto& t = call.tensors[k];
    if (t.rank < 0 || t.rank > POLYCHIP_MAX_RANK)
      return fmt::format("'{}' has rank {}; polychip supports 0..{}", spec.name, t.rank,
                         POLYCHIP_MAX_RANK);
    if (!is_valid_dtype(t.dtype))
      return fmt::format("'{}' has unknown dtype code {}", spec.name, t.dtype);
    DType dt = static_cast<DType>(t.dtype);
    bool in_list = std::find(op.dtypes.begin(), op.dtypes.end(), dt) != op.dtypes.end();
    switch (spec.dtype_role) {
      case kT:
        if (!in_list)
          return fmt::format("'{}' has dtype {}, which {} does not support", spec.name,
                             dtype_name(dt), op.name);
        if (t.dtype != t_dtype)
          return fmt::format("'{}' has dtype {} but the op computes in {}", spec.name,
                             dtype_name(dt), dtype_name(static_cast<DType>(t_dtype)));
        break;
      case kF32:
        if (dt != DType::kF32)
          return fmt::format("'{}' must be f32, is {}", spec.name, dtype_name(dt));
        break;
      case kIndex:
        if (dt != DType::kI64 && dt != DType::kI32)
          return fmt::format("'{}' must be i64 or i32, is {}", spec.name, dtype_name(dt));
        break;
      case kAnyFloat:
        if (!in_list)
          return fmt::format("'{}' has dtype {}, which {} does not support", spec.name,
                             dtype_name(dt), op.name);
        break;
    }
    for (int d = 0; d < t.rank; ++d) {
      if (t.shape[d] < 0)
        return fmt::format("'{}' has negative size {} in dimension {}", spec.name, t.shape[d], d);
      if (t.strides[d] < 0)
        return fmt::format("'{}' has negative stride {} in dimension {}", spec.name, t.strides[d],
                           d);
    }
    if (num_elements(t) > 0 && t.memory == nullptr)
      return fmt::format("'{}' has no memory", spec.name);
    if (!accepts_strides(op) && !is_row_major(t))
      return fmt::format("'{}' must be contiguous (row-major) for {}", spec.name, op.name);
    if (spec.is_output && has_self_overlap(t))
      return fmt::format("output '{}' has a zero stride: its elements overlap", spec.name);
  }
  // Outputs may not overlap anything else, except an exact in-place alias
  // where the op allows it.
  for (size_t o = 0; o < op.tensors.size(); ++o) {
    if (!op.tensors[o].is_output) continue;
    auto [ob, oe] = byte_span(call.tensors[o]);
    if (ob == oe) continue;
    for (size_t k = 0; k < op.tensors.size(); ++k) {
      if (k == o || call.tensors[k].memory != call.tensors[o].memory) continue;
      auto [kb, ke] = byte_span(call.tensors[k]);
      if (kb >= oe || ob >= ke) continue;
      bool both_outputs = op.tensors[k].is_output;
      if (!both_outputs && op.outputs_may_alias_inputs &&
          exact_alias(call.tensors[k], call.tensors[o]))
        continue;
      if (both_outputs && k < o) continue;  // reported once
      return fmt::format("output '{}' overlaps {} '{}'", op.tensors[o].name,
                         both_outputs ? "output" : "input", op.tensors[k].name);
    }
  }
  return op.check(call);
}

}  // namespace polychip
