// Exact-integer inputs (oneDNN benchdnn's practice) for ops whose results
// are not plain sums of products: attention and the norms. The inputs are
// chosen so that every intermediate is exactly representable whatever the
// order of the sums, so the exact result is the device's result and the
// tolerance is 0 (an indexing, tiling, tail or attribute bug cannot hide in
// a rounding tolerance):
//  - attention (D >= 2 ceil(log2 S)): each query row attends to exactly one
//    key (q and k carry binary codes; its target's score beats every other
//    key's by more than 12,000), so exp() gives exactly 1 for it and exactly
//    0 for the rest (in f32, f64 and the long double oracle alike), whether
//    a kernel normalises by the sum or by exp(s - lse): o_i = v_target,
//    which key depends on every element of q and k. Causal rows pick a
//    visible key. lse = the target's score is exact when sqrt(D) is a power
//    of two; otherwise it keeps its rounding tolerance. A shape whose q
//    values (up to 2 big) are past the dtype's largest value (f16 with a D
//    small for its S) is refused.
//  - layernorm (D even) / rmsnorm: each row is m + d or m - d with d one of
//    1/2, 1, 2, 4 (half of each sign for layernorm; m a small integer, 0 for
//    rmsnorm), and eps = 2^-100, far below half an ulp of the variance d^2:
//    mean = m, variance = d^2 and rstd = 1/d exactly; gamma and beta are
//    small integers, so y = ±gamma + beta. One exception: Welford's
//    algorithm (PyTorch's, Apex's) divides by running counts, so the mean it
//    computes is exact only to its rounding; layernorm's mean is held to
//    2 sqrt(D) u max|x| (u the mean dtype's unit roundoff), y and rstd stay
//    exact.
#pragma once

#include <optional>
#include <random>

#include "problem.hpp"
#include "tolerance.hpp"

namespace polychip::precision {

// Whether build_problem should take `p`'s inputs from here: an exact case of
// attention, layernorm or rmsnorm.
bool has_exact_inputs(const Problem& p);

// Fills p.inputs (and sets eps for the norms). Throws Error(INVALID_ARGUMENT)
// naming what the shape or variant lacks.
void fill_exact_inputs(Problem& p, std::mt19937_64& rng);

// The tolerance of output `k` of an exact case: 0 for every output but two,
// attention's lse when sqrt(D) is not a power of two (nullopt: the tolerance
// table's) and layernorm's mean (Welford's bound above).
std::optional<Tolerance> exact_case_tolerance(const Problem& p, size_t k);

}  // namespace polychip::precision
