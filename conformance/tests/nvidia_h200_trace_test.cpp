// What the outputs recorded on an NVIDIA H200 (conformance/data/
// nvidia_h200_standard.json) settle about NVIDIA numerics that the
// emulation had to assume (docs/reference-numerics.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "case_spec.hpp"
#include "precision/oracle/oracle.hpp"
#include "problem.hpp"
#include "reference/float_formats.hpp"
#include "reference/trace_store.hpp"
#include "trace_recording.hpp"

namespace polychip::conformance {
namespace {

// The largest |recorded - sum_k tf32(a_ik) * tf32(b_kj)| (in double) over
// the output, relative to the output's largest magnitude.
double tf32_residual(const precision::Problem& p, const precision::HostTensor& y,
                     reference::Tf32Rounding mode) {
  const int64_t m = p.spec.dims[0], n = p.spec.dims[1], k = p.spec.dims[2];
  auto tf32 = [&](double v) {
    return static_cast<double>(reference::round_to_tf32(static_cast<float>(v), mode));
  };
  double worst = 0, largest = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t q = 0; q < k; ++q)
        sum += tf32(p.inputs[0].values[static_cast<size_t>(i * k + q)]) *
               tf32(p.inputs[1].values[static_cast<size_t>(q * n + j)]);
      const double got = y.values[static_cast<size_t>(i * n + j)];
      worst = std::max(worst, std::fabs(got - sum));
      largest = std::max(largest, std::fabs(got));
    }
  return worst / largest;
}

// cuBLAS's TF32 gemm rounds f32 operands to nearest, ties to even: the
// exact sum of those products is within f32 accumulation noise of what the
// H200 computed, while ties away from zero (cvt.rna, seed 1 holds a tie that
// matters) and truncation are 300 and 5000 times further off.
TEST(NvidiaH200Trace, Tf32GemmRoundsOperandsToNearestEven) {
  const auto store = reference::TraceStore::read(NVIDIA_H200_TRACE_FILE);
  for (const char* id : {"gemm/f32/64x64x64/tf32/seed=1", "gemm/f32/64x64x64/tf32/seed=2"}) {
    const precision::CaseSpec spec = precision::parse_case_id(id);
    const precision::Problem p = precision::build_problem(spec, precision::kOracle);
    const reference::TraceRecord* record = store.find(trace_key(spec));
    ASSERT_NE(record, nullptr) << id;
    const precision::HostTensor& y = record->outputs[0];
    const double even = tf32_residual(p, y, reference::Tf32Rounding::kNearestEven);
    EXPECT_LT(even, 1e-6) << id;
    EXPECT_GT(tf32_residual(p, y, reference::Tf32Rounding::kTruncate), 100 * even) << id;
  }
  const precision::CaseSpec tie = precision::parse_case_id("gemm/f32/64x64x64/tf32/seed=1");
  const precision::Problem p = precision::build_problem(tie, precision::kOracle);
  const precision::HostTensor& y = store.find(trace_key(tie))->outputs[0];
  EXPECT_GT(tf32_residual(p, y, reference::Tf32Rounding::kNearestTiesAway),
            100 * tf32_residual(p, y, reference::Tf32Rounding::kNearestEven));
}

}  // namespace
}  // namespace polychip::conformance
