// Argument checking, op by op: every op of the contract is called through
// Dispatcher::call with a valid set of tensors, then with one thing wrong at
// a time (tensor count, dtype, shape, negative stride, aliasing, missing
// memory, device placement, attribute, unknown op). Each must throw a
// polychip::Error naming the argument, never crash (the sanitizer build
// runs this).
#include <memory>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "device_io.hpp"
#include "polychip/hal.hpp"
#include "precision/oracle/oracle.hpp"
#include "problem.hpp"

namespace polychip::precision {
namespace {

// A small valid case for every op.
std::string small_case(const OpSpec& op) {
  std::string_view f = op.family, name = op.name;
  std::string dims = "6";
  if (name == "gemm")
    dims = "3x4x5";
  else if (f == "reduction" || f == "softmax")
    dims = "3x4";
  else if (f == "norm")
    dims = "3x8";
  else if (f == "loss")
    dims = "3x5";
  else if (f == "embedding")
    dims = "4x6x3";
  else if (f == "rotary")
    dims = "2x2x4";
  else if (f == "attention")
    dims = "1x2x3x4";
  std::string variant = name == "cast" ? "/to=f16" : "";
  return fmt::format("{}/f32/{}{}/seed=1", op.name, dims, variant);
}

struct BadAttr {
  const char* op;
  int slot;
  bool is_float;
  double value;
  const char* names;  // what the message must contain
};
const BadAttr kBadAttrs[] = {
    {"gemm", attr::kMathMode, false, 7, "math_mode"},
    {"gemm", attr::kTransA, false, 2, "trans_a"},
    {"gelu", attr::kGeluApproximate, false, 7, "approximate"},
    {"gelu_backward", attr::kGeluApproximate, false, -1, "approximate"},
    {"rotary_embedding", attr::kInverse, false, 2, "inverse"},
    {"attention", attr::kCausal, false, 3, "causal"},
    {"attention_backward", attr::kCausal, false, -1, "causal"},
    {"reduce_sum", attr::kAxis, false, 5, "axis"},
    {"argmax", attr::kAxis, false, -3, "axis"},
    {"softmax", attr::kAxis, false, 2, "axis"},
    {"log_softmax_backward", attr::kAxis, false, -9, "axis"},
    {"layernorm", attr::kEps, true, 0, "eps"},
    {"rmsnorm", attr::kEps, true, -1, "eps"},
    {"attention", attr::kScale, true, 0, "scale"},
    {"attention_backward", attr::kScale, true, -1, "scale"},
    {"adamw", attr::kStep, false, 0, "step"},
    {"adamw", attr::kBeta1, true, 1.5, "beta1"},
    {"adamw", attr::kAdamEps, true, 0, "eps"},
};

class ArgumentCheck : public ::testing::TestWithParam<std::string> {
 protected:
  static RuntimeOptions options() {
    RuntimeOptions o;
    o.builtin_adapters = builtin_adapter_entries();
    o.selected_adapters = std::vector<std::string>{"cpu", "sim"};
    return o;
  }
  ArgumentCheck() : runtime_(options()), device_(runtime_.device("cpu")), stream_(device_) {
    problem_ = build_problem(parse_case_id(small_case(*find_op(GetParam()))), kOracle);
    for (const auto& t : problem_.inputs)
      tensors_.push_back(std::make_unique<DeviceTensor>(device_, t, false, true));
    for (const auto& t : problem_.outputs)
      tensors_.push_back(std::make_unique<DeviceTensor>(device_, t, false, false));
    for (const auto& t : tensors_) views_.push_back(t->view());
  }

  // The call must throw an Error with `code` whose message contains `what`.
  void expect_rejected(std::string_view op, const std::vector<TensorView>& views,
                       const polychip_op_attrs& attrs, StatusCode code, const std::string& what,
                       const char* case_name) {
    SCOPED_TRACE(fmt::format("{}: {}", GetParam(), case_name));
    try {
      runtime_.dispatcher().call(op, views, attrs, stream_);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(e.message().find(what), std::string::npos)
          << "message does not name '" << what << "': " << e.message();
    }
  }
  std::string name(size_t k) const { return fmt::format("'{}'", problem_.op->tensors[k].name); }
  TensorView with(const TensorView& v, DType dt, Shape shape, Shape strides, uint64_t offset) {
    return TensorView(v.device(), v.memory(), dt, std::move(shape), std::move(strides), offset);
  }

  Runtime runtime_;
  Device device_;
  Stream stream_;
  Problem problem_;
  std::vector<std::unique_ptr<DeviceTensor>> tensors_;
  std::vector<TensorView> views_;
};

TEST_P(ArgumentCheck, ValidCallRuns) {
  EXPECT_NO_THROW(runtime_.dispatcher().call(GetParam(), views_, problem_.attrs, stream_));
}

TEST_P(ArgumentCheck, WrongTensorCount) {
  auto fewer = views_;
  fewer.pop_back();
  expect_rejected(GetParam(), fewer, problem_.attrs, StatusCode::kInvalidArgument,
                  fmt::format("takes {} tensors", views_.size()), "one tensor missing");
  auto more = views_;
  more.push_back(views_.back());
  expect_rejected(GetParam(), more, problem_.attrs, StatusCode::kInvalidArgument,
                  fmt::format("got {}", more.size()), "one tensor too many");
}

TEST_P(ArgumentCheck, WrongDtype) {
  auto v = views_;
  const auto& t = v[0];
  // f32 -> i8 for floating tensors, index tensors -> f32: both illegal.
  DType bad = is_floating(t.dtype()) ? DType::kI8 : DType::kF32;
  v[0] = with(t, bad, t.shape(), t.strides(), t.byte_offset());
  expect_rejected(GetParam(), v, problem_.attrs, StatusCode::kInvalidArgument, name(0),
                  "first tensor has a wrong dtype");
}

TEST_P(ArgumentCheck, WrongShape) {
  if (GetParam() == "fill") GTEST_SKIP() << "fill's only tensor may have any shape";
  auto v = views_;
  const size_t last = v.size() - 1;
  Shape shape = v[last].shape(), strides = v[last].strides();
  shape.insert(shape.begin(), 1);  // one more dimension: same elements
  strides.insert(strides.begin(),
                 strides.empty() ? 1 : strides[0] * std::max<int64_t>(1, v[last].shape()[0]));
  v[last] = with(v[last], v[last].dtype(), shape, strides, v[last].byte_offset());
  expect_rejected(GetParam(), v, problem_.attrs, StatusCode::kInvalidArgument, "'",
                  "last tensor has an extra dimension");
}

TEST_P(ArgumentCheck, NegativeStride) {
  auto v = views_;
  Shape strides = v[0].strides();
  strides.back() = -1;
  v[0] = with(v[0], v[0].dtype(), v[0].shape(), strides, v[0].byte_offset());
  expect_rejected(GetParam(), v, problem_.attrs, StatusCode::kInvalidArgument, name(0),
                  "negative stride");
}

TEST_P(ArgumentCheck, OutputOverlapsAnInput) {
  if (problem_.inputs.empty()) GTEST_SKIP() << "no input to overlap";
  auto v = views_;
  const size_t out = problem_.inputs.size();
  const auto& in = v[0];
  // The output starts one element into input 0's memory: a partial overlap.
  uint64_t shift = dtype_size(in.dtype());
  v[out] = TensorView(in.device(), in.memory(), v[out].dtype(), v[out].shape(), v[out].strides(),
                      in.byte_offset() + shift);
  expect_rejected(GetParam(), v, problem_.attrs, StatusCode::kInvalidArgument, "overlaps",
                  "output overlaps input 0");
}

TEST_P(ArgumentCheck, MissingMemory) {
  auto v = views_;
  v[0] = TensorView(v[0].device(), nullptr, v[0].dtype(), v[0].shape(), v[0].strides(), 0);
  expect_rejected(GetParam(), v, problem_.attrs, StatusCode::kInvalidArgument, name(0),
                  "first tensor has no memory");
}

TEST_P(ArgumentCheck, TensorOnAnotherDevice) {
  auto sim = runtime_.find_device_type("sim.faithful");
  if (!sim) GTEST_SKIP() << "no sim adapter built";
  HostTensor host = problem_.inputs.empty() ? problem_.outputs[0] : problem_.inputs[0];
  if (host.values.empty()) host.values.assign(static_cast<size_t>(element_count(host.shape)), 0.0);
  DeviceTensor elsewhere(*sim, host, false, true);
  auto v = views_;
  v[0] = elsewhere.view();
  expect_rejected(GetParam(), v, problem_.attrs, StatusCode::kInvalidArgument, name(0),
                  "first tensor on sim.faithful, stream on cpu");
}

TEST_P(ArgumentCheck, BadAttributes) {
  int checked = 0;
  for (const auto& b : kBadAttrs) {
    if (GetParam() != b.op) continue;
    polychip_op_attrs attrs = problem_.attrs;
    if (b.is_float)
      attrs.floats[b.slot] = b.value;
    else
      attrs.ints[b.slot] = static_cast<int64_t>(b.value);
    expect_rejected(GetParam(), views_, attrs, StatusCode::kInvalidArgument, b.names, b.names);
    ++checked;
  }
  if (!checked) GTEST_SKIP() << "no attribute with a range to violate";
}

TEST_P(ArgumentCheck, UnknownOpIsNotFound) {
  expect_rejected(GetParam() + "_v2", views_, problem_.attrs, StatusCode::kNotFound,
                  GetParam() + "_v2", "unknown op");
}

std::vector<std::string> all_ops() {
  std::vector<std::string> names;
  for (const auto& op : op_contract()) names.push_back(op.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(EveryOp, ArgumentCheck, ::testing::ValuesIn(all_ops()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace polychip::precision
