#include "case_values.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "algorithms/reduce_kernels.hpp"
#include "polychip/error.hpp"
#include "wire/byte_io.hpp"

namespace polychip::comm {
namespace {

double fold(ReduceOp op, DType dtype, int ranks, uint64_t index) {
  double acc = case_input(0, index, op);
  for (int r = 1; r < ranks; ++r) {
    double v = case_input(r, index, op);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        acc += v;
        break;
      case ReduceOp::kProd:
        acc *= v;
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, v);
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, v);
        break;
    }
  }
  if (op == ReduceOp::kAvg) {
    if (dtype == DType::kI32 || dtype == DType::kI64) return std::trunc(acc / ranks);
    if (dtype == DType::kF64) return acc / ranks;
    return static_cast<float>(acc / ranks);
  }
  return acc;
}

}  // namespace

double case_input(int rank, uint64_t index, ReduceOp op) {
  if (op == ReduceOp::kProd) {
    static const double values[4] = {1, -1, 1, 2};
    return values[(index + uint64_t(rank) * 3) % 4];
  }
  return double((index * 7 + uint64_t(rank) * 13 + 5) % 17) - 8;
}

double case_expected(Collective collective, ReduceOp op, DType dtype, int ranks, int me, int root,
                     uint64_t block, uint64_t j) {
  switch (collective) {
    case Collective::kAllReduce:
    case Collective::kReduce:
      return fold(op, dtype, ranks, j);
    case Collective::kAllGather:
      return case_input(int(j / block), j % block, op);
    case Collective::kReduceScatter:
      return fold(op, dtype, ranks, uint64_t(me) * block + j);
    case Collective::kBroadcast:
      return case_input(root, j, op);
    case Collective::kAllToAll:
      return case_input(int(j / block), uint64_t(me) * block + j % block, op);
    case Collective::kSendRecv:
      return case_input((me - 1 + ranks) % ranks, j, op);
  }
  throw_error(StatusCode::kInvalidArgument, "unknown collective");
}

void store_value(double v, DType dtype, uint8_t* dst) {
  switch (dtype) {
    case DType::kF32: {
      float f = static_cast<float>(v);
      copy_bytes(dst, &f, 4);
      break;
    }
    case DType::kF64:
      copy_bytes(dst, &v, 8);
      break;
    case DType::kI32: {
      int32_t i = static_cast<int32_t>(v);
      copy_bytes(dst, &i, 4);
      break;
    }
    case DType::kI64: {
      int64_t i = static_cast<int64_t>(v);
      copy_bytes(dst, &i, 8);
      break;
    }
    case DType::kF16: {
      uint16_t h = float_to_half_bits(static_cast<float>(v));
      copy_bytes(dst, &h, 2);
      break;
    }
    case DType::kBF16: {
      uint16_t h = float_to_bfloat16_bits(static_cast<float>(v));
      copy_bytes(dst, &h, 2);
      break;
    }
    default:
      throw_error(StatusCode::kInvalidArgument, "unsupported dtype");
  }
}

}  // namespace polychip::comm
