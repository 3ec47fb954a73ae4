#!/usr/bin/env python3
"""How far Welford's algorithm puts the mean of an exact layernorm row
(precision/harness/exact_inputs.hpp: m + d or m - d, half each, m an integer
in [-3, 3], d in {1/2, 1, 2, 4}) from its exact value m, in f32, as a
fraction of the bound the precision suite allows, sqrt(D) u max|x|
(u = 2^-24). Welford divides by the running count, so its mean is exact
only to its rounding (docs/precision-suite.md, exact attention and norms).

Each of `lanes` threads folds elements t, t + lanes, ...; the threads' states
merge pairwise (Chan et al.), as PyTorch's block reduction does. lanes = 1 is
one thread folding the whole row, the largest rounding.

  python3 tools/welford_mean_error.py --rows 40
  python3 tools/welford_mean_error.py --rows 3000 --lengths 8,16,64 --lanes 1
"""
import argparse
import math
import random
import struct


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def fold(xs):
    mean, count = 0.0, 0.0
    for x in xs:
        count = f32(count + 1)
        mean = f32(mean + f32(f32(x - mean) / count))
    return mean, count


def merge(a, b):
    (mean_a, count_a), (mean_b, count_b) = a, b
    if count_b == 0:
        return a
    if count_a == 0:
        return b
    count = f32(count_a + count_b)
    return f32(mean_a + f32(f32(mean_b - mean_a) * f32(count_b / count))), count


def welford_mean(row, lanes):
    states = [fold(row[t::lanes]) for t in range(min(lanes, len(row)))]
    while len(states) > 1:
        states = [merge(states[i], states[i + 1]) if i + 1 < len(states) else states[i]
                  for i in range(0, len(states), 2)]
    return states[0][0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=12, help="rows per row length")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lengths", default="64,256,1024,4096",
                        help="row lengths D (even), comma separated")
    parser.add_argument("--lanes", default="1,32,256", help="thread counts, comma separated")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print("lanes  D      largest error / (sqrt(D) u max|x|)")
    for lanes in (int(v) for v in args.lanes.split(",")):
        for d in (int(v) for v in args.lengths.split(",")):
            worst = 0.0
            for _ in range(args.rows):
                m = rng.randint(-3, 3)
                spread = 2.0 ** rng.randint(-1, 2)
                signs = [1] * (d // 2) + [-1] * (d // 2)
                rng.shuffle(signs)
                row = [f32(m + s * spread) for s in signs]
                bound = math.sqrt(d) * 2.0 ** -24 * max(abs(x) for x in row)
                worst = max(worst, abs(welford_mean(row, lanes) - m) / bound)
            print(f"{lanes:5d}  {d:5d}  {worst:.3f}")


if __name__ == "__main__":
    main()
