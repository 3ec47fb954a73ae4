// The comm suite's values, worked by hand: what a rank sends and what it
// must receive. The runner checks a collective against these, so a wrong or
// degenerate expectation (every input 0, a result never stored) would pass
// a collective that does nothing; only values checked from outside catch it.
#include "suite/case_values.hpp"

#include <cstring>
#include <set>

#include <gtest/gtest.h>

namespace polychip::comm {
namespace {

template <typename T>
T stored(double value, DType dtype) {
  uint8_t bytes[sizeof(T)];
  std::memset(bytes, 0xA5, sizeof bytes);
  store_value(value, dtype, bytes);
  T out;
  std::memcpy(&out, bytes, sizeof out);
  return out;
}

TEST(CaseValues, InputsAreSmallVariedIntegersThatDifferBetweenRanks) {
  std::set<double> rank0;
  for (uint64_t k = 0; k < 17; ++k) rank0.insert(case_input(0, k, ReduceOp::kSum));
  EXPECT_EQ(rank0.size(), 17u);  // -8 .. 8, each once
  EXPECT_EQ(*rank0.begin(), -8);
  EXPECT_EQ(*rank0.rbegin(), 8);
  EXPECT_EQ(case_input(0, 0, ReduceOp::kSum), -3);
  EXPECT_EQ(case_input(1, 0, ReduceOp::kSum), -7);
  EXPECT_EQ(case_input(2, 0, ReduceOp::kSum), 6);
  EXPECT_EQ(case_input(0, 1, ReduceOp::kMax), 4);
  // Products stay within every dtype: factors 1, -1 and 2.
  EXPECT_EQ(case_input(0, 0, ReduceOp::kProd), 1);
  EXPECT_EQ(case_input(1, 0, ReduceOp::kProd), 2);
  EXPECT_EQ(case_input(0, 1, ReduceOp::kProd), -1);
}

TEST(CaseValues, ExpectedOutputsOfEveryCollective) {
  const DType f32 = DType::kF32;
  // Three ranks send -3, -7 and 6 at index 0, and -6, 7 and 3 at index 2.
  EXPECT_EQ(case_expected(Collective::kAllReduce, ReduceOp::kSum, f32, 3, 0, 0, 0, 0), -4);
  EXPECT_EQ(case_expected(Collective::kAllReduce, ReduceOp::kMin, f32, 3, 1, 0, 0, 0), -7);
  EXPECT_EQ(case_expected(Collective::kAllReduce, ReduceOp::kMax, f32, 3, 2, 0, 0, 0), 6);
  EXPECT_EQ(case_expected(Collective::kAllReduce, ReduceOp::kProd, f32, 3, 0, 0, 0, 0), 2);
  EXPECT_EQ(case_expected(Collective::kReduce, ReduceOp::kSum, f32, 3, 0, 0, 0, 2), 4);
  // Avg rounds as the dtype does.
  EXPECT_EQ(case_expected(Collective::kAllReduce, ReduceOp::kAvg, f32, 3, 0, 0, 0, 0),
            static_cast<double>(-4.0f / 3.0f));
  EXPECT_EQ(case_expected(Collective::kAllReduce, ReduceOp::kAvg, DType::kF64, 3, 0, 0, 0, 0),
            -4.0 / 3.0);
  EXPECT_EQ(case_expected(Collective::kAllReduce, ReduceOp::kAvg, DType::kI32, 3, 0, 0, 0, 0), -1);
  EXPECT_EQ(case_expected(Collective::kAllReduce, ReduceOp::kAvg, DType::kI64, 3, 0, 0, 0, 0), -1);
  // Blocks of 2 per rank: rank 1's block starts at output 2.
  EXPECT_EQ(case_expected(Collective::kAllGather, ReduceOp::kSum, f32, 3, 0, 0, 2, 2), -7);
  EXPECT_EQ(case_expected(Collective::kReduceScatter, ReduceOp::kSum, f32, 3, 1, 0, 2, 0), 4);
  EXPECT_EQ(case_expected(Collective::kReduceScatter, ReduceOp::kSum, f32, 3, 1, 0, 2, 1), -9);
  EXPECT_EQ(case_expected(Collective::kAllToAll, ReduceOp::kSum, f32, 3, 0, 0, 2, 2), -7);
  EXPECT_EQ(case_expected(Collective::kAllToAll, ReduceOp::kSum, f32, 3, 1, 0, 2, 0), -6);
  EXPECT_EQ(case_expected(Collective::kAllToAll, ReduceOp::kSum, f32, 3, 1, 0, 2, 3), -3);
  EXPECT_EQ(case_expected(Collective::kBroadcast, ReduceOp::kSum, f32, 3, 0, 2, 0, 0), 6);
  // Each rank receives from the one before it.
  EXPECT_EQ(case_expected(Collective::kSendRecv, ReduceOp::kSum, f32, 3, 0, 0, 0, 0), 6);
  EXPECT_EQ(case_expected(Collective::kSendRecv, ReduceOp::kSum, f32, 3, 1, 0, 0, 0), -3);
}

TEST(CaseValues, StoredAsEachDtypesBytes) {
  EXPECT_EQ(stored<uint32_t>(3, DType::kF32), 0x40400000u);
  EXPECT_EQ(stored<uint64_t>(3, DType::kF64), 0x4008000000000000u);
  EXPECT_EQ(stored<int32_t>(-3, DType::kI32), -3);
  EXPECT_EQ(stored<int64_t>(-3, DType::kI64), -3);
  EXPECT_EQ(stored<uint16_t>(3, DType::kF16), 0x4200u);
  EXPECT_EQ(stored<uint16_t>(-8, DType::kF16), 0xC800u);
  EXPECT_EQ(stored<uint16_t>(3, DType::kBF16), 0x4040u);
  EXPECT_EQ(stored<uint16_t>(-8, DType::kBF16), 0xC100u);
}

}  // namespace
}  // namespace polychip::comm
