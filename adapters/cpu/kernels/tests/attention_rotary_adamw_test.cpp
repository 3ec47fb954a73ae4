// attention (closed forms and finite-difference gradients), rotary
// embedding and the AdamW step.
#include <cmath>
#include <functional>

#include "kernel_test_util.hpp"
#include "random_values.hpp"

namespace polychip::testing {
namespace {

TEST_F(CpuKernelTest, AttentionClosedForms) {
  // B = H = 1, S = 2, D = 2. Causal: query 0 sees only key 0, so o[0] = v[0].
  // Query 1 with q = 0 weighs both keys equally: o[1] = mean(v), lse = log 2.
  for (DType dt : kFloatDTypes) {
    auto q = run.make(dt, {1, 1, 2, 2}, {1, 2, 0, 0});
    auto k = run.make(dt, {1, 1, 2, 2}, {3, -1, 2, 5});
    auto v = run.make(dt, {1, 1, 2, 2}, {1, 2, 3, 6});
    auto o = run.empty(dt, {1, 1, 2, 2});
    auto lse = run.empty(DType::kF32, {1, 1, 2});
    auto a = run.attrs("attention");
    a.floats[attr::kScale] = 0.5;
    a.ints[attr::kCausal] = 1;
    run.call("attention", {q, k, v, o, lse}, a);
    EXPECT_TRUE(same_values(run.values(o), {1, 2, 2, 4})) << dtype_name(dt);
    EXPECT_TRUE(same_values(run.values(lse), rounded(DType::kF32, {0.5 * (3 - 2), std::log(2.0)})));
    // Not causal: query 0 scores 0.5 (3 - 2) = 0.5 and 0.5 (2 + 10) = 6.
    a.ints[attr::kCausal] = 0;
    run.call("attention", {q, k, v, o, lse}, a);
    const double p1 = 1 / (1 + std::exp(0.5 - 6));
    const auto qo = run.values(o);
    EXPECT_TRUE(
        near_values(qo, rounded(dt, {(1 - p1) * 1 + p1 * 3, (1 - p1) * 2 + p1 * 6, 2, 4}), 1e-15))
        << dtype_name(dt);
  }
}

TEST_F(CpuKernelTest, AttentionBackwardMatchesFiniteDifferences) {
  const int64_t b = 1, h = 2, s = 3, d = 2, n = b * h * s * d;
  const auto q = random_values(n, 11), k = random_values(n, 12), v = random_values(n, 13);
  const auto w = random_values(n, 14);
  for (int causal : {1, 0}) {
    auto a = run.attrs("attention");
    a.floats[attr::kScale] = 0.7;
    a.ints[attr::kCausal] = causal;
    auto forward = [&](const std::vector<double>& qv, const std::vector<double>& kv,
                       const std::vector<double>& vv, std::vector<double>* lse_out) {
      auto tq = run.make(DType::kF64, {b, h, s, d}, qv),
           tk = run.make(DType::kF64, {b, h, s, d}, kv);
      auto tv = run.make(DType::kF64, {b, h, s, d}, vv);
      auto o = run.empty(DType::kF64, {b, h, s, d});
      auto lse = run.empty(DType::kF32, {b, h, s});
      run.call("attention", {tq, tk, tv, o, lse}, a);
      if (lse_out) *lse_out = run.values(lse);
      return run.values(o);
    };
    std::vector<double> lse_v;
    const auto o_v = forward(q, k, v, &lse_v);
    auto tdo = run.make(DType::kF64, {b, h, s, d}, w);
    auto tq = run.make(DType::kF64, {b, h, s, d}, q), tk = run.make(DType::kF64, {b, h, s, d}, k);
    auto tv = run.make(DType::kF64, {b, h, s, d}, v), to = run.make(DType::kF64, {b, h, s, d}, o_v);
    auto tl = run.make(DType::kF32, {b, h, s}, lse_v);
    auto dq = run.empty(DType::kF64, {b, h, s, d}), dk = run.empty(DType::kF64, {b, h, s, d});
    auto dv = run.empty(DType::kF64, {b, h, s, d});
    run.call("attention_backward", {tdo, tq, tk, tv, to, tl, dq, dk, dv}, a);
    auto numeric = [&](int which) {
      std::vector<double> g(n);
      std::vector<double> in[3] = {q, k, v};
      for (int64_t i = 0; i < n; ++i) {
        const double keep = in[which][i], eps = 1e-6;
        in[which][i] = keep + eps;
        auto up = forward(in[0], in[1], in[2], nullptr);
        in[which][i] = keep - eps;
        auto down = forward(in[0], in[1], in[2], nullptr);
        in[which][i] = keep;
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += w[j] * (up[j] - down[j]);
        g[i] = sum / (2 * eps);
      }
      return g;
    };
    EXPECT_TRUE(near_values(run.values(dq), numeric(0), 1e-6, 1e-8)) << "dq causal " << causal;
    EXPECT_TRUE(near_values(run.values(dk), numeric(1), 1e-6, 1e-8)) << "dk causal " << causal;
    EXPECT_TRUE(near_values(run.values(dv), numeric(2), 1e-6, 1e-8)) << "dv causal " << causal;
  }
}

TEST_F(CpuKernelTest, RotaryRotatesHalvesAndInverts) {
  // S = 1, H = 2, D = 4; angle pairs (i, i + 2).
  const double c0 = 0.6, s0 = 0.8, c1 = 0, s1 = 1;
  auto x = run.make(DType::kF64, {1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto cs = run.make(DType::kF32, {1, 2}, {c0, c1}), sn = run.make(DType::kF32, {1, 2}, {s0, s1});
  auto y = run.empty(DType::kF64, {1, 2, 4});
  run.call("rotary_embedding", {x, cs, sn, y});
  const double f0 = static_cast<float>(c0), g0 = static_cast<float>(s0);
  EXPECT_TRUE(same_values(run.values(y),
                          {1 * f0 - 3 * g0, 2 * c1 - 4 * s1, 3 * f0 + 1 * g0, 4 * c1 + 2 * s1,
                           5 * f0 - 7 * g0, 6 * c1 - 8 * s1, 7 * f0 + 5 * g0, 8 * c1 + 6 * s1}));
  auto back = run.empty(DType::kF64, {1, 2, 4});
  auto a = run.attrs("rotary_embedding");
  a.ints[attr::kInverse] = 1;
  run.call("rotary_embedding", {y, cs, sn, back}, a);
  // cos^2 + sin^2 of the f32 table is 1 within f32 rounding.
  EXPECT_TRUE(near_values(run.values(back), {1, 2, 3, 4, 5, 6, 7, 8}, 1e-7));
}

TEST_F(CpuKernelTest, AdamWStepInPlace) {
  const double lr = 0.1, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.01;
  auto a = run.attrs("adamw");
  a.floats[attr::kLr] = lr;
  a.floats[attr::kBeta1] = b1;
  a.floats[attr::kBeta2] = b2;
  a.floats[attr::kAdamEps] = eps;
  a.floats[attr::kWeightDecay] = wd;
  a.ints[attr::kStep] = 2;
  const std::vector<double> p0 = {1, -2, 0.5}, g0 = {0.5, -0.25, 0}, m0 = {0.1, 0.2, 0},
                            v0 = {0.01, 0.04, 0};
  for (DType gd : kFloatDTypes) {
    auto p = run.make(DType::kF32, {3}, p0), m = run.make(DType::kF32, {3}, m0),
         v = run.make(DType::kF32, {3}, v0);
    auto g = run.make(gd, {3}, g0);
    run.call("adamw", {p, g, m, v, p, m, v}, a);
    std::vector<double> wp, wm, wv;
    for (int i = 0; i < 3; ++i) {
      const double mf = static_cast<float>(m0[i]), vf = static_cast<float>(v0[i]);
      const double m1 = b1 * mf + (1 - b1) * g0[i], v1 = b2 * vf + (1 - b2) * g0[i] * g0[i];
      const double upd = (m1 / (1 - b1 * b1)) / (std::sqrt(v1 / (1 - b2 * b2)) + eps);
      wp.push_back(p0[i] - lr * (wd * p0[i] + upd));
      wm.push_back(m1);
      wv.push_back(v1);
    }
    EXPECT_TRUE(same_values(run.values(p), rounded(DType::kF32, wp))) << dtype_name(gd);
    EXPECT_TRUE(same_values(run.values(m), rounded(DType::kF32, wm)));
    EXPECT_TRUE(same_values(run.values(v), rounded(DType::kF32, wv)));
  }
}

}  // namespace
}  // namespace polychip::testing
