// Every validation rule of the op contract, one expectation per rule: a valid
// call per op, then per rule an edit that breaks exactly that rule (refused,
// with the message naming the argument) and the boundary that must still be
// accepted. The dispatcher runs these rules before any adapter code, so a
// rule that silently accepts lets a bad call crash inside a vendor kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "op_contract_test_helpers.hpp"
#include "polychip/op_contract.hpp"

namespace polychip {
namespace {

using testing::fake_memory;
using testing::tensor;

constexpr double kTiny = std::numeric_limits<double>::denorm_min();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A call under test: the op, its tensors and its attributes.
struct Call {
  const OpSpec* op;
  std::vector<polychip_tensor> t;
  polychip_op_attrs attrs;

  std::string validate() const { return validate_call(*op, {t, &attrs}); }
  int64_t& i(int slot) { return attrs.ints[slot]; }
  double& f(int slot) { return attrs.floats[slot]; }
  // Tensor k gets a new row-major shape; dtype and memory stay.
  void reshape(size_t k, std::vector<int64_t> shape) {
    t[k] = tensor(static_cast<DType>(t[k].dtype), std::move(shape), t[k].memory);
  }
  void strides(size_t k, std::vector<int64_t> s) { std::copy(s.begin(), s.end(), t[k].strides); }
  // Tensor k moves into tensor `into`'s memory, at byte `offset`.
  void share(size_t k, size_t into, uint64_t offset) {
    t[k].memory = t[into].memory;
    t[k].byte_offset = offset;
  }
  // Shape and stride entries past a tensor's rank are not part of it; the
  // ABI does not promise zeros there. Tensor k gets size + k, so that no two
  // tensors agree there by chance.
  void junk_past_rank(int64_t size, int64_t stride) {
    for (size_t k = 0; k < t.size(); ++k)
      for (int d = t[k].rank; d < POLYCHIP_MAX_RANK; ++d) {
        t[k].shape[d] = size + static_cast<int64_t>(k);
        t[k].strides[d] = stride;
      }
  }
};

// The shapes of a valid call per op, tensors in contract order. Sizes differ
// from each other so that a rule reading the wrong dimension shows.
const std::vector<std::vector<int64_t>>& valid_shapes(std::string_view op) {
  static const std::vector<std::pair<std::string_view, std::vector<std::vector<int64_t>>>> kShapes =
      {
          {"gemm", {{4, 3}, {3, 5}, {4, 5}, {4, 5}}},
          {"add", {{2, 3}, {2, 3}, {2, 3}}},
          {"exp", {{2, 3}, {2, 3}}},
          {"gelu", {{2, 3}, {2, 3}}},
          {"relu_backward", {{2, 3}, {2, 3}, {2, 3}}},
          {"gelu_backward", {{2, 3}, {2, 3}, {2, 3}}},
          {"cast", {{2, 3}, {2, 3}}},
          {"fill", {{2, 3}}},
          {"reduce_sum", {{2, 3}, {2, 1}}},
          {"reduce_max", {{2, 3}, {2, 1}}},
          {"argmax", {{2, 3}, {2, 1}}},
          {"softmax", {{2, 3}, {2, 3}}},
          {"softmax_backward", {{2, 3}, {2, 3}, {2, 3}}},
          {"layernorm", {{2, 4}, {4}, {4}, {2, 4}, {2}, {2}}},
          {"layernorm_backward", {{2, 4}, {2, 4}, {4}, {2}, {2}, {2, 4}, {4}, {4}}},
          {"rmsnorm", {{2, 4}, {4}, {2, 4}, {2}}},
          {"rmsnorm_backward", {{2, 4}, {2, 4}, {4}, {2}, {2, 4}, {4}}},
          {"cross_entropy", {{2, 5}, {2}, {2}}},
          {"cross_entropy_backward", {{2, 5}, {2}, {2}, {2, 5}}},
          {"embedding", {{3}, {10, 4}, {3, 4}}},
          {"embedding_backward", {{3}, {3, 4}, {10, 4}}},
          {"rotary_embedding", {{3, 2, 4}, {3, 2}, {3, 2}, {3, 2, 4}}},
          {"attention", {{2, 3, 5, 4}, {2, 3, 5, 4}, {2, 3, 5, 4}, {2, 3, 5, 4}, {2, 3, 5}}},
          {"attention_backward",
           {{2, 3, 5, 4},
            {2, 3, 5, 4},
            {2, 3, 5, 4},
            {2, 3, 5, 4},
            {2, 3, 5, 4},
            {2, 3, 5},
            {2, 3, 5, 4},
            {2, 3, 5, 4},
            {2, 3, 5, 4}}},
          {"adamw", {{6}, {6}, {6}, {6}, {6}, {6}, {6}}},
      };
  for (const auto& [name, shapes] : kShapes)
    if (name == op) return shapes;
  throw std::invalid_argument("no valid call for " + std::string(op));
}

// T is f16 so that a role mix-up (T taken for f32 or the reverse) shows;
// cast's two float tensors differ to show they are independent of T.
DType valid_dtype(const TensorSpec& spec, size_t k) {
  switch (spec.dtype_role) {
    case DTypeRole::kT:
      return DType::kF16;
    case DTypeRole::kF32:
      return DType::kF32;
    case DTypeRole::kIndex:
      return DType::kI64;
    case DTypeRole::kAnyFloat:
      return k == 0 ? DType::kF32 : DType::kBF16;
  }
  return DType::kF32;
}

// Each tensor in a memory of its own, default attributes.
Call valid_call(std::string_view op_name) {
  const OpSpec* op = find_op(op_name);
  Call c{op, {}, default_attrs(*op)};
  const auto& shapes = valid_shapes(op_name);
  for (size_t k = 0; k < shapes.size(); ++k)
    c.t.push_back(
        tensor(valid_dtype(op->tensors[k], k), shapes[k], fake_memory(static_cast<int>(k) + 1)));
  return c;
}

struct Rule {
  const char* name;  // the test's name: what is broken, refused or accepted
  const char* op;
  void (*edit)(Call&);  // applied to the op's valid call
  const char* error;    // a part of the expected message; "" = accepted
};

void PrintTo(const Rule& r, std::ostream* os) { *os << r.op << " " << r.name; }

class OpContractRule : public ::testing::TestWithParam<Rule> {};

TEST_P(OpContractRule, Holds) {
  const Rule& r = GetParam();
  Call c = valid_call(r.op);
  r.edit(c);
  std::string got = c.validate();
  if (*r.error == '\0')
    EXPECT_EQ(got, "") << "refused";
  else
    EXPECT_NE(got.find(r.error), std::string::npos)
        << "expected a message containing: " << r.error << "\ngot: " << got;
}

std::string rule_name(const ::testing::TestParamInfo<Rule>& info) { return info.param.name; }

void as_is(Call&) {}

// gemm valid call: a [4, 3], b [3, 5], c [4, 5], y [4, 5].
void batched(Call& c) {
  c.reshape(0, {2, 4, 3});
  c.reshape(1, {2, 3, 5});
  c.reshape(2, {2, 4, 5});
  c.reshape(3, {2, 4, 5});
}

const Rule kGemm[] = {
    {"valid", "gemm", as_is, ""},
    {"rank_3_batch_accepted", "gemm", batched, ""},
    {"rank_1_refused", "gemm", [](Call& c) { c.reshape(0, {3}); },
     "'a' must have rank 2 or 3, has 1"},
    {"rank_4_refused", "gemm",
     [](Call& c) {
       c.reshape(0, {1, 2, 4, 3});
     },
     "'a' must have rank 2 or 3, has 4"},
    {"b_rank_differs_refused", "gemm",
     [](Call& c) {
       c.reshape(1, {1, 3, 5});
     },
     "'a', 'b', 'c' and 'y' must all have the same rank"},
    {"c_rank_differs_refused", "gemm",
     [](Call& c) {
       c.reshape(2, {1, 4, 5});
     },
     "'a', 'b', 'c' and 'y' must all have the same rank"},
    {"y_rank_differs_refused", "gemm",
     [](Call& c) {
       c.reshape(3, {1, 4, 5});
     },
     "'a', 'b', 'c' and 'y' must all have the same rank"},
    {"b_batch_differs_refused", "gemm",
     [](Call& c) {
       batched(c);
       c.reshape(1, {3, 3, 5});
     },
     "batch dimensions of 'a', 'b', 'c', 'y' differ"},
    {"c_batch_differs_refused", "gemm",
     [](Call& c) {
       batched(c);
       c.reshape(2, {3, 4, 5});
     },
     "batch dimensions of 'a', 'b', 'c', 'y' differ"},
    {"y_batch_differs_refused", "gemm",
     [](Call& c) {
       batched(c);
       c.reshape(3, {3, 4, 5});
     },
     "batch dimensions of 'a', 'b', 'c', 'y' differ"},
    {"trans_a_accepted", "gemm",
     [](Call& c) {
       c.i(attr::kTransA) = 1;
       c.reshape(0, {3, 4});
     },
     ""},
    {"trans_b_accepted", "gemm",
     [](Call& c) {
       c.i(attr::kTransB) = 1;
       c.reshape(1, {5, 3});
     },
     ""},
    {"batched_trans_a_and_b_accepted", "gemm",
     [](Call& c) {
       batched(c);
       c.i(attr::kTransA) = c.i(attr::kTransB) = 1;
       c.reshape(0, {2, 3, 4});
       c.reshape(1, {2, 5, 3});
     },
     ""},
    {"trans_a_2_refused", "gemm", [](Call& c) { c.i(attr::kTransA) = 2; },
     "attribute 'trans_a' = 2 must be 0 or 1"},
    {"trans_a_minus_1_refused", "gemm", [](Call& c) { c.i(attr::kTransA) = -1; },
     "attribute 'trans_a' = -1 must be 0 or 1"},
    {"trans_b_2_refused", "gemm", [](Call& c) { c.i(attr::kTransB) = 2; },
     "attribute 'trans_b' = 2 must be 0 or 1"},
    {"math_mode_1_accepted", "gemm", [](Call& c) { c.i(attr::kMathMode) = 1; }, ""},
    {"math_mode_2_accepted", "gemm", [](Call& c) { c.i(attr::kMathMode) = 2; }, ""},
    {"math_mode_3_refused", "gemm", [](Call& c) { c.i(attr::kMathMode) = 3; },
     "attribute 'math_mode' = 3 is not 0, 1 or 2"},
    {"math_mode_minus_1_refused", "gemm", [](Call& c) { c.i(attr::kMathMode) = -1; },
     "attribute 'math_mode' = -1 is not 0, 1 or 2"},
    {"inner_dimensions_differ_refused", "gemm",
     [](Call& c) {
       c.reshape(1, {2, 5});
     },
     "inner dimensions differ: 'a' gives K = 3, 'b' gives K = 2"},
    // The flag, not the shapes, says which dimension of a is K.
    {"trans_a_without_transposed_a_refused", "gemm", [](Call& c) { c.i(attr::kTransA) = 1; },
     "inner dimensions differ: 'a' gives K = 4, 'b' gives K = 3"},
    {"c_rows_differ_refused", "gemm",
     [](Call& c) {
       c.reshape(2, {5, 5});
     },
     "'c' has shape [5, 5] but must be [4, 5]"},
    {"c_columns_differ_refused", "gemm",
     [](Call& c) {
       c.reshape(2, {4, 6});
     },
     "'c' has shape [4, 6] but must be [4, 5]"},
    {"y_rows_differ_refused", "gemm",
     [](Call& c) {
       c.reshape(3, {5, 5});
     },
     "'y' has shape [5, 5] but must be [4, 5]"},
    {"y_columns_differ_refused", "gemm",
     [](Call& c) {
       c.reshape(3, {4, 6});
     },
     "'y' has shape [4, 6] but must be [4, 5]"},
    {"batched_y_columns_differ_refused", "gemm",
     [](Call& c) {
       batched(c);
       c.reshape(3, {2, 4, 6});
     },
     "'y' has shape [2, 4, 6] but must be [2, 4, 5]"},
};
INSTANTIATE_TEST_SUITE_P(Gemm, OpContractRule, ::testing::ValuesIn(kGemm), rule_name);

const Rule kElementwise[] = {
    {"add_valid", "add", as_is, ""},
    {"add_b_shape_differs_refused", "add",
     [](Call& c) {
       c.reshape(1, {2, 4});
     },
     "'b' has shape [2, 4] but 'a' has shape [2, 3]"},
    {"add_out_shape_differs_refused", "add",
     [](Call& c) {
       c.reshape(2, {3, 2});
     },
     "'out' has shape [3, 2] but 'a' has shape [2, 3]"},
    // Equal leading sizes must not hide a rank difference either way.
    {"add_out_rank_one_more_refused", "add",
     [](Call& c) {
       c.reshape(2, {2, 3, 1});
     },
     "'out' has shape [2, 3, 1]"},
    {"add_out_rank_one_less_refused", "add", [](Call& c) { c.reshape(2, {2}); },
     "'out' has shape [2]"},
    {"exp_y_shape_differs_refused", "exp",
     [](Call& c) {
       c.reshape(1, {2, 4});
     },
     "'y' has shape [2, 4] but 'x' has shape [2, 3]"},
    {"relu_backward_x_shape_differs_refused", "relu_backward",
     [](Call& c) {
       c.reshape(1, {2, 4});
     },
     "'x' has shape [2, 4] but 'dy' has shape [2, 3]"},
    {"relu_backward_dx_shape_differs_refused", "relu_backward",
     [](Call& c) {
       c.reshape(2, {2, 4});
     },
     "'dx' has shape [2, 4] but 'dy' has shape [2, 3]"},
    {"gelu_approximate_1_accepted", "gelu", [](Call& c) { c.i(attr::kGeluApproximate) = 1; }, ""},
    {"gelu_approximate_2_refused", "gelu", [](Call& c) { c.i(attr::kGeluApproximate) = 2; },
     "attribute 'approximate' = 2 must be 0 or 1"},
    {"gelu_approximate_minus_1_refused", "gelu", [](Call& c) { c.i(attr::kGeluApproximate) = -1; },
     "attribute 'approximate' = -1 must be 0 or 1"},
    {"gelu_y_shape_differs_refused", "gelu",
     [](Call& c) {
       c.reshape(1, {2, 4});
     },
     "'y' has shape [2, 4]"},
    {"gelu_backward_approximate_1_accepted", "gelu_backward",
     [](Call& c) { c.i(attr::kGeluApproximate) = 1; }, ""},
    {"gelu_backward_approximate_2_refused", "gelu_backward",
     [](Call& c) { c.i(attr::kGeluApproximate) = 2; },
     "attribute 'approximate' = 2 must be 0 or 1"},
    {"gelu_backward_dx_shape_differs_refused", "gelu_backward",
     [](Call& c) {
       c.reshape(2, {2, 4});
     },
     "'dx' has shape [2, 4]"},
    {"cast_f32_to_bf16_valid", "cast", as_is, ""},
    {"cast_f8e4m3_to_f64_accepted", "cast",
     [](Call& c) {
       c.t[0].dtype = POLYCHIP_DTYPE_F8E4M3;
       c.t[1].dtype = POLYCHIP_DTYPE_F64;
     },
     ""},
    {"cast_from_i32_refused", "cast", [](Call& c) { c.t[0].dtype = POLYCHIP_DTYPE_I32; },
     "'x' has dtype i32, which cast does not support"},
    {"cast_y_shape_differs_refused", "cast",
     [](Call& c) {
       c.reshape(1, {3, 2});
     },
     "'y' has shape [3, 2]"},
    {"fill_any_shape_accepted", "fill",
     [](Call& c) {
       c.reshape(0, {7, 1, 5});
     },
     ""},
};
INSTANTIATE_TEST_SUITE_P(Elementwise, OpContractRule, ::testing::ValuesIn(kElementwise), rule_name);

// reduce_sum / argmax valid call: x [2, 3], y [2, 1], axis -1.
const Rule kReduction[] = {
    {"reduce_sum_valid", "reduce_sum", as_is, ""},
    {"axis_rank_minus_1_accepted", "reduce_sum", [](Call& c) { c.i(attr::kAxis) = 1; }, ""},
    {"axis_0_accepted", "reduce_sum",
     [](Call& c) {
       c.i(attr::kAxis) = 0;
       c.reshape(1, {1, 3});
     },
     ""},
    {"axis_minus_rank_accepted", "reduce_sum",
     [](Call& c) {
       c.i(attr::kAxis) = -2;
       c.reshape(1, {1, 3});
     },
     ""},
    {"axis_rank_refused", "reduce_sum", [](Call& c) { c.i(attr::kAxis) = 2; },
     "attribute 'axis' = 2 is out of range for rank 2"},
    {"axis_minus_rank_minus_1_refused", "reduce_sum", [](Call& c) { c.i(attr::kAxis) = -3; },
     "attribute 'axis' = -3 is out of range for rank 2"},
    {"rank_0_refused", "reduce_sum",
     [](Call& c) {
       c.reshape(0, {});
       c.reshape(1, {});
     },
     "'x' must have rank >= 1"},
    {"y_keeps_the_reduced_dimension_refused", "reduce_sum",
     [](Call& c) {
       c.reshape(1, {2, 3});
     },
     "'y' has shape [2, 3] but must be [2, 3] with dimension 1 set to 1"},
    {"y_other_dimension_differs_refused", "reduce_sum",
     [](Call& c) {
       c.reshape(1, {3, 1});
     },
     "'y' has shape [3, 1] but must be [2, 3] with dimension 1 set to 1"},
    {"y_rank_one_less_refused", "reduce_sum", [](Call& c) { c.reshape(1, {2}); },
     "'y' has shape [2] but must be"},
    {"y_rank_one_more_refused", "reduce_sum",
     [](Call& c) {
       c.reshape(1, {2, 1, 1});
     },
     "'y' has shape [2, 1, 1] but must be"},
    // A negative axis counts from the end: -2 of rank 2 is dimension 0.
    {"negative_axis_reduces_from_the_end", "reduce_sum", [](Call& c) { c.i(attr::kAxis) = -2; },
     "with dimension 0 set to 1"},
    // Shape entries past the rank are not part of the tensor.
    {"junk_past_rank_ignored", "reduce_sum", [](Call& c) { c.junk_past_rank(7, 1); }, ""},
    // The sum of nothing is 0 and the max of nothing -Inf: both defined.
    {"reduce_sum_of_empty_axis_accepted", "reduce_sum",
     [](Call& c) {
       c.reshape(0, {2, 0});
     },
     ""},
    {"reduce_max_of_empty_axis_accepted", "reduce_max",
     [](Call& c) {
       c.reshape(0, {2, 0});
     },
     ""},
    {"argmax_valid", "argmax", as_is, ""},
    {"argmax_i32_accepted", "argmax", [](Call& c) { c.t[1].dtype = POLYCHIP_DTYPE_I32; }, ""},
    {"argmax_f32_refused", "argmax", [](Call& c) { c.t[1].dtype = POLYCHIP_DTYPE_F32; },
     "'y' must be i64 or i32, is f32"},
    // The first maximum of nothing has no index.
    {"argmax_of_empty_axis_refused", "argmax",
     [](Call& c) {
       c.reshape(0, {2, 0});
     },
     "'x' is empty along 'axis': argmax is undefined"},
    {"argmax_i32_of_empty_axis_refused", "argmax",
     [](Call& c) {
       c.reshape(0, {2, 0});
       c.t[1].dtype = POLYCHIP_DTYPE_I32;
     },
     "'x' is empty along 'axis': argmax is undefined"},
    // No rows: nothing to compute, whatever the reduced axis holds.
    {"argmax_empty_along_other_axis_accepted", "argmax",
     [](Call& c) {
       c.reshape(0, {0, 3});
       c.reshape(1, {0, 1});
     },
     ""},
};
INSTANTIATE_TEST_SUITE_P(Reduction, OpContractRule, ::testing::ValuesIn(kReduction), rule_name);

// softmax valid call: x [2, 3], y [2, 3], axis -1.
const Rule kSoftmax[] = {
    {"softmax_valid", "softmax", as_is, ""},
    {"axis_rank_minus_1_accepted", "softmax", [](Call& c) { c.i(attr::kAxis) = 1; }, ""},
    {"axis_minus_rank_accepted", "softmax", [](Call& c) { c.i(attr::kAxis) = -2; }, ""},
    {"axis_rank_refused", "softmax", [](Call& c) { c.i(attr::kAxis) = 2; },
     "attribute 'axis' = 2 is out of range for rank 2"},
    {"axis_minus_rank_minus_1_refused", "softmax", [](Call& c) { c.i(attr::kAxis) = -3; },
     "attribute 'axis' = -3 is out of range for rank 2"},
    {"rank_0_refused", "softmax",
     [](Call& c) {
       c.reshape(0, {});
       c.reshape(1, {});
     },
     "'x' must have rank >= 1"},
    {"y_shape_differs_refused", "softmax",
     [](Call& c) {
       c.reshape(1, {2, 4});
     },
     "'y' has shape [2, 4] but 'x' has shape [2, 3]"},
    {"backward_valid", "softmax_backward", as_is, ""},
    {"backward_axis_rank_refused", "softmax_backward", [](Call& c) { c.i(attr::kAxis) = 2; },
     "attribute 'axis' = 2 is out of range for rank 2"},
    {"backward_y_shape_differs_refused", "softmax_backward",
     [](Call& c) {
       c.reshape(1, {2, 4});
     },
     "'y' has shape [2, 4] but 'dy' has shape [2, 3]"},
    {"backward_dx_shape_differs_refused", "softmax_backward",
     [](Call& c) {
       c.reshape(2, {2, 4});
     },
     "'dx' has shape [2, 4] but 'dy' has shape [2, 3]"},
};
INSTANTIATE_TEST_SUITE_P(Softmax, OpContractRule, ::testing::ValuesIn(kSoftmax), rule_name);

// N = 2 rows of D = 4.
const Rule kNorm[] = {
    {"layernorm_valid", "layernorm", as_is, ""},
    {"layernorm_x_rank_1_refused", "layernorm", [](Call& c) { c.reshape(0, {4}); },
     "'x' must have rank 2 [N, D], has 1"},
    {"layernorm_x_rank_3_refused", "layernorm",
     [](Call& c) {
       c.reshape(0, {1, 2, 4});
     },
     "'x' must have rank 2 [N, D], has 3"},
    {"layernorm_gamma_refused", "layernorm", [](Call& c) { c.reshape(1, {2}); },
     "'gamma' has shape [2] but must be [4]"},
    {"layernorm_gamma_rank_2_refused", "layernorm",
     [](Call& c) {
       c.reshape(1, {4, 1});
     },
     "'gamma' has shape [4, 1] but must be [4]"},
    {"layernorm_beta_refused", "layernorm", [](Call& c) { c.reshape(2, {5}); },
     "'beta' has shape [5] but must be [4]"},
    {"layernorm_y_refused", "layernorm",
     [](Call& c) {
       c.reshape(3, {4, 2});
     },
     "'y' has shape [4, 2] but must be [2, 4]"},
    {"layernorm_mean_refused", "layernorm", [](Call& c) { c.reshape(4, {4}); },
     "'mean' has shape [4] but must be [2]"},
    {"layernorm_rstd_refused", "layernorm", [](Call& c) { c.reshape(5, {3}); },
     "'rstd' has shape [3] but must be [2]"},
    {"layernorm_eps_smallest_positive_accepted", "layernorm",
     [](Call& c) { c.f(attr::kEps) = kTiny; }, ""},
    {"layernorm_eps_0_refused", "layernorm", [](Call& c) { c.f(attr::kEps) = 0; },
     "attribute 'eps' must be > 0"},
    {"layernorm_eps_negative_refused", "layernorm", [](Call& c) { c.f(attr::kEps) = -1e-5; },
     "attribute 'eps' must be > 0"},
    {"layernorm_eps_nan_refused", "layernorm", [](Call& c) { c.f(attr::kEps) = kNaN; },
     "attribute 'eps' must be > 0"},
    {"layernorm_backward_valid", "layernorm_backward", as_is, ""},
    {"layernorm_backward_x_rank_1_refused", "layernorm_backward",
     [](Call& c) { c.reshape(1, {4}); }, "'x' must have rank 2 [N, D]"},
    {"layernorm_backward_dy_refused", "layernorm_backward",
     [](Call& c) {
       c.reshape(0, {4, 2});
     },
     "'dy' has shape [4, 2] but must be [2, 4]"},
    {"layernorm_backward_gamma_refused", "layernorm_backward", [](Call& c) { c.reshape(2, {2}); },
     "'gamma' has shape [2] but must be [4]"},
    {"layernorm_backward_mean_refused", "layernorm_backward", [](Call& c) { c.reshape(3, {4}); },
     "'mean' has shape [4] but must be [2]"},
    {"layernorm_backward_rstd_refused", "layernorm_backward", [](Call& c) { c.reshape(4, {4}); },
     "'rstd' has shape [4] but must be [2]"},
    {"layernorm_backward_dx_refused", "layernorm_backward",
     [](Call& c) {
       c.reshape(5, {2, 5});
     },
     "'dx' has shape [2, 5] but must be [2, 4]"},
    {"layernorm_backward_dgamma_refused", "layernorm_backward", [](Call& c) { c.reshape(6, {2}); },
     "'dgamma' has shape [2] but must be [4]"},
    {"layernorm_backward_dbeta_refused", "layernorm_backward", [](Call& c) { c.reshape(7, {2}); },
     "'dbeta' has shape [2] but must be [4]"},
    {"rmsnorm_valid", "rmsnorm", as_is, ""},
    {"rmsnorm_x_rank_1_refused", "rmsnorm", [](Call& c) { c.reshape(0, {4}); },
     "'x' must have rank 2 [N, D], has 1"},
    {"rmsnorm_x_rank_3_refused", "rmsnorm",
     [](Call& c) {
       c.reshape(0, {1, 2, 4});
     },
     "'x' must have rank 2 [N, D], has 3"},
    {"rmsnorm_gamma_refused", "rmsnorm", [](Call& c) { c.reshape(1, {2}); },
     "'gamma' has shape [2] but must be [4]"},
    {"rmsnorm_y_refused", "rmsnorm",
     [](Call& c) {
       c.reshape(2, {4, 2});
     },
     "'y' has shape [4, 2] but must be [2, 4]"},
    {"rmsnorm_rstd_refused", "rmsnorm", [](Call& c) { c.reshape(3, {4}); },
     "'rstd' has shape [4] but must be [2]"},
    {"rmsnorm_eps_smallest_positive_accepted", "rmsnorm", [](Call& c) { c.f(attr::kEps) = kTiny; },
     ""},
    {"rmsnorm_eps_0_refused", "rmsnorm", [](Call& c) { c.f(attr::kEps) = 0; },
     "attribute 'eps' must be > 0"},
    {"rmsnorm_eps_nan_refused", "rmsnorm", [](Call& c) { c.f(attr::kEps) = kNaN; },
     "attribute 'eps' must be > 0"},
    {"rmsnorm_backward_valid", "rmsnorm_backward", as_is, ""},
    {"rmsnorm_backward_x_rank_3_refused", "rmsnorm_backward",
     [](Call& c) {
       c.reshape(1, {1, 2, 4});
     },
     "'x' must have rank 2 [N, D]"},
    {"rmsnorm_backward_dy_refused", "rmsnorm_backward",
     [](Call& c) {
       c.reshape(0, {4, 2});
     },
     "'dy' has shape [4, 2] but must be [2, 4]"},
    {"rmsnorm_backward_gamma_refused", "rmsnorm_backward", [](Call& c) { c.reshape(2, {2}); },
     "'gamma' has shape [2] but must be [4]"},
    {"rmsnorm_backward_rstd_refused", "rmsnorm_backward", [](Call& c) { c.reshape(3, {4}); },
     "'rstd' has shape [4] but must be [2]"},
    {"rmsnorm_backward_dx_refused", "rmsnorm_backward",
     [](Call& c) {
       c.reshape(4, {2, 5});
     },
     "'dx' has shape [2, 5] but must be [2, 4]"},
    {"rmsnorm_backward_dgamma_refused", "rmsnorm_backward", [](Call& c) { c.reshape(5, {2}); },
     "'dgamma' has shape [2] but must be [4]"},
};
INSTANTIATE_TEST_SUITE_P(Norm, OpContractRule, ::testing::ValuesIn(kNorm), rule_name);

// N = 2 rows of C = 5 classes.
const Rule kLoss[] = {
    {"cross_entropy_valid", "cross_entropy", as_is, ""},
    {"cross_entropy_i32_targets_accepted", "cross_entropy",
     [](Call& c) { c.t[1].dtype = POLYCHIP_DTYPE_I32; }, ""},
    {"cross_entropy_f32_targets_refused", "cross_entropy",
     [](Call& c) { c.t[1].dtype = POLYCHIP_DTYPE_F32; }, "'targets' must be i64 or i32, is f32"},
    {"cross_entropy_logits_rank_1_refused", "cross_entropy", [](Call& c) { c.reshape(0, {5}); },
     "'logits' must have rank 2 [N, C], has 1"},
    {"cross_entropy_logits_rank_3_refused", "cross_entropy",
     [](Call& c) {
       c.reshape(0, {1, 2, 5});
     },
     "'logits' must have rank 2 [N, C], has 3"},
    {"cross_entropy_no_classes_refused", "cross_entropy",
     [](Call& c) {
       c.reshape(0, {2, 0});
     },
     "'logits' must have at least one class"},
    {"cross_entropy_no_rows_accepted", "cross_entropy",
     [](Call& c) {
       c.reshape(0, {0, 5});
       c.reshape(1, {0});
       c.reshape(2, {0});
     },
     ""},
    {"cross_entropy_targets_refused", "cross_entropy", [](Call& c) { c.reshape(1, {5}); },
     "'targets' has shape [5] but must be [2]"},
    {"cross_entropy_loss_refused", "cross_entropy",
     [](Call& c) {
       c.reshape(2, {2, 1});
     },
     "'loss' has shape [2, 1] but must be [2]"},
    {"cross_entropy_backward_valid", "cross_entropy_backward", as_is, ""},
    {"cross_entropy_backward_logits_rank_1_refused", "cross_entropy_backward",
     [](Call& c) { c.reshape(0, {5}); }, "'logits' must have rank 2 [N, C]"},
    // As in the forward op: no target can be in [0, 0).
    {"cross_entropy_backward_no_classes_refused", "cross_entropy_backward",
     [](Call& c) {
       c.reshape(0, {2, 0});
       c.reshape(3, {2, 0});
     },
     "'logits' must have at least one class"},
    {"cross_entropy_backward_targets_refused", "cross_entropy_backward",
     [](Call& c) { c.reshape(1, {5}); }, "'targets' has shape [5] but must be [2]"},
    {"cross_entropy_backward_dloss_refused", "cross_entropy_backward",
     [](Call& c) { c.reshape(2, {5}); }, "'dloss' has shape [5] but must be [2]"},
    {"cross_entropy_backward_dlogits_refused", "cross_entropy_backward",
     [](Call& c) {
       c.reshape(3, {2, 4});
     },
     "'dlogits' has shape [2, 4] but must be [2, 5]"},
};
INSTANTIATE_TEST_SUITE_P(Loss, OpContractRule, ::testing::ValuesIn(kLoss), rule_name);

// N = 3 ids into V = 10 rows of D = 4.
const Rule kEmbedding[] = {
    {"embedding_valid", "embedding", as_is, ""},
    {"embedding_i32_ids_accepted", "embedding", [](Call& c) { c.t[0].dtype = POLYCHIP_DTYPE_I32; },
     ""},
    {"embedding_ids_rank_0_refused", "embedding", [](Call& c) { c.reshape(0, {}); },
     "'ids' must have rank 1 [N]"},
    {"embedding_ids_rank_2_refused", "embedding",
     [](Call& c) {
       c.reshape(0, {3, 1});
     },
     "'ids' must have rank 1 [N]"},
    {"embedding_weight_rank_1_refused", "embedding", [](Call& c) { c.reshape(1, {10}); },
     "'weight' must have rank 2 [V, D]"},
    {"embedding_weight_rank_3_refused", "embedding",
     [](Call& c) {
       c.reshape(1, {10, 4, 1});
     },
     "'weight' must have rank 2 [V, D]"},
    {"embedding_out_rows_refused", "embedding",
     [](Call& c) {
       c.reshape(2, {10, 4});
     },
     "'out' has shape [10, 4] but must be [3, 4]"},
    {"embedding_out_columns_refused", "embedding",
     [](Call& c) {
       c.reshape(2, {3, 10});
     },
     "'out' has shape [3, 10] but must be [3, 4]"},
    {"embedding_backward_valid", "embedding_backward", as_is, ""},
    {"embedding_backward_ids_rank_2_refused", "embedding_backward",
     [](Call& c) {
       c.reshape(0, {3, 1});
     },
     "'ids' must have rank 1 [N]"},
    {"embedding_backward_dweight_rank_1_refused", "embedding_backward",
     [](Call& c) { c.reshape(2, {10}); }, "'dweight' must have rank 2 [V, D]"},
    {"embedding_backward_dweight_rank_3_refused", "embedding_backward",
     [](Call& c) {
       c.reshape(2, {10, 4, 1});
     },
     "'dweight' must have rank 2 [V, D]"},
    {"embedding_backward_dout_rows_refused", "embedding_backward",
     [](Call& c) {
       c.reshape(1, {10, 4});
     },
     "'dout' has shape [10, 4] but must be [3, 4]"},
    {"embedding_backward_dout_columns_refused", "embedding_backward",
     [](Call& c) {
       c.reshape(1, {3, 10});
     },
     "'dout' has shape [3, 10] but must be [3, 4]"},
};
INSTANTIATE_TEST_SUITE_P(Embedding, OpContractRule, ::testing::ValuesIn(kEmbedding), rule_name);

// x [S = 3, H = 2, D = 4], cos and sin [S, D/2].
const Rule kRotary[] = {
    {"valid", "rotary_embedding", as_is, ""},
    {"inverse_1_accepted", "rotary_embedding", [](Call& c) { c.i(attr::kInverse) = 1; }, ""},
    {"inverse_2_refused", "rotary_embedding", [](Call& c) { c.i(attr::kInverse) = 2; },
     "attribute 'inverse' = 2 must be 0 or 1"},
    {"x_rank_2_refused", "rotary_embedding",
     [](Call& c) {
       c.reshape(0, {3, 4});
     },
     "'x' must have rank 3 [S, H, D]"},
    {"x_rank_4_refused", "rotary_embedding",
     [](Call& c) {
       c.reshape(0, {3, 2, 4, 1});
     },
     "'x' must have rank 3 [S, H, D]"},
    {"odd_head_dimension_refused", "rotary_embedding",
     [](Call& c) {
       c.reshape(0, {3, 2, 5});
       c.reshape(3, {3, 2, 5});
     },
     "'x' head dimension D = 5 must be even"},
    {"cos_refused", "rotary_embedding",
     [](Call& c) {
       c.reshape(1, {3, 4});
     },
     "'cos' has shape [3, 4] but must be [3, 2]"},
    {"sin_refused", "rotary_embedding",
     [](Call& c) {
       c.reshape(2, {2, 2});
     },
     "'sin' has shape [2, 2] but must be [3, 2]"},
    {"y_refused", "rotary_embedding",
     [](Call& c) {
       c.reshape(3, {3, 3, 4});
     },
     "'y' has shape [3, 3, 4] but must be [3, 2, 4]"},
};
INSTANTIATE_TEST_SUITE_P(Rotary, OpContractRule, ::testing::ValuesIn(kRotary), rule_name);

// q, k, v, o [B = 2, H = 3, S = 5, D = 4], lse [B, H, S].
const Rule kAttention[] = {
    {"attention_valid", "attention", as_is, ""},
    {"attention_causal_0_accepted", "attention", [](Call& c) { c.i(attr::kCausal) = 0; }, ""},
    {"attention_causal_2_refused", "attention", [](Call& c) { c.i(attr::kCausal) = 2; },
     "attribute 'causal' = 2 must be 0 or 1"},
    {"attention_q_rank_3_refused", "attention",
     [](Call& c) {
       c.reshape(0, {2, 3, 5});
     },
     "'q' must have rank 4 [B, H, S, D]"},
    {"attention_q_rank_5_refused", "attention",
     [](Call& c) {
       c.reshape(0, {2, 3, 5, 4, 1});
     },
     "'q' must have rank 4 [B, H, S, D]"},
    {"attention_k_refused", "attention",
     [](Call& c) {
       c.reshape(1, {2, 3, 5, 5});
     },
     "'k' has shape [2, 3, 5, 5] but must be [2, 3, 5, 4]"},
    {"attention_v_refused", "attention",
     [](Call& c) {
       c.reshape(2, {2, 3, 4, 4});
     },
     "'v' has shape [2, 3, 4, 4] but must be [2, 3, 5, 4]"},
    {"attention_o_refused", "attention",
     [](Call& c) {
       c.reshape(3, {2, 2, 5, 4});
     },
     "'o' has shape [2, 2, 5, 4] but must be [2, 3, 5, 4]"},
    {"attention_lse_refused", "attention",
     [](Call& c) {
       c.reshape(4, {1, 3, 5});
     },
     "'lse' has shape [1, 3, 5] but must be [2, 3, 5]"},
    {"attention_scale_smallest_positive_accepted", "attention",
     [](Call& c) { c.f(attr::kScale) = kTiny; }, ""},
    {"attention_scale_0_refused", "attention", [](Call& c) { c.f(attr::kScale) = 0; },
     "attribute 'scale' must be > 0"},
    {"attention_scale_nan_refused", "attention", [](Call& c) { c.f(attr::kScale) = kNaN; },
     "attribute 'scale' must be > 0"},
    {"attention_backward_valid", "attention_backward", as_is, ""},
    {"attention_backward_causal_0_accepted", "attention_backward",
     [](Call& c) { c.i(attr::kCausal) = 0; }, ""},
    {"attention_backward_causal_2_refused", "attention_backward",
     [](Call& c) { c.i(attr::kCausal) = 2; }, "attribute 'causal' = 2 must be 0 or 1"},
    {"attention_backward_q_rank_3_refused", "attention_backward",
     [](Call& c) {
       c.reshape(1, {2, 3, 5});
     },
     "'q' must have rank 4 [B, H, S, D]"},
    {"attention_backward_do_refused", "attention_backward",
     [](Call& c) {
       c.reshape(0, {2, 3, 5, 5});
     },
     "'do' has shape [2, 3, 5, 5]"},
    {"attention_backward_k_refused", "attention_backward",
     [](Call& c) {
       c.reshape(2, {2, 3, 5, 5});
     },
     "'k' has shape [2, 3, 5, 5]"},
    {"attention_backward_v_refused", "attention_backward",
     [](Call& c) {
       c.reshape(3, {2, 3, 5, 5});
     },
     "'v' has shape [2, 3, 5, 5]"},
    {"attention_backward_o_refused", "attention_backward",
     [](Call& c) {
       c.reshape(4, {2, 3, 5, 5});
     },
     "'o' has shape [2, 3, 5, 5]"},
    {"attention_backward_lse_refused", "attention_backward",
     [](Call& c) {
       c.reshape(5, {2, 3, 4});
     },
     "'lse' has shape [2, 3, 4] but must be [2, 3, 5]"},
    {"attention_backward_dq_refused", "attention_backward",
     [](Call& c) {
       c.reshape(6, {2, 3, 5, 5});
     },
     "'dq' has shape [2, 3, 5, 5]"},
    {"attention_backward_dk_refused", "attention_backward",
     [](Call& c) {
       c.reshape(7, {2, 3, 5, 5});
     },
     "'dk' has shape [2, 3, 5, 5]"},
    {"attention_backward_dv_refused", "attention_backward",
     [](Call& c) {
       c.reshape(8, {2, 3, 5, 5});
     },
     "'dv' has shape [2, 3, 5, 5]"},
    {"attention_backward_scale_smallest_positive_accepted", "attention_backward",
     [](Call& c) { c.f(attr::kScale) = kTiny; }, ""},
    {"attention_backward_scale_0_refused", "attention_backward",
     [](Call& c) { c.f(attr::kScale) = 0; }, "attribute 'scale' must be > 0"},
};
INSTANTIATE_TEST_SUITE_P(Attention, OpContractRule, ::testing::ValuesIn(kAttention), rule_name);

// param, grad, m, v, param_out, m_out, v_out: [6]; grad in T, the rest f32.
const Rule kAdamW[] = {
    {"valid", "adamw", as_is, ""},
    {"param_rank_0_refused", "adamw", [](Call& c) { c.reshape(0, {}); },
     "'param' must have rank 1 [N]"},
    {"param_rank_2_refused", "adamw",
     [](Call& c) {
       c.reshape(0, {6, 1});
     },
     "'param' must have rank 1 [N]"},
    {"grad_refused", "adamw", [](Call& c) { c.reshape(1, {5}); },
     "'grad' has shape [5] but must be [6]"},
    {"m_refused", "adamw", [](Call& c) { c.reshape(2, {5}); }, "'m' has shape [5] but must be [6]"},
    {"v_refused", "adamw", [](Call& c) { c.reshape(3, {5}); }, "'v' has shape [5] but must be [6]"},
    {"param_out_refused", "adamw", [](Call& c) { c.reshape(4, {5}); },
     "'param_out' has shape [5] but must be [6]"},
    {"m_out_refused", "adamw", [](Call& c) { c.reshape(5, {5}); },
     "'m_out' has shape [5] but must be [6]"},
    {"v_out_refused", "adamw", [](Call& c) { c.reshape(6, {5}); },
     "'v_out' has shape [5] but must be [6]"},
    {"step_1_accepted", "adamw", [](Call& c) { c.i(attr::kStep) = 1; }, ""},
    {"step_0_refused", "adamw", [](Call& c) { c.i(attr::kStep) = 0; },
     "attribute 'step' must be >= 1"},
    {"eps_smallest_positive_accepted", "adamw", [](Call& c) { c.f(attr::kAdamEps) = kTiny; }, ""},
    {"eps_0_refused", "adamw", [](Call& c) { c.f(attr::kAdamEps) = 0; },
     "attribute 'eps' must be > 0"},
    {"eps_nan_refused", "adamw", [](Call& c) { c.f(attr::kAdamEps) = kNaN; },
     "attribute 'eps' must be > 0"},
    {"beta1_0_accepted", "adamw", [](Call& c) { c.f(attr::kBeta1) = 0; }, ""},
    {"beta1_just_below_1_accepted", "adamw",
     [](Call& c) { c.f(attr::kBeta1) = std::nextafter(1.0, 0.0); }, ""},
    {"beta1_1_refused", "adamw", [](Call& c) { c.f(attr::kBeta1) = 1; },
     "attributes 'beta1'/'beta2' must be in [0, 1)"},
    {"beta1_negative_refused", "adamw", [](Call& c) { c.f(attr::kBeta1) = -kTiny; },
     "attributes 'beta1'/'beta2' must be in [0, 1)"},
    {"beta1_nan_refused", "adamw", [](Call& c) { c.f(attr::kBeta1) = kNaN; },
     "attributes 'beta1'/'beta2' must be in [0, 1)"},
    {"beta2_0_accepted", "adamw", [](Call& c) { c.f(attr::kBeta2) = 0; }, ""},
    {"beta2_1_refused", "adamw", [](Call& c) { c.f(attr::kBeta2) = 1; },
     "attributes 'beta1'/'beta2' must be in [0, 1)"},
    {"beta2_negative_refused", "adamw", [](Call& c) { c.f(attr::kBeta2) = -kTiny; },
     "attributes 'beta1'/'beta2' must be in [0, 1)"},
};
INSTANTIATE_TEST_SUITE_P(AdamW, OpContractRule, ::testing::ValuesIn(kAdamW), rule_name);

// The generic rules of validate_call, which run before the op's own check.
const Rule kGeneric[] = {
    {"one_tensor_too_many_refused", "exp", [](Call& c) { c.t.push_back(c.t[1]); },
     "exp takes 2 tensors, got 3"},
    {"rank_0_accepted", "exp",
     [](Call& c) {
       c.reshape(0, {});
       c.reshape(1, {});
     },
     ""},
    {"rank_max_accepted", "exp",
     [](Call& c) {
       c.reshape(0, {1, 1, 1, 1, 1, 1, 2, 3});
       c.reshape(1, {1, 1, 1, 1, 1, 1, 2, 3});
     },
     ""},
    {"rank_negative_refused", "exp", [](Call& c) { c.t[0].rank = -1; },
     "'x' has rank -1; polychip supports 0..8"},
    {"rank_above_max_refused", "exp", [](Call& c) { c.t[1].rank = POLYCHIP_MAX_RANK + 1; },
     "'y' has rank 9; polychip supports 0..8"},
    // ANY is a wildcard of kernel signatures, not a dtype a tensor can have.
    {"dtype_any_refused", "exp", [](Call& c) { c.t[0].dtype = POLYCHIP_DTYPE_ANY; },
     "'x' has unknown dtype code 0"},
    {"dtype_past_last_refused", "exp", [](Call& c) { c.t[1].dtype = POLYCHIP_DTYPE_COUNT_; },
     "'y' has unknown dtype code 12"},
    {"dtype_outside_op_list_refused", "exp", [](Call& c) { c.t[0].dtype = POLYCHIP_DTYPE_F8E4M3; },
     "'x' has dtype f8e4m3, which exp does not support"},
    {"f64_compute_accepted", "exp",
     [](Call& c) { c.t[0].dtype = c.t[1].dtype = POLYCHIP_DTYPE_F64; }, ""},
    {"second_t_tensor_in_other_dtype_refused", "exp",
     [](Call& c) { c.t[1].dtype = POLYCHIP_DTYPE_BF16; },
     "'y' has dtype bf16 but the op computes in f16"},
    // T is the dtype of the first T tensor, wherever the f32 ones stand.
    {"t_is_the_first_t_tensor", "layernorm", [](Call& c) { c.t[0].dtype = POLYCHIP_DTYPE_F32; },
     "'gamma' has dtype f16 but the op computes in f32"},
    {"f32_role_in_f64_refused", "layernorm", [](Call& c) { c.t[5].dtype = POLYCHIP_DTYPE_F64; },
     "'rstd' must be f32, is f64"},
    {"index_role_in_u8_refused", "embedding", [](Call& c) { c.t[0].dtype = POLYCHIP_DTYPE_U8; },
     "'ids' must be i64 or i32, is u8"},
    {"negative_junk_past_rank_ignored", "exp", [](Call& c) { c.junk_past_rank(-1, -1); }, ""},
    {"zero_stride_junk_past_rank_ignored", "exp", [](Call& c) { c.junk_past_rank(7, 0); }, ""},
    {"negative_size_refused", "exp", [](Call& c) { c.t[0].shape[1] = -1; },
     "'x' has negative size -1 in dimension 1"},
    {"zero_size_accepted", "exp",
     [](Call& c) {
       c.reshape(0, {2, 0});
       c.reshape(1, {2, 0});
     },
     ""},
    {"negative_stride_refused", "exp", [](Call& c) { c.t[1].strides[1] = -1; },
     "'y' has negative stride -1 in dimension 1"},
    // A zero stride broadcasts an input; an output would write one element
    // twice.
    {"input_zero_stride_accepted", "add",
     [](Call& c) {
       c.strides(1, {0, 1});
     },
     ""},
    {"output_zero_stride_refused", "add",
     [](Call& c) {
       c.strides(2, {0, 1});
     },
     "output 'out' has a zero stride: its elements overlap"},
    {"output_zero_stride_of_size_1_dimension_accepted", "exp",
     [](Call& c) {
       c.reshape(0, {1, 3});
       c.reshape(1, {1, 3});
       c.strides(1, {0, 1});
     },
     ""},
    {"empty_output_zero_strides_accepted", "exp",
     [](Call& c) {
       c.reshape(0, {0, 3});
       c.reshape(1, {0, 3});
       c.strides(1, {0, 0});
     },
     ""},
    {"no_memory_refused", "exp", [](Call& c) { c.t[0].memory = nullptr; }, "'x' has no memory"},
    {"empty_without_memory_accepted", "exp",
     [](Call& c) {
       c.reshape(0, {2, 0});
       c.reshape(1, {2, 0});
       c.t[0].memory = c.t[1].memory = nullptr;
     },
     ""},
    // Elementwise ops and reductions take any strides; the rest need row-major.
    {"reduction_strided_input_accepted", "reduce_sum",
     [](Call& c) {
       c.strides(0, {1, 2});
     },
     ""},
    {"softmax_strided_input_refused", "softmax",
     [](Call& c) {
       c.strides(0, {1, 2});
     },
     "'x' must be contiguous (row-major) for softmax"},
    {"gemm_strided_output_refused", "gemm",
     [](Call& c) {
       c.strides(3, {1, 4});
     },
     "'y' must be contiguous (row-major) for gemm"},
    {"row_major_stride_of_size_1_dimension_free", "softmax",
     [](Call& c) {
       c.reshape(0, {1, 3});
       c.reshape(1, {1, 3});
       c.strides(0, {99, 1});
     },
     ""},
    // An empty view as PyTorch lays it out (DLPack): nothing to lay out wrong.
    {"row_major_empty_view_with_any_strides_accepted", "softmax",
     [](Call& c) {
       c.reshape(0, {2, 0});
       c.reshape(1, {2, 0});
       c.strides(0, {1, 1});
     },
     ""},
    // x [2, 3] in f16 spans bytes [0, 12) of its memory.
    {"output_right_after_input_accepted", "exp", [](Call& c) { c.share(1, 0, 12); }, ""},
    {"output_right_after_input_despite_junk_past_rank_accepted", "exp",
     [](Call& c) {
       c.share(1, 0, 12);
       c.junk_past_rank(7, 5);
     },
     ""},
    {"output_after_a_gap_accepted", "exp", [](Call& c) { c.share(1, 0, 24); }, ""},
    {"output_right_before_input_accepted", "exp",
     [](Call& c) {
       c.share(1, 0, 0);
       c.t[0].byte_offset = 12;
     },
     ""},
    {"output_on_last_input_element_refused", "exp", [](Call& c) { c.share(1, 0, 10); },
     "output 'y' overlaps input 'x'"},
    {"in_place_with_other_strides_refused", "exp",
     [](Call& c) {
       c.share(1, 0, 0);
       c.strides(1, {1, 2});
     },
     "output 'y' overlaps input 'x'"},
    {"gemm_y_in_place_of_c_accepted", "gemm", [](Call& c) { c.share(3, 2, 0); }, ""},
    {"cast_in_place_refused", "cast",
     [](Call& c) {
       c.t[1].dtype = c.t[0].dtype;
       c.share(1, 0, 0);
     },
     "output 'y' overlaps input 'x'"},
    {"adamw_in_place_accepted", "adamw",
     [](Call& c) {
       c.share(4, 0, 0);
       c.share(5, 2, 0);
       c.share(6, 3, 0);
     },
     ""},
    // Same bytes, other dtype: not the element-for-element alias in-place
    // needs.
    {"adamw_param_out_over_f16_grad_refused", "adamw", [](Call& c) { c.share(4, 1, 0); },
     "output 'param_out' overlaps input 'grad'"},
    {"outputs_overlapping_each_other_refused", "layernorm", [](Call& c) { c.share(5, 4, 0); },
     "output 'mean' overlaps output 'rstd'"},
    // An empty view touches no bytes, whatever its strides say.
    {"empty_output_among_input_bytes_accepted", "exp",
     [](Call& c) {
       c.reshape(0, {0, 3});
       c.reshape(1, {0, 3});
       c.strides(0, {1, 1});
       c.strides(1, {1, 1});
       c.share(1, 0, 2);
     },
     ""},
};
INSTANTIATE_TEST_SUITE_P(Generic, OpContractRule, ::testing::ValuesIn(kGeneric), rule_name);

TEST(OpContractGenericTest, MissingAttributesRefused) {
  Call c = valid_call("exp");
  EXPECT_EQ(validate_call(*c.op, {c.t, nullptr}), "exp: attributes are missing");
}

// The call is a span of the caller's array: what lies past its end is no
// tensor of the call, even where it overlaps an output.
TEST(OpContractGenericTest, TensorsPastTheCallIgnored) {
  Call c = valid_call("exp");
  c.t.push_back(c.t[1]);
  EXPECT_EQ(validate_call(*c.op, {std::span(c.t).first(2), &c.attrs}), "");
}

}  // namespace
}  // namespace polychip
