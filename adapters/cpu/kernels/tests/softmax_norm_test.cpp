// softmax / log_softmax and layernorm / rmsnorm, forward values and
// backward checked against central differences of the forward op (f64).
#include <cmath>
#include <functional>

#include "kernel_test_util.hpp"
#include "random_values.hpp"

namespace polychip::testing {
namespace {

// d/dx_i of L(x) = sum(w * f(x)) by central differences.
std::vector<double> numeric_gradient(
    const std::function<std::vector<double>(const std::vector<double>&)>& f, std::vector<double> x,
    const std::vector<double>& w) {
  std::vector<double> g(x.size());
  const double h = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    auto up = f(x);
    x[i] = keep - h;
    auto down = f(x);
    x[i] = keep;
    double s = 0;
    for (size_t j = 0; j < up.size(); ++j) s += w[j] * (up[j] - down[j]);
    g[i] = s / (2 * h);
  }
  return g;
}

TEST_F(CpuKernelTest, SoftmaxValuesWithoutOverflow) {
  for (DType dt : kFloatDTypes) {
    auto x = run.make(dt, {2, 2}, {1000, 1000, 0, std::log(3.0)});
    auto y = run.empty(dt, {2, 2});
    run.call("softmax", {x, y});
    const double l3 = run.values(x)[3];
    EXPECT_TRUE(near_values(
        run.values(y),
        rounded(dt, {0.5, 0.5, 1 / (1 + std::exp(l3)), std::exp(l3) / (1 + std::exp(l3))}), 1e-15))
        << dtype_name(dt);
    run.call("log_softmax", {x, y});
    EXPECT_TRUE(near_values(run.values(y),
                            rounded(dt, {-std::log(2.0), -std::log(2.0), -std::log1p(std::exp(l3)),
                                         l3 - std::log1p(std::exp(l3))}),
                            1e-15))
        << dtype_name(dt);
  }
}

TEST_F(CpuKernelTest, SoftmaxAlongTheFirstAxisAndNaN) {
  auto x = run.make(DType::kF32, {2, 2}, {0, NAN, 0, 1});
  auto y = run.empty(DType::kF32, {2, 2});
  auto a = run.attrs("softmax");
  a.ints[attr::kAxis] = 0;
  run.call("softmax", {x, y}, a);
  EXPECT_TRUE(same_values(run.values(y), {0.5, NAN, 0.5, NAN}));
}

TEST_F(CpuKernelTest, SoftmaxBackwardsMatchFiniteDifferences) {
  const auto x = random_values(12, 1), w = random_values(12, 2);
  for (bool log_form : {false, true}) {
    const char* fwd = log_form ? "log_softmax" : "softmax";
    const char* bwd = log_form ? "log_softmax_backward" : "softmax_backward";
    auto forward = [&](const std::vector<double>& in) {
      auto tx = run.make(DType::kF64, {3, 4}, in);
      auto ty = run.empty(DType::kF64, {3, 4});
      run.call(fwd, {tx, ty});
      return run.values(ty);
    };
    auto y = run.make(DType::kF64, {3, 4}, forward(x));
    auto dy = run.make(DType::kF64, {3, 4}, w);
    auto dx = run.empty(DType::kF64, {3, 4});
    run.call(bwd, {dy, y, dx});
    EXPECT_TRUE(near_values(run.values(dx), numeric_gradient(forward, x, w), 1e-6, 1e-8)) << bwd;
  }
}

TEST_F(CpuKernelTest, LayernormForwardValuesAndLargeMean) {
  auto x = run.make(DType::kF32, {2, 4}, {1, 2, 3, 4, 10001, 10002, 10003, 10004});
  auto gamma = run.make(DType::kF32, {4}, {1, 1, 2, 1});
  auto beta = run.make(DType::kF32, {4}, {0, 0, 0, 1});
  auto y = run.empty(DType::kF32, {2, 4}), mean = run.empty(DType::kF32, {2}),
       rstd = run.empty(DType::kF32, {2});
  auto a = run.attrs("layernorm");
  a.floats[attr::kEps] = 1e-5;
  run.call("layernorm", {x, gamma, beta, y, mean, rstd}, a);
  const double r = 1 / std::sqrt(1.25 + 1e-5);
  const std::vector<double> row = {-1.5 * r, -0.5 * r, 2 * 0.5 * r, 1.5 * r + 1};
  std::vector<double> want = row;
  want.insert(want.end(), row.begin(), row.end());
  EXPECT_TRUE(near_values(run.values(y), rounded(DType::kF32, want), 1e-7, 1e-7));
  EXPECT_TRUE(same_values(run.values(mean), rounded(DType::kF32, {2.5, 10002.5})));
  EXPECT_TRUE(same_values(run.values(rstd), rounded(DType::kF32, {r, r})));
}

TEST_F(CpuKernelTest, RmsnormForwardValues) {
  auto x = run.make(DType::kBF16, {1, 2}, {3, 4});
  auto gamma = run.make(DType::kBF16, {2}, {1, 2});
  auto y = run.empty(DType::kBF16, {1, 2}), rstd = run.empty(DType::kF32, {1});
  auto a = run.attrs("rmsnorm");
  a.floats[attr::kEps] = 0.5;
  run.call("rmsnorm", {x, gamma, y, rstd}, a);
  const double r = 1 / std::sqrt(12.5 + 0.5);
  EXPECT_TRUE(same_values(run.values(y), rounded(DType::kBF16, {3 * r, 8 * r})));
  EXPECT_TRUE(same_values(run.values(rstd), rounded(DType::kF32, {r})));
}

TEST_F(CpuKernelTest, NormBackwardsMatchFiniteDifferences) {
  const int n = 3, d = 5;
  const auto x = random_values(n * d, 3, 0.5, 2), g = random_values(d, 4, 1, 0.3);
  const auto bta = random_values(d, 5), w = random_values(n * d, 6);
  auto ln = [&](const std::vector<double>& xv, const std::vector<double>& gv,
                std::vector<double>* mr) {
    auto tx = run.make(DType::kF64, {n, d}, xv), tg = run.make(DType::kF64, {d}, gv);
    auto tb = run.make(DType::kF64, {d}, bta);
    auto y = run.empty(DType::kF64, {n, d}), mean = run.empty(DType::kF32, {n}),
         rstd = run.empty(DType::kF32, {n});
    run.call("layernorm", {tx, tg, tb, y, mean, rstd});
    if (mr) {
      *mr = run.values(mean);
      auto rs = run.values(rstd);
      mr->insert(mr->end(), rs.begin(), rs.end());
    }
    return run.values(y);
  };
  std::vector<double> stats;
  ln(x, g, &stats);
  auto tdy = run.make(DType::kF64, {n, d}, w), tx = run.make(DType::kF64, {n, d}, x);
  auto tg = run.make(DType::kF64, {d}, g);
  auto mean = run.make(DType::kF32, {n}, {stats.begin(), stats.begin() + n});
  auto rstd = run.make(DType::kF32, {n}, {stats.begin() + n, stats.end()});
  auto dx = run.empty(DType::kF64, {n, d}), dg = run.empty(DType::kF64, {d}),
       db = run.empty(DType::kF64, {d});
  run.call("layernorm_backward", {tdy, tx, tg, mean, rstd, dx, dg, db});
  // Saved statistics are f32, so compare with a relative 1e-6.
  EXPECT_TRUE(near_values(run.values(dx),
                          numeric_gradient([&](auto v) { return ln(v, g, nullptr); }, x, w), 1e-5,
                          1e-6));
  EXPECT_TRUE(near_values(run.values(dg),
                          numeric_gradient([&](auto v) { return ln(x, v, nullptr); }, g, w), 1e-5,
                          1e-6));
  std::vector<double> dbeta(d, 0);
  for (int i = 0; i < n * d; ++i) dbeta[i % d] += w[i];
  EXPECT_TRUE(near_values(run.values(db), dbeta, 1e-15));

  auto rms = [&](const std::vector<double>& xv, const std::vector<double>& gv,
                 std::vector<double>* rs) {
    auto tx2 = run.make(DType::kF64, {n, d}, xv), tg2 = run.make(DType::kF64, {d}, gv);
    auto y = run.empty(DType::kF64, {n, d}), r = run.empty(DType::kF32, {n});
    run.call("rmsnorm", {tx2, tg2, y, r});
    if (rs) *rs = run.values(r);
    return run.values(y);
  };
  std::vector<double> rs;
  rms(x, g, &rs);
  auto trs = run.make(DType::kF32, {n}, rs);
  auto dx2 = run.empty(DType::kF64, {n, d}), dg2 = run.empty(DType::kF64, {d});
  run.call("rmsnorm_backward", {tdy, tx, tg, trs, dx2, dg2});
  EXPECT_TRUE(near_values(run.values(dx2),
                          numeric_gradient([&](auto v) { return rms(v, g, nullptr); }, x, w), 1e-5,
                          1e-6));
  EXPECT_TRUE(near_values(run.values(dg2),
                          numeric_gradient([&](auto v) { return rms(x, v, nullptr); }, g, w), 1e-5,
                          1e-6));
}

}  // namespace
}  // namespace polychip::testing
