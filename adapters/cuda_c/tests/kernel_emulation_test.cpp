// The CUDA-C kernels compiled for the host and run with one thread per
// block (PC_HOST_EMULATION, see kernels/portability.h), driven by the real
// op planner: checks that every launch packs exactly the argument sizes the
// kernel's signature has, and that the kernels compute what the op contract
// says, against references written here in double. Parallel behaviour
// (block reductions with 256 threads, gemm tiles) can only run on a GPU.
#define PC_HOST_EMULATION 1
#include "../kernels/all_kernels.cu"

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_common/op_planner.hpp"
#include "polychip/dtype.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::gpu {
namespace {

// ---- calling a kernel with the planner's packed arguments --------------------

using HostLauncher = std::function<void(KernelLaunch&)>;

template <typename... Args, size_t... I>
void call_unpacked(void (*fn)(Args...), void** p, std::index_sequence<I...>) {
  fn(*static_cast<std::remove_cv_t<Args>*>(p[I])...);
}

template <typename... Args>
HostLauncher launcher(void (*fn)(Args...)) {
  return [fn](KernelLaunch& l) {
    const size_t expected[] = {sizeof(Args)...};
    ASSERT_EQ(l.params.count(), sizeof...(Args)) << l.symbol << ": argument count";
    for (size_t k = 0; k < sizeof...(Args); ++k)
      ASSERT_EQ(l.params.sizes()[k], expected[k]) << l.symbol << ": size of argument " << k;
    call_unpacked(fn, l.params.pointers(), std::index_sequence_for<Args...>{});
  };
}

const std::map<std::string, HostLauncher>& launchers() {
  static const std::map<std::string, HostLauncher> table = [] {
    std::map<std::string, HostLauncher> t;
// clang-format off
#define PC_ADD(name) t[#name] = launcher(&name);
#define PC_ADD_ALL(suffix, T) \
  PC_ADD(pc_unary_##suffix) \
  PC_ADD(pc_unary_backward_##suffix) \
  PC_ADD(pc_binary_##suffix) \
  PC_ADD(pc_fill_##suffix) \
  PC_ADD(pc_adamw_##suffix) \
  PC_ADD(pc_reduce_##suffix) \
  PC_ADD(pc_argmax_##suffix) \
  PC_ADD(pc_softmax_##suffix) \
  PC_ADD(pc_softmax_backward_##suffix) \
  PC_ADD(pc_norm_forward_##suffix) \
  PC_ADD(pc_norm_backward_dx_##suffix) \
  PC_ADD(pc_norm_backward_params_##suffix) \
  PC_ADD(pc_cross_entropy_##suffix) \
  PC_ADD(pc_cross_entropy_backward_##suffix) \
  PC_ADD(pc_embedding_##suffix) \
  PC_ADD(pc_embedding_backward_##suffix) \
  PC_ADD(pc_rotary_##suffix) \
  PC_ADD(pc_attention_##suffix) \
  PC_ADD(pc_attention_backward_dq_##suffix) \
  PC_ADD(pc_attention_backward_dkdv_##suffix) \
  PC_ADD(pc_gemm_##suffix)
    PC_FOR_EACH_FLOAT(PC_ADD_ALL)
    PC_ADD(pc_cast)
#undef PC_ADD_ALL
#undef PC_ADD
    // clang-format on
    return t;
  }();
  return table;
}

// ---- host tensors ------------------------------------------------------------

struct HostTensor {
  polychip_tensor t{};
  std::vector<unsigned char> bytes;

  HostTensor(polychip_dtype dtype, std::vector<int64_t> shape,
             const std::vector<double>& values = {}) {
    t.struct_size = sizeof t;
    t.dtype = dtype;
    t.rank = static_cast<int32_t>(shape.size());
    int64_t stride = 1;
    for (int d = t.rank - 1; d >= 0; --d) {
      t.shape[d] = shape[d];
      t.strides[d] = stride;
      stride *= shape[d];
    }
    bytes.assign(static_cast<size_t>(stride) * dtype_size(static_cast<DType>(dtype)), 0);
    for (size_t k = 0; k < values.size(); ++k) set(k, values[k]);
  }
  size_t size() const { return bytes.size() / dtype_size(static_cast<DType>(t.dtype)); }
  void set(size_t k, double v) {
    store_from_f64(v, bytes.data() + k * dtype_size(static_cast<DType>(t.dtype)),
                   static_cast<DType>(t.dtype));
  }
  double at(size_t k) const {
    return load_as_f64(bytes.data() + k * dtype_size(static_cast<DType>(t.dtype)),
                       static_cast<DType>(t.dtype));
  }
  std::vector<double> values() const {
    std::vector<double> v(size());
    for (size_t k = 0; k < v.size(); ++k) v[k] = at(k);
    return v;
  }
};

std::vector<double> random_values(size_t n, double lo, double hi, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

struct Run {
  polychip_status status;
  std::string message;
  uint64_t error_word;
};

// Plans the op with the real planner and runs every launch on the host.
Run run(const char* op, std::vector<HostTensor*> tensors, polychip_op_attrs attrs) {
  std::vector<polychip_tensor> ts;
  std::vector<uint64_t> addresses;
  for (auto* h : tensors) {
    ts.push_back(h->t);
    addresses.push_back(reinterpret_cast<uint64_t>(h->bytes.data()));
  }
  uint64_t error_word = PC_ERROR_NONE;
  OpRequest r;
  r.entry = find_kernel(op);
  r.tensors = ts;
  r.attrs = &attrs;
  r.addresses = addresses;
  r.error_word = reinterpret_cast<uint64_t>(&error_word);
  std::vector<unsigned char> scratch(scratch_bytes_needed(*r.entry, ts) + 16);
  r.scratch = reinterpret_cast<uint64_t>(scratch.data());
  r.scratch_bytes = scratch.size();
  PlanResult p = plan_op(r);
  if (p.status != POLYCHIP_OK) return {p.status, p.message, error_word};
  for (auto& l : p.plan.launches) {
    auto it = launchers().find(l->symbol);
    EXPECT_NE(it, launchers().end()) << l->symbol;
    if (it == launchers().end() || l->geometry.blocks() == 0) continue;
    it->second(*l);
  }
  return {POLYCHIP_OK, "", error_word};
}

polychip_op_attrs attrs_of(const char* op) { return default_attrs(*find_op(op)); }

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol,
                     const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    if (std::isnan(want[k])) {
      EXPECT_TRUE(std::isnan(got[k])) << what << "[" << k << "] = " << got[k];
    } else if (std::isinf(want[k])) {
      EXPECT_EQ(got[k], want[k]) << what << "[" << k << "]";
    } else {
      EXPECT_NEAR(got[k], want[k], tol * (1 + std::fabs(want[k]))) << what << "[" << k << "]";
    }
  }
}

constexpr auto F64 = POLYCHIP_DTYPE_F64;
constexpr auto F32 = POLYCHIP_DTYPE_F32;
constexpr auto BF16 = POLYCHIP_DTYPE_BF16;

// ---- elementwise ---------------------------------------------------------------

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

TEST(KernelEmulation, UnaryOpsMatchTheirDefinitions) {
  const std::vector<double> x = {-3.5, -1.0, -0.25, 0.0, 0.5, 2.0, 7.0, -HUGE_VAL, HUGE_VAL};
  const std::map<std::string, std::function<double(double)>> ops = {
      {"neg", [](double v) { return -v; }},
      {"exp", [](double v) { return std::exp(v); }},
      {"tanh", [](double v) { return std::tanh(v); }},
      {"sigmoid", sigmoid},
      {"relu", [](double v) { return v > 0 ? v : 0.0; }},
      {"gelu",
       [](double v) {
         return std::isinf(v) ? (v > 0 ? v : -0.0) : 0.5 * v * std::erfc(-v / std::sqrt(2.0));
       }},
      {"silu", [](double v) { return std::isinf(v) ? (v > 0 ? v : -0.0) : v * sigmoid(v); }},
      {"copy", [](double v) { return v; }},
  };
  for (const auto& [name, f] : ops) {
    HostTensor in(F64, {static_cast<int64_t>(x.size())}, x),
        out(F64, {static_cast<int64_t>(x.size())});
    ASSERT_EQ(run(name.c_str(), {&in, &out}, attrs_of(name.c_str())).status, POLYCHIP_OK);
    std::vector<double> want;
    for (double v : x) want.push_back(f(v));
    expect_near_all(out.values(), want, 1e-14, name.c_str());
  }
  HostTensor in(F64, {3}, {4.0, 0.25, 2.0}), out(F64, {3});
  ASSERT_EQ(run("rsqrt", {&in, &out}, attrs_of("rsqrt")).status, POLYCHIP_OK);
  expect_near_all(out.values(), {0.5, 2.0, 1 / std::sqrt(2.0)}, 1e-15, "rsqrt");
}

TEST(KernelEmulation, BackwardOpsMatchDerivatives) {
  const std::vector<double> x = {-2.0, -0.5, 0.3, 1.5, -HUGE_VAL, HUGE_VAL};
  const std::vector<double> dy = {1.0, 2.0, -1.0, 0.5, 3.0, 3.0};
  struct Case {
    const char* op;
    int approximate;
    std::function<double(double)> d;
  };
  const double h = 1e-6;
  auto numeric = [h](std::function<double(double)> f) {
    return [f, h](double v) {
      if (std::isinf(v)) return v > 0 ? 1.0 : 0.0;
      return (f(v + h) - f(v - h)) / (2 * h);
    };
  };
  auto gelu_tanh = [](double v) {
    return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  };
  const std::vector<Case> cases = {
      {"gelu_backward", 0,
       numeric([](double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); })},
      {"gelu_backward", 1, numeric(gelu_tanh)},
      {"silu_backward", 0, numeric([](double v) { return v * sigmoid(v); })},
  };
  for (const auto& c : cases) {
    HostTensor g(F64, {6}, dy), in(F64, {6}, x), out(F64, {6});
    auto attrs = attrs_of(c.op);
    attrs.ints[attr::kGeluApproximate] = c.approximate;
    ASSERT_EQ(run(c.op, {&g, &in, &out}, attrs).status, POLYCHIP_OK);
    std::vector<double> want;
    for (size_t k = 0; k < x.size(); ++k) want.push_back(dy[k] * c.d(x[k]));
    expect_near_all(out.values(), want, 1e-7, c.op);
  }
  // relu_backward selects: dy = Inf where x <= 0 still gives 0.
  HostTensor g(F64, {3}, {HUGE_VAL, 2.0, 5.0}), in(F64, {3}, {-1.0, 1.0, 0.0}), out(F64, {3});
  ASSERT_EQ(run("relu_backward", {&g, &in, &out}, attrs_of("relu_backward")).status, POLYCHIP_OK);
  expect_near_all(out.values(), {0.0, 2.0, 0.0}, 0, "relu_backward");
}

TEST(KernelEmulation, BinaryHonoursStridesAndBroadcast) {
  // out[i][j] = a^T[i][j] + b[j]: a is a transposed view, b broadcast (stride 0).
  HostTensor a(F32, {3, 2}, {1, 2, 3, 4, 5, 6});  // stored [3, 2], viewed [2, 3]
  a.t.shape[0] = 2, a.t.shape[1] = 3, a.t.strides[0] = 1, a.t.strides[1] = 2;
  HostTensor b(F32, {3}, {10, 20, 30});
  b.t.rank = 2, b.t.shape[0] = 2, b.t.shape[1] = 3, b.t.strides[0] = 0, b.t.strides[1] = 1;
  HostTensor out(F32, {2, 3});
  ASSERT_EQ(run("sub", {&a, &b, &out}, attrs_of("sub")).status, POLYCHIP_OK);
  expect_near_all(out.values(), {1 - 10, 3 - 20, 5 - 30, 2 - 10, 4 - 20, 6 - 30}, 0, "sub");
}

TEST(KernelEmulation, CastAndFillRoundOnceToTheTarget) {
  const std::vector<double> x = random_values(200, -600, 600, 3);
  HostTensor in(F64, {200}, x), out(POLYCHIP_DTYPE_F8E4M3, {200});
  ASSERT_EQ(run("cast", {&in, &out}, attrs_of("cast")).status, POLYCHIP_OK);
  for (size_t k = 0; k < x.size(); ++k) ASSERT_EQ(out.bytes[k], f64_to_f8e4m3_bits(x[k])) << x[k];
  HostTensor f(BF16, {5});
  auto attrs = attrs_of("fill");
  attrs.floats[attr::kFillValue] = 1.00390625 + 1e-9;  // just above a bf16 tie
  ASSERT_EQ(run("fill", {&f}, attrs).status, POLYCHIP_OK);
  for (size_t k = 0; k < 5; ++k)
    EXPECT_EQ(f.at(k), bf16_bits_to_f64(f64_to_bf16_bits(attrs.floats[0])));
}

TEST(KernelEmulation, AdamwFollowsTheFormula) {
  const size_t n = 7;
  auto p = random_values(n, -1, 1, 4), g = random_values(n, -1, 1, 5);
  auto m = random_values(n, -0.1, 0.1, 6), v = random_values(n, 0, 0.1, 7);
  HostTensor tp(F32, {7}, p), tg(F32, {7}, g), tm(F32, {7}, m), tv(F32, {7}, v);
  HostTensor po(F32, {7}), mo(F32, {7}), vo(F32, {7});
  auto attrs = attrs_of("adamw");
  attrs.ints[attr::kStep] = 3;
  ASSERT_EQ(run("adamw", {&tp, &tg, &tm, &tv, &po, &mo, &vo}, attrs).status, POLYCHIP_OK);
  const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
  for (size_t k = 0; k < n; ++k) {
    const double pk = tp.at(k), gk = tg.at(k);
    const double m1 = b1 * tm.at(k) + (1 - b1) * gk, v1 = b2 * tv.at(k) + (1 - b2) * gk * gk;
    const double want = pk - lr * (wd * pk + (m1 / (1 - std::pow(b1, 3))) /
                                                 (std::sqrt(v1 / (1 - std::pow(b2, 3))) + eps));
    EXPECT_NEAR(po.at(k), want, 1e-6);
    EXPECT_NEAR(mo.at(k), m1, 1e-7);
    EXPECT_NEAR(vo.at(k), v1, 1e-7);
  }
}

// ---- reductions and softmax -----------------------------------------------------

TEST(KernelEmulation, ReductionsAlongAStridedAxis) {
  const auto x = random_values(60, -2, 2, 8);
  HostTensor in(F64, {3, 5, 4}, x);
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "l2_norm"}) {
    HostTensor out(F64, {3, 1, 4});
    auto attrs = attrs_of(op);
    attrs.ints[attr::kAxis] = 1;
    ASSERT_EQ(run(op, {&in, &out}, attrs).status, POLYCHIP_OK);
    std::vector<double> want;
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 4; ++k) {
        double s = 0, mx = -HUGE_VAL, sq = 0;
        for (int j = 0; j < 5; ++j) {
          const double v = x[(i * 5 + j) * 4 + k];
          s += v, sq += v * v, mx = std::max(mx, v);
        }
        const std::string o = op;
        want.push_back(o == "reduce_sum"    ? s
                       : o == "reduce_mean" ? s / 5
                       : o == "reduce_max"  ? mx
                                            : std::sqrt(sq));
      }
    expect_near_all(out.values(), want, 1e-14, op);
  }
}

TEST(KernelEmulation, ArgmaxTakesTheFirstMaximumAndNaN) {
  HostTensor in(F32, {3, 4},
                {1, 5, 5, 2, /**/ 0, std::nan(""), 9, std::nan(""), /**/ -1, -1, -3, -2});
  HostTensor out(POLYCHIP_DTYPE_I32, {3, 1});
  ASSERT_EQ(run("argmax", {&in, &out}, attrs_of("argmax")).status, POLYCHIP_OK);
  expect_near_all(out.values(), {1, 1, 0}, 0, "argmax");
  HostTensor out64(POLYCHIP_DTYPE_I64, {3, 1});
  ASSERT_EQ(run("argmax", {&in, &out64}, attrs_of("argmax")).status, POLYCHIP_OK);
  expect_near_all(out64.values(), {1, 1, 0}, 0, "argmax i64");
}

TEST(KernelEmulation, SoftmaxFamilyAlongTheMiddleAxis) {
  const auto x = random_values(30, -30, 30, 9);
  const auto dy = random_values(30, -1, 1, 10);
  auto idx = [](int o, int l, int i) { return (o * 5 + l) * 3 + i; };
  std::vector<double> sm(30), lsm(30), dsm(30), dlsm(30);
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 3; ++i) {
      double mx = -HUGE_VAL, s = 0, gy = 0, g = 0;
      for (int l = 0; l < 5; ++l) mx = std::max(mx, x[idx(o, l, i)]);
      for (int l = 0; l < 5; ++l) s += std::exp(x[idx(o, l, i)] - mx);
      for (int l = 0; l < 5; ++l) {
        sm[idx(o, l, i)] = std::exp(x[idx(o, l, i)] - mx) / s;
        lsm[idx(o, l, i)] = x[idx(o, l, i)] - mx - std::log(s);
        gy += dy[idx(o, l, i)] * sm[idx(o, l, i)];
        g += dy[idx(o, l, i)];
      }
      for (int l = 0; l < 5; ++l) {
        dsm[idx(o, l, i)] = sm[idx(o, l, i)] * (dy[idx(o, l, i)] - gy);
        dlsm[idx(o, l, i)] = dy[idx(o, l, i)] - std::exp(lsm[idx(o, l, i)]) * g;
      }
    }
  auto attrs = attrs_of("softmax");
  attrs.ints[attr::kAxis] = 1;
  HostTensor in(F64, {2, 5, 3}, x), g(F64, {2, 5, 3}, dy), y(F64, {2, 5, 3}), ly(F64, {2, 5, 3});
  HostTensor dx(F64, {2, 5, 3}), ldx(F64, {2, 5, 3});
  ASSERT_EQ(run("softmax", {&in, &y}, attrs).status, POLYCHIP_OK);
  ASSERT_EQ(run("log_softmax", {&in, &ly}, attrs).status, POLYCHIP_OK);
  ASSERT_EQ(run("softmax_backward", {&g, &y, &dx}, attrs).status, POLYCHIP_OK);
  ASSERT_EQ(run("log_softmax_backward", {&g, &ly, &ldx}, attrs).status, POLYCHIP_OK);
  expect_near_all(y.values(), sm, 1e-14, "softmax");
  expect_near_all(ly.values(), lsm, 1e-14, "log_softmax");
  expect_near_all(dx.values(), dsm, 1e-14, "softmax_backward");
  expect_near_all(ldx.values(), dlsm, 1e-14, "log_softmax_backward");
}

// ---- norms ------------------------------------------------------------------------

TEST(KernelEmulation, LayernormAndRmsnormForwardAndBackward) {
  const int n = 3, d = 6;
  const auto x = random_values(n * d, -2, 2, 11), dy = random_values(n * d, -1, 1, 12);
  const auto gamma = random_values(d, 0.5, 1.5, 13), beta = random_values(d, -0.5, 0.5, 14);
  const double eps = 1e-5;
  for (bool rms : {false, true}) {
    std::vector<double> y(n * d), mean(n), rstd(n), dx(n * d), dgamma(d, 0), dbeta(d, 0);
    for (int r = 0; r < n; ++r) {
      double m = 0, var = 0;
      if (!rms) {
        for (int j = 0; j < d; ++j) m += x[r * d + j];
        m /= d;
      }
      for (int j = 0; j < d; ++j) var += (x[r * d + j] - m) * (x[r * d + j] - m);
      const double rs = 1 / std::sqrt(var / d + eps);
      mean[r] = m, rstd[r] = rs;
      double sg = 0, sgx = 0;
      for (int j = 0; j < d; ++j) {
        const double xh = (x[r * d + j] - m) * rs, g = dy[r * d + j] * gamma[j];
        y[r * d + j] = xh * gamma[j] + (rms ? 0 : beta[j]);
        sg += g, sgx += g * xh;
        dgamma[j] += dy[r * d + j] * xh;
        dbeta[j] += dy[r * d + j];
      }
      for (int j = 0; j < d; ++j) {
        const double xh = (x[r * d + j] - m) * rs, g = dy[r * d + j] * gamma[j];
        dx[r * d + j] = rs * (g - (rms ? 0 : sg / d) - xh * sgx / d);
      }
    }
    HostTensor tx(F64, {n, d}, x), tg(F64, {d}, gamma), tb(F64, {d}, beta), ty(F64, {n, d});
    HostTensor tm(F32, {n}), tr(F32, {n}), tdy(F64, {n, d}, dy), tdx(F64, {n, d});
    HostTensor tdg(F64, {d}), tdb(F64, {d});
    if (rms) {
      ASSERT_EQ(run("rmsnorm", {&tx, &tg, &ty, &tr}, attrs_of("rmsnorm")).status, POLYCHIP_OK);
      ASSERT_EQ(
          run("rmsnorm_backward", {&tdy, &tx, &tg, &tr, &tdx, &tdg}, attrs_of("rmsnorm_backward"))
              .status,
          POLYCHIP_OK);
    } else {
      ASSERT_EQ(run("layernorm", {&tx, &tg, &tb, &ty, &tm, &tr}, attrs_of("layernorm")).status,
                POLYCHIP_OK);
      ASSERT_EQ(run("layernorm_backward", {&tdy, &tx, &tg, &tm, &tr, &tdx, &tdg, &tdb},
                    attrs_of("layernorm_backward"))
                    .status,
                POLYCHIP_OK);
      expect_near_all(tm.values(), mean, 1e-7, "mean");
      expect_near_all(tdb.values(), dbeta, 1e-12, "dbeta");
    }
    // mean and rstd are saved in f32: the backward pass inherits that rounding.
    expect_near_all(tr.values(), rstd, 1e-7, "rstd");
    expect_near_all(ty.values(), y, 1e-12, rms ? "rmsnorm y" : "layernorm y");
    expect_near_all(tdx.values(), dx, 1e-6, "dx");
    expect_near_all(tdg.values(), dgamma, 1e-6, "dgamma");
  }
}

// ---- losses, embeddings, rotary ----------------------------------------------------

TEST(KernelEmulation, CrossEntropyAndItsGradient) {
  const int n = 4, c = 5;
  const auto logits = random_values(n * c, -10, 10, 15);
  const std::vector<double> targets = {0, 4, 2, 2}, dloss = {1.0, 0.5, -1.0, 2.0};
  HostTensor tl(F64, {n, c}, logits), tt(POLYCHIP_DTYPE_I64, {n}, targets), loss(F32, {n});
  HostTensor tdl(F32, {n}, dloss), tdx(F64, {n, c});
  ASSERT_EQ(run("cross_entropy", {&tl, &tt, &loss}, attrs_of("cross_entropy")).error_word,
            PC_ERROR_NONE);
  ASSERT_EQ(
      run("cross_entropy_backward", {&tl, &tt, &tdl, &tdx}, attrs_of("cross_entropy_backward"))
          .status,
      POLYCHIP_OK);
  std::vector<double> want_loss, want_dx;
  for (int r = 0; r < n; ++r) {
    double mx = -HUGE_VAL, s = 0;
    for (int k = 0; k < c; ++k) mx = std::max(mx, logits[r * c + k]);
    for (int k = 0; k < c; ++k) s += std::exp(logits[r * c + k] - mx);
    want_loss.push_back(mx + std::log(s) - logits[r * c + static_cast<int>(targets[r])]);
    for (int k = 0; k < c; ++k)
      want_dx.push_back(dloss[r] * (std::exp(logits[r * c + k] - mx) / s - (k == targets[r])));
  }
  expect_near_all(loss.values(), want_loss, 1e-6, "loss");
  expect_near_all(tdx.values(), want_dx, 1e-14, "dlogits");
  // Targets out of range: the first bad row is reported through the error word.
  HostTensor bad(POLYCHIP_DTYPE_I32, {n}, {0, 5, -1, 2});
  EXPECT_EQ(run("cross_entropy", {&tl, &bad, &loss}, attrs_of("cross_entropy")).error_word, 2u);
}

TEST(KernelEmulation, EmbeddingGathersAndScattersInOrder) {
  const int v = 4, d = 3;
  const std::vector<double> ids = {2, 0, 2, 3, 2};
  const auto weight = random_values(v * d, -1, 1, 16);
  const auto dout = random_values(ids.size() * d, -1, 1, 17);
  HostTensor tid(POLYCHIP_DTYPE_I32, {5}, ids), tw(BF16, {v, d}, weight), out(BF16, {5, d});
  ASSERT_EQ(run("embedding", {&tid, &tw, &out}, attrs_of("embedding")).error_word, PC_ERROR_NONE);
  for (int r = 0; r < 5; ++r)
    for (int j = 0; j < d; ++j)
      EXPECT_EQ(out.at(r * d + j), tw.at(static_cast<int>(ids[r]) * d + j));
  HostTensor tdo(BF16, {5, d}, dout), dw(BF16, {v, d});
  ASSERT_EQ(run("embedding_backward", {&tid, &tdo, &dw}, attrs_of("embedding_backward")).error_word,
            PC_ERROR_NONE);
  for (int row = 0; row < v; ++row)
    for (int j = 0; j < d; ++j) {
      float acc = 0;  // f32 accumulation in order of n, rounded once
      for (int r = 0; r < 5; ++r)
        if (ids[r] == row) acc += static_cast<float>(tdo.at(r * d + j));
      EXPECT_EQ(dw.at(row * d + j), bf16_bits_to_f64(f64_to_bf16_bits(acc))) << row << "," << j;
    }
  HostTensor bad(POLYCHIP_DTYPE_I64, {5}, {0, 1, 2, 9, 4});
  EXPECT_EQ(run("embedding", {&bad, &tw, &out}, attrs_of("embedding")).error_word, 4u);
}

TEST(KernelEmulation, RotaryInverseUndoesForward) {
  const int s = 3, h = 2, d = 4;
  const auto x = random_values(s * h * d, -1, 1, 18);
  std::vector<double> cs, sn;
  for (int i = 0; i < s * d / 2; ++i)
    cs.push_back(std::cos(0.3 * i)), sn.push_back(std::sin(0.3 * i));
  HostTensor tx(F64, {s, h, d}, x), tc(F32, {s, d / 2}, cs), ts(F32, {s, d / 2}, sn),
      y(F64, {s, h, d});
  HostTensor back(F64, {s, h, d});
  auto attrs = attrs_of("rotary_embedding");
  ASSERT_EQ(run("rotary_embedding", {&tx, &tc, &ts, &y}, attrs).status, POLYCHIP_OK);
  // Rotate-half: every element against the formula, so that a kernel or plan
  // mixing up positions and heads (the table is per position) fails.
  for (int p = 0; p < s; ++p)
    for (int q = 0; q < h; ++q)
      for (int k = 0; k < d / 2; ++k) {
        const int at = (p * h + q) * d + k;
        const double c = tc.at(p * d / 2 + k), sn = ts.at(p * d / 2 + k);
        EXPECT_NEAR(y.at(at), x[at] * c - x[at + d / 2] * sn, 1e-15) << p << "," << q << "," << k;
        EXPECT_NEAR(y.at(at + d / 2), x[at + d / 2] * c + x[at] * sn, 1e-15)
            << p << "," << q << "," << k;
      }
  attrs.ints[attr::kInverse] = 1;
  ASSERT_EQ(run("rotary_embedding", {&y, &tc, &ts, &back}, attrs).status, POLYCHIP_OK);
  expect_near_all(back.values(), x, 1e-7, "inverse rotary");
}

// ---- attention ---------------------------------------------------------------------

struct Attention {
  static constexpr int kB = 1, kH = 2, kS = 5, kD = 3, kN = kB * kH * kS * kD;
  std::vector<double> q = random_values(kN, -1, 1, 19), k = random_values(kN, -1, 1, 20),
                      v = random_values(kN, -1, 1, 21);
  polychip_op_attrs attrs = attrs_of("attention");

  // o and lse from the kernel.
  std::pair<std::vector<double>, std::vector<double>> forward(const std::vector<double>& qq,
                                                              const std::vector<double>& kk,
                                                              const std::vector<double>& vv) {
    HostTensor tq(F64, {kB, kH, kS, kD}, qq), tk(F64, {kB, kH, kS, kD}, kk);
    HostTensor tv(F64, {kB, kH, kS, kD}, vv), o(F64, {kB, kH, kS, kD}), lse(F32, {kB, kH, kS});
    EXPECT_EQ(run("attention", {&tq, &tk, &tv, &o, &lse}, attrs).status, POLYCHIP_OK);
    return {o.values(), lse.values()};
  }
};

TEST(KernelEmulation, CausalAttentionMatchesTheNaiveFormula) {
  Attention a;
  a.attrs.floats[attr::kScale] = 0.6;
  auto [o, lse] = a.forward(a.q, a.k, a.v);
  for (int bh = 0; bh < 2; ++bh)
    for (int i = 0; i < Attention::kS; ++i) {
      std::vector<double> s;
      for (int j = 0; j <= i; ++j) {
        double dot = 0;
        for (int t = 0; t < 3; ++t) dot += a.q[(bh * 5 + i) * 3 + t] * a.k[(bh * 5 + j) * 3 + t];
        s.push_back(0.6 * dot);
      }
      const double mx = *std::max_element(s.begin(), s.end());
      double z = 0;
      for (double x : s) z += std::exp(x - mx);
      EXPECT_NEAR(lse[bh * 5 + i], mx + std::log(z), 1e-6);
      for (int t = 0; t < 3; ++t) {
        double acc = 0;
        for (int j = 0; j <= i; ++j) acc += std::exp(s[j] - mx) / z * a.v[(bh * 5 + j) * 3 + t];
        EXPECT_NEAR(o[(bh * 5 + i) * 3 + t], acc, 1e-14);
      }
    }
}

TEST(KernelEmulation, AttentionBackwardMatchesFiniteDifferences) {
  for (int causal : {1, 0}) {
    Attention a;
    a.attrs.ints[attr::kCausal] = causal;
    const auto dout = random_values(Attention::kN, -1, 1, 22);
    auto [o, lse] = a.forward(a.q, a.k, a.v);
    HostTensor tdo(F64, {1, 2, 5, 3}, dout), tq(F64, {1, 2, 5, 3}, a.q), tk(F64, {1, 2, 5, 3}, a.k);
    HostTensor tv(F64, {1, 2, 5, 3}, a.v), to(F64, {1, 2, 5, 3}, o), tl(F32, {1, 2, 5}, lse);
    HostTensor dq(F64, {1, 2, 5, 3}), dk(F64, {1, 2, 5, 3}), dv(F64, {1, 2, 5, 3});
    ASSERT_EQ(
        run("attention_backward", {&tdo, &tq, &tk, &tv, &to, &tl, &dq, &dk, &dv}, a.attrs).status,
        POLYCHIP_OK);
    // L = sum(o * do); dL/dx by central differences through the forward kernel.
    auto loss = [&](const std::vector<double>& q, const std::vector<double>& k,
                    const std::vector<double>& v) {
      auto out = a.forward(q, k, v).first;
      double l = 0;
      for (int t = 0; t < Attention::kN; ++t) l += out[t] * dout[t];
      return l;
    };
    const double h = 1e-6;
    for (int which = 0; which < 3; ++which) {
      const HostTensor& grad = which == 0 ? dq : which == 1 ? dk : dv;
      for (int t = 0; t < Attention::kN; ++t) {
        auto q = a.q, k = a.k, v = a.v;
        auto& x = which == 0 ? q : which == 1 ? k : v;
        x[t] += h;
        const double up = loss(q, k, v);
        x[t] -= 2 * h;
        const double down = loss(q, k, v);
        // lse is saved in f32, so the kernel's gradient carries ~1e-7 of relative error.
        EXPECT_NEAR(grad.at(t), (up - down) / (2 * h), 1e-5)
            << "causal " << causal << " tensor " << which << " [" << t << "]";
      }
    }
  }
}

TEST(KernelEmulation, GemmArgumentsMatchTheKernelSignature) {
  // The tiled gemm needs 16 x 16 real threads; its packing is still checked.
  HostTensor a(F32, {2, 3}), b(F32, {3, 4}), c(F32, {2, 4}), y(F32, {2, 4});
  std::vector<polychip_tensor> ts{a.t, b.t, c.t, y.t};
  std::vector<uint64_t> addresses{1, 2, 3, 4};
  auto attrs = attrs_of("gemm");
  OpRequest r;
  r.entry = find_kernel("gemm");
  r.tensors = ts;
  r.attrs = &attrs;
  r.addresses = addresses;
  auto p = plan_op(r);
  ASSERT_EQ(p.status, POLYCHIP_OK);
  // pc_gemm_<T>(a, b, c, y, batch, m, n, k, trans_a, trans_b, alpha, beta)
  const std::vector<size_t> want = {8, 8, 8, 8, 8, 8, 8, 8, 4, 4, 8, 8};
  EXPECT_EQ(p.plan.launches[0]->params.sizes(), want);
}

}  // namespace
}  // namespace polychip::gpu
