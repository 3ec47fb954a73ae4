// Every op of the contract on PoCL through the HAL, checked against the
// float64 oracle with the precision suite's tolerance model; the cpu adapter
// runs the same cases against the same bounds, so a case whose bound is too
// tight for a correct implementation shows up on both.
#include <cmath>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "opencl_test_util.hpp"

namespace polychip::opencl_test {
namespace {

const DType kFloatTypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16};

struct Case {
  std::string name;
  std::string op;
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> outputs;
  polychip_op_attrs attrs;
  int64_t reduce_len;  // the longest sum behind one output element (tolerance scale)
};

HostTensor in(DType dt, Shape shape, unsigned seed, double lo = -2, double hi = 2) {
  int64_t n = element_count(shape);
  return {dt, shape, random_values(static_cast<size_t>(n), seed, lo, hi)};
}
HostTensor out(DType dt, Shape shape) { return {dt, std::move(shape), {}}; }
HostTensor ids(DType dt, Shape shape, std::vector<double> v) { return {dt, std::move(shape), v}; }

std::vector<Case> cases_for(DType t) {
  std::vector<Case> cs;
  auto add = [&](std::string name, std::string op, std::vector<HostTensor> ins,
                 std::vector<HostTensor> outs, std::function<void(polychip_op_attrs&)> set = {},
                 int64_t reduce_len = 1) {
    auto a = attrs_of(op);
    if (set) set(a);
    cs.push_back({std::move(name), op, std::move(ins), std::move(outs), a, reduce_len});
  };
  const DType f32 = DType::kF32;
  for (const char* op : {"add", "sub", "mul", "div"})
    add(op, op, {in(t, {3, 5}, 1), in(t, {3, 5}, 2)}, {out(t, {3, 5})});
  for (const char* op : {"neg", "exp", "tanh", "sigmoid", "relu", "silu"})
    add(op, op, {in(t, {4, 7}, 3)}, {out(t, {4, 7})});
  for (const char* op : {"log", "sqrt", "rsqrt"})
    add(op, op, {in(t, {4, 7}, 4, 0.05, 5)}, {out(t, {4, 7})});
  for (int approx : {0, 1}) {
    add(fmt::format("gelu/{}", approx), "gelu", {in(t, {4, 7}, 5, -6, 6)}, {out(t, {4, 7})},
        [=](auto& a) { a.ints[attr::kGeluApproximate] = approx; });
    add(fmt::format("gelu_backward/{}", approx), "gelu_backward",
        {in(t, {4, 7}, 6), in(t, {4, 7}, 7, -6, 6)}, {out(t, {4, 7})},
        [=](auto& a) { a.ints[attr::kGeluApproximate] = approx; });
  }
  for (const char* op : {"relu_backward", "silu_backward", "sigmoid_backward", "tanh_backward"})
    add(op, op, {in(t, {4, 7}, 8), in(t, {4, 7}, 9)}, {out(t, {4, 7})});
  add("fill", "fill", {}, {out(t, {3, 4})}, [](auto& a) { a.floats[attr::kFillValue] = 0.1; });
  add("copy", "copy", {in(t, {3, 4}, 10)}, {out(t, {3, 4})});
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "l2_norm"})
    for (int axis : {0, 1, -1}) {
      const Shape xs = {3, 4, 5};
      const size_t reduced = axis < 0 ? 2 : static_cast<size_t>(axis);
      Shape ys = xs;
      ys[reduced] = 1;
      add(
          fmt::format("{}/axis{}", op, axis), op, {in(t, xs, 11)}, {out(t, ys)},
          [=](auto& a) { a.ints[attr::kAxis] = axis; }, xs[reduced]);
    }
  for (DType index : {DType::kI64, DType::kI32})
    add(fmt::format("argmax/{}", dtype_name(index)), "argmax", {in(t, {3, 6}, 12)},
        {out(index, {3, 1})});
  for (const char* op : {"softmax", "log_softmax"})
    for (int axis : {1, -1})
      add(
          fmt::format("{}/axis{}", op, axis), op, {in(t, {3, 4, 5}, 13, -4, 4)},
          {out(t, {3, 4, 5})}, [=](auto& a) { a.ints[attr::kAxis] = axis; }, axis == 1 ? 4 : 5);
  add("softmax_backward", "softmax_backward", {in(t, {3, 6}, 14), in(t, {3, 6}, 15, 0, 0.3)},
      {out(t, {3, 6})}, {}, 6);
  add("log_softmax_backward", "log_softmax_backward",
      {in(t, {3, 6}, 16), in(t, {3, 6}, 17, -3, -0.5)}, {out(t, {3, 6})}, {}, 6);
  add("layernorm", "layernorm", {in(t, {6, 33}, 18), in(t, {33}, 19), in(t, {33}, 20)},
      {out(t, {6, 33}), out(f32, {6}), out(f32, {6})}, {}, 33);
  add("layernorm_backward", "layernorm_backward",
      {in(t, {6, 33}, 21), in(t, {6, 33}, 22), in(t, {33}, 23), in(f32, {6}, 24, -0.5, 0.5),
       in(f32, {6}, 25, 0.5, 2)},
      {out(t, {6, 33}), out(t, {33}), out(t, {33})}, {}, 33);
  add("rmsnorm", "rmsnorm", {in(t, {6, 33}, 26), in(t, {33}, 27)}, {out(t, {6, 33}), out(f32, {6})},
      {}, 33);
  add("rmsnorm_backward", "rmsnorm_backward",
      {in(t, {6, 33}, 28), in(t, {6, 33}, 29), in(t, {33}, 30), in(f32, {6}, 31, 0.5, 2)},
      {out(t, {6, 33}), out(t, {33})}, {}, 33);
  for (DType index : {DType::kI64, DType::kI32}) {
    auto targets = ids(index, {5}, {0, 6, 3, 2, 6});
    add(fmt::format("cross_entropy/{}", dtype_name(index)), "cross_entropy",
        {in(t, {5, 7}, 32, -3, 3), targets}, {out(f32, {5})}, {}, 7);
    add(fmt::format("cross_entropy_backward/{}", dtype_name(index)), "cross_entropy_backward",
        {in(t, {5, 7}, 33, -3, 3), targets, in(f32, {5}, 34)}, {out(t, {5, 7})}, {}, 7);
    auto tokens = ids(index, {5}, {1, 5, 1, 0, 3});
    add(fmt::format("embedding/{}", dtype_name(index)), "embedding", {tokens, in(t, {6, 4}, 35)},
        {out(t, {5, 4})});
    add(fmt::format("embedding_backward/{}", dtype_name(index)), "embedding_backward",
        {tokens, in(t, {5, 4}, 36)}, {out(t, {6, 4})}, {}, 5);
  }
  for (int inverse : {0, 1})
    add(fmt::format("rotary_embedding/{}", inverse), "rotary_embedding",
        {in(t, {3, 2, 4}, 37), in(f32, {3, 2}, 38, -1, 1), in(f32, {3, 2}, 39, -1, 1)},
        {out(t, {3, 2, 4})}, [=](auto& a) { a.ints[attr::kInverse] = inverse; });
  for (int causal : {1, 0}) {
    Shape s = {2, 2, 5, 4};
    add(
        fmt::format("attention/causal{}", causal), "attention",
        {in(t, s, 40), in(t, s, 41), in(t, s, 42)}, {out(t, s), out(f32, {2, 2, 5})},
        [=](auto& a) {
          a.ints[attr::kCausal] = causal;
          a.floats[attr::kScale] = 0.5;
        },
        5 + 4);
  }
  add("adamw", "adamw",
      {in(f32, {10}, 43), in(t, {10}, 44), in(f32, {10}, 45), in(f32, {10}, 46, 0, 1)},
      {out(f32, {10}), out(f32, {10}), out(f32, {10})}, [](auto& a) { a.ints[attr::kStep] = 3; });
  struct G {
    int ta, tb;
    double beta;
    Shape a, b, c;
  };
  for (const G& g : {G{0, 0, 0, {7, 13}, {13, 9}, {7, 9}}, G{1, 0, 0.5, {13, 7}, {13, 9}, {7, 9}},
                     G{0, 1, 1, {70, 37}, {66, 37}, {70, 66}},
                     G{1, 1, 0, {2, 37, 70}, {2, 66, 37}, {2, 70, 66}}})
    add(
        fmt::format("gemm/ta{}tb{}beta{}", g.ta, g.tb, g.beta), "gemm",
        {in(t, g.a, 47), in(t, g.b, 48), in(t, g.c, 49)}, {out(t, g.c)},
        [=](auto& a) {
          a.ints[attr::kTransA] = g.ta;
          a.ints[attr::kTransB] = g.tb;
          a.floats[attr::kAlpha] = 1.5;
          a.floats[attr::kBeta] = g.beta;
        },
        g.ta ? g.a[g.a.size() - 2] : g.a.back());
  return cs;
}

class OpenclVsOracle : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    std::string why;
    auto dev = opencl_device(&why);
    if (!dev) GTEST_SKIP() << why;
    cl_ = *dev;
    cpu_ = test_runtime().device("cpu");
  }
  Device cl_, cpu_;
};

TEST_P(OpenclVsOracle, EveryOpMatchesTheOracleAsTheCpuAdapterDoes) {
  DType t = GetParam();
  Runtime& rt = test_runtime();
  int compared = 0;
  for (const Case& c : cases_for(t)) {
    SCOPED_TRACE(c.name + " " + std::string(dtype_name(t)));
    OpRunner cpu(rt, cpu_), ocl(rt, cl_);
    EXPECT_TRUE(matches_oracle(c.op, c.inputs, c.outputs,
                               cpu.run(c.op, c.inputs, c.outputs, c.attrs), c.attrs, c.reduce_len))
        << "cpu adapter";
    EXPECT_TRUE(matches_oracle(c.op, c.inputs, c.outputs,
                               ocl.run(c.op, c.inputs, c.outputs, c.attrs), c.attrs, c.reduce_len))
        << "opencl";
    ++compared;
  }
  EXPECT_GT(compared, 60);
}

INSTANTIATE_TEST_SUITE_P(AllFloatDTypes, OpenclVsOracle, ::testing::ValuesIn(kFloatTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace polychip::opencl_test
