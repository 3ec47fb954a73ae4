// Elementwise ops on the cpu adapter: exact values, IEEE specials, one
// rounding for f16/bf16, arbitrary strides and in-place calls.
#include <cmath>

#include "kernel_test_util.hpp"

namespace polychip::testing {
namespace {

const double kInf = INFINITY;

TEST_F(CpuKernelTest, BinaryOpsAreExactInEveryDtype) {
  const std::vector<double> a = {1.5, -2, 0.25, 3}, b = {0.5, 4, -0.125, 3};
  for (DType dt : kFloatDTypes) {
    auto ta = run.make(dt, {2, 2}, a), tb = run.make(dt, {2, 2}, b);
    auto out = run.empty(dt, {2, 2});
    run.call("add", {ta, tb, out});
    EXPECT_TRUE(same_values(run.values(out), {2, 2, 0.125, 6})) << dtype_name(dt);
    run.call("sub", {ta, tb, out});
    EXPECT_TRUE(same_values(run.values(out), {1, -6, 0.375, 0})) << dtype_name(dt);
    run.call("mul", {ta, tb, out});
    EXPECT_TRUE(same_values(run.values(out), {0.75, -8, -0.03125, 9})) << dtype_name(dt);
    run.call("div", {ta, tb, out});
    EXPECT_TRUE(same_values(run.values(out), {3, -0.5, -2, 1})) << dtype_name(dt);
  }
}

TEST_F(CpuKernelTest, DivisionFollowsIeee) {
  auto a = run.make(DType::kF32, {3}, {1, -1, 0}), b = run.make(DType::kF32, {3}, {0, 0, 0});
  auto out = run.empty(DType::kF32, {3});
  run.call("div", {a, b, out});
  EXPECT_TRUE(same_values(run.values(out), {kInf, -kInf, NAN}));
}

TEST_F(CpuKernelTest, HalfAndBFloat16RoundOnceToNearestEven) {
  // f16: 1 + 2^-11 is a tie -> 1; (1 + 2^-10) + 2^-11 is a tie -> 1 + 2^-9.
  auto a = run.make(DType::kF16, {2}, {1, 1 + 0x1p-10}),
       b = run.make(DType::kF16, {2}, {0x1p-11, 0x1p-11});
  auto out = run.empty(DType::kF16, {2});
  run.call("add", {a, b, out});
  EXPECT_TRUE(same_values(run.values(out), {1, 1 + 0x1p-9}));
  auto c = run.make(DType::kBF16, {2}, {1, 1 + 0x1p-7}),
       d = run.make(DType::kBF16, {2}, {0x1p-8, 0x1p-8});
  auto out2 = run.empty(DType::kBF16, {2});
  run.call("add", {c, d, out2});
  EXPECT_TRUE(same_values(run.values(out2), {1, 1 + 0x1p-6}));
  // Overflow to Inf when rounding the f16 result.
  auto big = run.make(DType::kF16, {1}, {65504});
  auto out3 = run.empty(DType::kF16, {1});
  run.call("add", {big, big, out3});
  EXPECT_TRUE(same_values(run.values(out3), {kInf}));
}

TEST_F(CpuKernelTest, UnaryMathIsTheCorrectlyRoundedDoubleResult) {
  const std::vector<double> x = {-3.5, -1, -0.25, 0, 0.5, 2, 7.25};
  struct Case {
    const char* op;
    double (*f)(double);
  } cases[] = {
      {"neg", [](double v) { return -v; }},
      {"exp", [](double v) { return std::exp(v); }},
      {"tanh", [](double v) { return std::tanh(v); }},
      {"sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"relu", [](double v) { return v > 0 ? v : 0.0; }},
  };
  for (DType dt : kFloatDTypes) {
    auto in = run.make(dt, {7}, x);
    const auto xr = run.values(in);
    for (const auto& c : cases) {
      auto out = run.empty(dt, {7});
      run.call(c.op, {in, out});
      std::vector<double> want;
      for (double v : xr) want.push_back(c.f(v));
      EXPECT_TRUE(near_values(run.values(out), rounded(dt, want), 1e-15))
          << c.op << " " << dtype_name(dt);
    }
  }
}

TEST_F(CpuKernelTest, LogSqrtRsqrtSpecialValues) {
  auto x = run.make(DType::kF32, {5}, {-1, 0, 1, 4, kInf});
  auto y = run.empty(DType::kF32, {5});
  run.call("log", {x, y});
  EXPECT_TRUE(same_values(run.values(y), {NAN, -kInf, 0, static_cast<float>(std::log(4.0)), kInf}));
  run.call("sqrt", {x, y});
  EXPECT_TRUE(same_values(run.values(y), {NAN, 0, 1, 2, kInf}));
  run.call("rsqrt", {x, y});
  EXPECT_TRUE(same_values(run.values(y), {NAN, kInf, 1, 0.5, 0}));
  auto n = run.make(DType::kF32, {3}, {NAN, -kInf, kInf});
  auto r = run.empty(DType::kF32, {3});
  run.call("relu", {n, r});
  EXPECT_TRUE(same_values(run.values(r), {NAN, 0, kInf}));
  run.call("sigmoid", {n, r});
  EXPECT_TRUE(same_values(run.values(r), {NAN, 0, 1}));
}

// Long-double references of the activation functions.
long double gelu_erf_ref(long double x) { return 0.5L * x * (1 + std::erf(x / std::sqrt(2.0L))); }
long double gelu_tanh_ref(long double x) {
  const long double k = std::sqrt(2.0L / 3.14159265358979323846264338327950288L);
  return 0.5L * x * (1 + std::tanh(k * (x + 0.044715L * x * x * x)));
}
long double silu_ref(long double x) { return x / (1 + std::exp(-x)); }

TEST_F(CpuKernelTest, ActivationsAndTheirGradients) {
  const std::vector<double> x = {-6, -1.5, -0.5, 0, 0.75, 2, 5};
  auto in = run.make(DType::kF64, {7}, x);
  auto ones = run.make(DType::kF64, {7}, std::vector<double>(7, 1.0));
  auto out = run.empty(DType::kF64, {7});
  auto grad = run.empty(DType::kF64, {7});
  struct Case {
    const char* op;
    const char* backward;
    int approximate;
    long double (*f)(long double);
  } cases[] = {{"gelu", "gelu_backward", 0, gelu_erf_ref},
               {"gelu", "gelu_backward", 1, gelu_tanh_ref},
               {"silu", "silu_backward", 0, silu_ref}};
  for (const auto& c : cases) {
    auto a = run.attrs(c.op);
    a.ints[attr::kGeluApproximate] = c.approximate;
    run.call(c.op, {in, out}, a);
    run.call(c.backward, {ones, in, grad}, a);
    const auto y = run.values(out), g = run.values(grad);
    for (size_t i = 0; i < x.size(); ++i) {
      const long double xv = x[i], h = 1e-5L;
      EXPECT_NEAR(y[i], static_cast<double>(c.f(xv)), 1e-15 * (1 + std::fabs(y[i])))
          << c.op << x[i];
      const long double slope = (c.f(xv + h) - c.f(xv - h)) / (2 * h);
      EXPECT_NEAR(g[i], static_cast<double>(slope), 1e-9) << c.backward << " at " << x[i];
    }
  }
  // At +-Inf: the limits, not Inf * 0 = NaN.
  auto inf = run.make(DType::kF32, {2}, {-kInf, kInf});
  auto inf_out = run.empty(DType::kF32, {2});
  auto two = run.make(DType::kF32, {2}, {2, 2});
  for (const auto& c : cases) {
    auto a = run.attrs(c.op);
    a.ints[attr::kGeluApproximate] = c.approximate;
    run.call(c.op, {inf, inf_out}, a);
    EXPECT_TRUE(same_values(run.values(inf_out), {-0.0, kInf})) << c.op;
    EXPECT_TRUE(std::signbit(run.values(inf_out)[0])) << c.op;
    run.call(c.backward, {two, inf, inf_out}, a);
    EXPECT_TRUE(same_values(run.values(inf_out), {0, 2})) << c.backward;
  }
  // dx = dy * f'(x) for the remaining backward ops, with dy = 3.
  auto three = run.make(DType::kF64, {7}, std::vector<double>(7, 3.0));
  run.call("relu_backward", {three, in, grad});
  EXPECT_TRUE(same_values(run.values(grad), {0, 0, 0, 0, 3, 3, 3}));
  auto specials = run.make(DType::kF64, {7}, {NAN, INFINITY, -INFINITY, NAN, 1, 1, 1});
  run.call("relu_backward", {specials, in, grad});  // a select: x <= 0 gives 0 whatever dy
  EXPECT_TRUE(same_values(run.values(grad), {0, 0, 0, 0, 1, 1, 1}));
  run.call("sigmoid_backward", {three, in, grad});
  auto g = run.values(grad);
  for (size_t i = 0; i < x.size(); ++i) {
    const double s = 1 / (1 + std::exp(-x[i]));
    EXPECT_NEAR(g[i], 3 * s * (1 - s), 1e-15);
  }
  run.call("tanh_backward", {three, in, grad});
  g = run.values(grad);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(g[i], 3 * (1 - std::tanh(x[i]) * std::tanh(x[i])), 1e-15);
}

TEST_F(CpuKernelTest, ArbitraryStridesOnEveryTensor) {
  // a: [2, 3] transposed view of a row-major [3, 2] buffer;
  // b: [2, 3] broadcast of a [3] row (stride 0);
  // out: [2, 3] with row stride 4 inside an 8-element buffer.
  auto abuf = run.make(DType::kF32, {3, 2}, {1, 4, 2, 5, 3, 6});  // a = [[1,2,3],[4,5,6]]
  auto bbuf = run.make(DType::kF32, {3}, {10, 20, 30});
  auto obuf = run.empty(DType::kF32, {8});
  TensorView a(run.device(), abuf.buffer().handle(), DType::kF32, {2, 3}, {1, 2});
  TensorView b(run.device(), bbuf.buffer().handle(), DType::kF32, {2, 3}, {0, 1});
  TensorView out(run.device(), obuf.buffer().handle(), DType::kF32, {2, 3}, {4, 1});
  run.call("add", {a, b, out});
  EXPECT_TRUE(same_values(run.values(obuf), {11, 22, 33, NAN, 14, 25, 36, NAN}));
  // copy: strided -> contiguous, and fill into a strided view.
  auto dense = run.empty(DType::kF32, {2, 3});
  run.call("copy", {a, dense});
  EXPECT_TRUE(same_values(run.values(dense), {1, 2, 3, 4, 5, 6}));
  auto fa = run.attrs("fill");
  fa.floats[attr::kFillValue] = 0.1;
  TensorView column(run.device(), obuf.buffer().handle(), DType::kF32, {2}, {4}, 3 * 4);
  run.call("fill", {column}, fa);
  EXPECT_TRUE(same_values(run.values(obuf), {11, 22, 33, 0.1f, 14, 25, 36, 0.1f}));
}

TEST_F(CpuKernelTest, InPlaceUnaryAndBinary) {
  auto x = run.make(DType::kBF16, {3}, {1, 2, 3});
  run.call("mul", {x, x, x});
  EXPECT_TRUE(same_values(run.values(x), {1, 4, 9}));
  run.call("neg", {x, x});
  EXPECT_TRUE(same_values(run.values(x), {-1, -4, -9}));
}

TEST_F(CpuKernelTest, CastRoundsOnceAndHandlesOverflow) {
  auto x = run.make(DType::kF64, {4}, {1 + 0x1p-11 + 0x1p-40, 70000, -1e-9, NAN});
  auto h = run.empty(DType::kF16, {4});
  run.call("cast", {x, h});
  EXPECT_TRUE(same_values(run.values(h), {1 + 0x1p-10, kInf, -0.0, NAN}));
  auto b = run.empty(DType::kBF16, {4});
  run.call("cast", {x, b});
  EXPECT_TRUE(same_values(run.values(b), rounded(DType::kBF16, {1 + 0x1p-11, 70000, -1e-9, NAN})));
  auto e4 = run.empty(DType::kF8E4M3, {4});
  run.call("cast", {x, e4});
  EXPECT_TRUE(same_values(run.values(e4), {1, NAN, -0.0, NAN}));  // overflow -> NaN in e4m3
  auto back = run.empty(DType::kF32, {4});
  run.call("cast", {e4, back});
  EXPECT_TRUE(same_values(run.values(back), {1, NAN, -0.0, NAN}));
}

TEST_F(CpuKernelTest, FillRoundsTheValueToTheDtype) {
  for (DType dt : kFloatDTypes) {
    auto t = run.empty(dt, {5});
    auto a = run.attrs("fill");
    a.floats[attr::kFillValue] = 0.1;
    run.call("fill", {t}, a);
    EXPECT_TRUE(same_values(run.values(t), rounded(dt, std::vector<double>(5, 0.1))));
  }
}

TEST_F(CpuKernelTest, EmptyTensorsAreNoOps) {
  auto a = run.make(DType::kF32, {0, 3}, {});
  auto out = run.make(DType::kF32, {0, 3}, {});
  EXPECT_NO_THROW(run.call("add", {a, a, out}));
  EXPECT_NO_THROW(run.call("exp", {a, out}));
}

}  // namespace
}  // namespace polychip::testing
