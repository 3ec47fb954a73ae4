// Every backward op of the oracle against central finite differences of
// its forward op: L = sum(dy * forward(x)), dL/dx numerically.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "oracle_test_util.hpp"

namespace polychip::precision {
namespace {

using testing::attrs_of;
using testing::output;
using testing::run;
using testing::tensor;

std::vector<double> random_values(size_t n, uint32_t seed, double lo = -2, double hi = 2) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

double weighted_sum(const std::vector<double>& w, const std::vector<double>& y) {
  long double s = 0;
  for (size_t k = 0; k < w.size(); ++k) s += static_cast<long double>(w[k]) * y[k];
  return static_cast<double>(s);
}

// Numerical gradient of loss(x) at x.
std::vector<double> numeric_grad(const std::function<double(const std::vector<double>&)>& loss,
                                 std::vector<double> x) {
  std::vector<double> g(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    double x0 = x[k], h = 1e-5 * std::max(1.0, std::fabs(x0));
    x[k] = x0 + h;
    double up = loss(x);
    x[k] = x0 - h;
    double down = loss(x);
    x[k] = x0;
    g[k] = (up - down) / (2 * h);
  }
  return g;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k)
    EXPECT_NEAR(got[k], want[k], 1e-7 * std::max(1.0, std::fabs(want[k])))
        << what << "[" << k << "]";
}

TEST(OracleBackwardTest, ElementwiseGradientsMatchFiniteDifferences) {
  const std::vector<std::pair<const char*, const char*>> pairs = {{"gelu", "gelu_backward"},
                                                                  {"silu", "silu_backward"},
                                                                  {"sigmoid", "sigmoid_backward"},
                                                                  {"tanh", "tanh_backward"},
                                                                  {"relu", "relu_backward"}};
  auto x = random_values(40, 1, -6, 6);
  auto dy = random_values(40, 2);
  for (int approximate : {0, 1}) {
    for (auto [fwd, bwd] : pairs) {
      auto fa = attrs_of(fwd), ba = attrs_of(bwd);
      if (std::string(fwd) == "gelu")
        fa.ints[attr::kGeluApproximate] = ba.ints[attr::kGeluApproximate] = approximate;
      auto loss = [&](const std::vector<double>& xs) {
        return weighted_sum(dy, run(fwd, {tensor({40}, xs)}, {output({40})}, &fa)[0].values);
      };
      auto got = run(bwd, {tensor({40}, dy), tensor({40}, x)}, {output({40})}, &ba)[0].values;
      expect_close(got, numeric_grad(loss, x), bwd);
    }
  }
}

TEST(OracleBackwardTest, SoftmaxGradients) {
  const Shape shape{3, 5};
  auto x = random_values(15, 3, -3, 3);
  auto dy = random_values(15, 4);
  for (auto [fwd, bwd] : {std::pair{"softmax", "softmax_backward"},
                          std::pair{"log_softmax", "log_softmax_backward"}}) {
    for (int axis : {-1, 0}) {
      auto fa = attrs_of(fwd), ba = attrs_of(bwd);
      fa.ints[attr::kAxis] = ba.ints[attr::kAxis] = axis;
      auto forward = [&](const std::vector<double>& xs) {
        return run(fwd, {tensor(shape, xs)}, {output(shape)}, &fa)[0].values;
      };
      auto loss = [&](const std::vector<double>& xs) { return weighted_sum(dy, forward(xs)); };
      auto got =
          run(bwd, {tensor(shape, dy), tensor(shape, forward(x))}, {output(shape)}, &ba)[0].values;
      expect_close(got, numeric_grad(loss, x), bwd);
    }
  }
}

TEST(OracleBackwardTest, LayernormGradients) {
  const int64_t n = 3, d = 6;
  auto x = random_values(n * d, 5), gamma = random_values(d, 6), beta = random_values(d, 7);
  auto dy = random_values(n * d, 8);
  auto forward = [&](const std::vector<double>& xs, const std::vector<double>& g,
                     const std::vector<double>& b) {
    return run("layernorm", {tensor({n, d}, xs), tensor({d}, g), tensor({d}, b)},
               {output({n, d}), output({n}, DType::kF32), output({n}, DType::kF32)});
  };
  auto fwd = forward(x, gamma, beta);
  auto grads =
      run("layernorm_backward",
          {tensor({n, d}, dy), tensor({n, d}, x), tensor({d}, gamma),
           tensor({n}, fwd[1].values, DType::kF32), tensor({n}, fwd[2].values, DType::kF32)},
          {output({n, d}), output({d}), output({d})});
  expect_close(
      grads[0].values,
      numeric_grad(
          [&](const auto& xs) { return weighted_sum(dy, forward(xs, gamma, beta)[0].values); }, x),
      "dx");
  expect_close(
      grads[1].values,
      numeric_grad([&](const auto& g) { return weighted_sum(dy, forward(x, g, beta)[0].values); },
                   gamma),
      "dgamma");
  expect_close(
      grads[2].values,
      numeric_grad([&](const auto& b) { return weighted_sum(dy, forward(x, gamma, b)[0].values); },
                   beta),
      "dbeta");
}

TEST(OracleBackwardTest, RmsnormGradients) {
  const int64_t n = 2, d = 7;
  auto x = random_values(n * d, 9), gamma = random_values(d, 10), dy = random_values(n * d, 11);
  auto forward = [&](const std::vector<double>& xs, const std::vector<double>& g) {
    return run("rmsnorm", {tensor({n, d}, xs), tensor({d}, g)},
               {output({n, d}), output({n}, DType::kF32)});
  };
  auto fwd = forward(x, gamma);
  auto grads = run("rmsnorm_backward",
                   {tensor({n, d}, dy), tensor({n, d}, x), tensor({d}, gamma),
                    tensor({n}, fwd[1].values, DType::kF32)},
                   {output({n, d}), output({d})});
  expect_close(
      grads[0].values,
      numeric_grad([&](const auto& xs) { return weighted_sum(dy, forward(xs, gamma)[0].values); },
                   x),
      "dx");
  expect_close(
      grads[1].values,
      numeric_grad([&](const auto& g) { return weighted_sum(dy, forward(x, g)[0].values); }, gamma),
      "dgamma");
}

TEST(OracleBackwardTest, CrossEntropyGradient) {
  const int64_t n = 3, classes = 5;
  auto logits = random_values(n * classes, 12, -4, 4), dloss = random_values(n, 13);
  auto targets = tensor({n}, {4, 0, 2}, DType::kI64);
  auto loss = [&](const std::vector<double>& xs) {
    return weighted_sum(dloss, run("cross_entropy", {tensor({n, classes}, xs), targets},
                                   {output({n}, DType::kF32)})[0]
                                   .values);
  };
  auto got = run("cross_entropy_backward",
                 {tensor({n, classes}, logits), targets, tensor({n}, dloss, DType::kF32)},
                 {output({n, classes})})[0]
                 .values;
  expect_close(got, numeric_grad(loss, logits), "dlogits");
}

TEST(OracleBackwardTest, AttentionGradients) {
  const Shape shape{1, 2, 5, 3}, lse_shape{1, 2, 5};
  const size_t count = 30;
  auto q = random_values(count, 14), k = random_values(count, 15), v = random_values(count, 16);
  auto dout = random_values(count, 17);
  for (int causal : {1, 0}) {
    auto attrs = attrs_of("attention");
    attrs.ints[attr::kCausal] = causal;
    attrs.floats[attr::kScale] = 0.6;
    auto forward = [&](const std::vector<double>& qs, const std::vector<double>& ks,
                       const std::vector<double>& vs) {
      return run("attention", {tensor(shape, qs), tensor(shape, ks), tensor(shape, vs)},
                 {output(shape), output(lse_shape, DType::kF32)}, &attrs);
    };
    auto fwd = forward(q, k, v);
    auto battrs = attrs_of("attention_backward");
    battrs.ints[attr::kCausal] = causal;
    battrs.floats[attr::kScale] = 0.6;
    auto grads = run("attention_backward",
                     {tensor(shape, dout), tensor(shape, q), tensor(shape, k), tensor(shape, v),
                      fwd[0], tensor(lse_shape, fwd[1].values, DType::kF32)},
                     {output(shape), output(shape), output(shape)}, &battrs);
    expect_close(
        grads[0].values,
        numeric_grad([&](const auto& x) { return weighted_sum(dout, forward(x, k, v)[0].values); },
                     q),
        "dq");
    expect_close(
        grads[1].values,
        numeric_grad([&](const auto& x) { return weighted_sum(dout, forward(q, x, v)[0].values); },
                     k),
        "dk");
    expect_close(
        grads[2].values,
        numeric_grad([&](const auto& x) { return weighted_sum(dout, forward(q, k, x)[0].values); },
                     v),
        "dv");
  }
}

TEST(OracleBackwardTest, EmbeddingBackwardIsTheGradientOfEmbedding) {
  const int64_t vocab = 4, d = 3;
  auto ids = tensor({5}, {3, 1, 3, 0, 3}, DType::kI64);
  auto weight = random_values(vocab * d, 18), dout = random_values(5 * d, 19);
  auto loss = [&](const std::vector<double>& w) {
    return weighted_sum(dout,
                        run("embedding", {ids, tensor({vocab, d}, w)}, {output({5, d})})[0].values);
  };
  auto got = run("embedding_backward", {ids, tensor({5, d}, dout)}, {output({vocab, d})})[0].values;
  expect_close(got, numeric_grad(loss, weight), "dweight");
}

}  // namespace
}  // namespace polychip::precision
