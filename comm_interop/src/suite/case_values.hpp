// What every rank of a comm case sends and what it must receive: small
// integers, so every sum, product, min and max over up to 16 ranks is exact
// in every dtype, bf16 included, and a result is checked bit for bit.
#pragma once

#include <cstdint>

#include "polychip/comm/types.hpp"
#include "polychip/dtype.hpp"

namespace polychip::comm {

// Element `index` of rank `rank`'s send buffer.
double case_input(int rank, uint64_t index, ReduceOp op);

// Element `j` of rank `me`'s output of `collective` over `ranks` ranks;
// `block` is the per-rank count of all-gather, reduce-scatter and
// all-to-all. Avg rounds as the dtype does: truncated for integers,
// rounded to f32 for f32, f16 and bf16.
double case_expected(Collective collective, ReduceOp op, DType dtype, int ranks, int me, int root,
                     uint64_t block, uint64_t j);

// `value` as `dtype`'s bytes at `dst`.
void store_value(double value, DType dtype, uint8_t* dst);

}  // namespace polychip::comm
