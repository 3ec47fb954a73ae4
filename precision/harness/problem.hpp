// Problem: the concrete inputs, output descriptions and attributes of one
// case, built from its CaseSpec alone (seeded), valid for the op: ids in
// range, positive domain where the case asks for it, softmax outputs that
// are softmax outputs, AdamW states with v >= 0, ...
//
// Meaning of CaseSpec::dims per op:
//   elementwise ops, cast, fill, copy, reductions, softmax family: the shape
//   gemm: MxNxK or BxMxNxK            layernorm/rmsnorm (+backward): NxD
//   cross_entropy (+backward): NxC    embedding (+backward): NxVxD
//   rotary_embedding: SxHxD           attention (+backward): BxHxSxD
//   adamw: N
#pragma once

#include <string>
#include <vector>

#include "case_spec.hpp"
#include "precision/host_tensor.hpp"

namespace polychip::precision {

struct Problem {
  const OpSpec* op = nullptr;
  CaseSpec spec;
  std::vector<HostTensor> inputs;   // values set, in contract order
  std::vector<HostTensor> outputs;  // dtype and shape set, values empty
  polychip_op_attrs attrs{};
  // Length of the longest reduction behind one output element (1 for
  // elementwise ops): scales the absolute tolerance.
  int64_t reduce_len = 1;
  // Per output (may be shorter): the largest of the terms whose difference
  // the output is, where cancellation makes them larger than the output
  // (metrics.hpp compare_output); 0 elsewhere.
  std::vector<double> terms_magnitude;
  // Per output (may be shorter): where > 0, the magnitude the rounding error
  // scales with in place of the above (compare_output's error_scale).
  std::vector<double> error_scale;
  // Lay device tensors out with gaps (elementwise and reduction families).
  bool strided = false;
  // Binary elementwise ops: operand b is one row broadcast along dimension
  // 0 (stride 0), as a bias is.
  bool broadcast = false;
};

// The dtype signature of the problem's tensors (inputs then outputs).
std::vector<DType> problem_signature(const Problem& p);

// `oracle` computes derived inputs (softmax outputs for softmax_backward,
// mean/rstd for layernorm_backward, o/lse for attention_backward).
// Throws Error(INVALID_ARGUMENT) naming what in the spec is wrong.
Problem build_problem(const CaseSpec& spec, HostOpFn oracle);

// Names of the ops' tensors (contract order), for messages.
std::string tensor_name(const Problem& p, size_t tensor_index);
// Name of output `output_index` (0 = the op's first output).
std::string output_name(const Problem& p, size_t output_index);

}  // namespace polychip::precision
