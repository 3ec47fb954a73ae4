#!/usr/bin/env python3
"""Heterogeneous data parallelism measured on one machine: pools of
modelled-speed sim chips (docs/sim-profiles.md) of speed ratios 1:1, 70:58,
3:1, 10:1 and three devices, trained with the split planner's split
(`--dp-split auto`), and each chip trained alone, all in one run; then a
pair of real adapters on disjoint cores (cpu and PoCL's OpenCL, one thread
each), reported as measured; and the exposed communication per step of a
1:1 pool with and without --dp-overlap.

For every pool it prints the planner's split, its predicted step time and
the measured one (the error), the tokens/s of each chip alone and of the
pool, eta = f(pool) / sum f(chip) and gain = f(pool) / max f(chip), with
the chips' alone figures measured by training each alone (not the
planner's profile); for 3:1 also the even split, measured. A benchmark,
not a test: it prints what it measured and exits 0 unless a run fails.

Usage: python3 training/bench/heterogeneous_pool_bench.py [--polychip build/bin/polychip]
       [--steps 6] [--pools 1:1,3:1]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

PRESET, ROWS, SEQ = "pool", 128, 16  # training/gpt2_config.cpp
TOKENS = ROWS * SEQ

# name=GFLOP/s:GB/s:launch us (POLYCHIP_SIM_MODELLED). The reference chip
# "a" is slow enough that its modelled time dominates the host's real time
# for a one-row pass; the others are slower in the pool's ratio.
BASE_GFLOPS, BASE_GBS, BASE_LAUNCH_US = 0.5, 0.5, 50


def chip(name, speed):
    return (f"{name}={BASE_GFLOPS * speed:g}:{BASE_GBS * speed:g}:{BASE_LAUNCH_US / speed:g}")


POOLS = {  # name: relative speeds, by ranks
    "1:1": [1, 1],
    "70:58": [1, 58 / 70],
    "3:1": [1, 1 / 3],
    "10:1": [1, 1 / 10],
    "4:2:1": [1, 1 / 2, 1 / 4],
}


def step_seconds(stdout):
    """Per-step times printed by `polychip train`, without step 1 (warm-up)."""
    ms = [float(m) for m in re.findall(r"^step .*  ([0-9.]+) ms$", stdout, re.M)]
    if len(ms) < 2:
        raise RuntimeError("fewer than two steps in:\n" + stdout)
    return statistics.mean(ms[1:]) / 1000


def train(polychip, args, env, out):
    cmd = [polychip, "train", "--preset", PRESET, "--out", out] + args
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stderr}")
    return r.stdout


def measure_pool(polychip, label, devices, env, steps, tmp):
    """Each device trained alone, then together with --dp-split auto; prints
    the line of the pool and returns the alone tokens/s."""
    steps_arg = ["--steps", str(steps), "--micro-batch", "1"]
    alone = []
    for d in devices:
        out = train(polychip, ["-a", d] + steps_arg, env, os.path.join(tmp, f"{label}-{d}"))
        alone.append(TOKENS / step_seconds(out))
    pool_dir = os.path.join(tmp, f"{label}-pool")
    train(polychip, ["--np", str(len(devices)), "-a", ",".join(devices), "--dp-split", "auto",
                     "--steps", str(steps)], env, pool_dir)
    report = json.load(open(os.path.join(pool_dir, "data_parallel.json")))
    pool = TOKENS / report["measured_step_seconds"]
    print(f"{label:>6}  split {report['split']:>10}  predicted {report['predicted_step_seconds']:.3f} s"
          f"  measured {report['measured_step_seconds']:.3f} s"
          f"  error {100 * report['prediction_error']:+5.1f}%"
          f"  alone {' + '.join(f'{f:.0f}' for f in alone)} tokens/s"
          f"  pool {pool:.0f} tokens/s  eta {pool / sum(alone):.3f}  gain {pool / max(alone):.2f}")
    return alone


def run_pool(polychip, name, speeds, steps, tmp):
    names = [chr(ord("a") + k) for k in range(len(speeds))]
    env = dict(os.environ,
               POLYCHIP_SIM_MODELLED=",".join(chip(n, s) for n, s in zip(names, speeds)))
    devices = [f"sim.modelled-{n}" for n in names]
    alone = measure_pool(polychip, name, devices, env, steps, tmp)
    if name == "3:1":
        out = train(polychip, ["--np", "2", "-a", ",".join(devices), "--dp-split", "64:64",
                               "--steps", str(steps), "--micro-batch", "1"],
                    env, os.path.join(tmp, f"{name}-even"))
        even = TOKENS / step_seconds(out)
        print(f"{'':>6}  split {'64:64':>10}  (even)  measured {TOKENS / even:.3f} s"
              f"  pool {even:.0f} tokens/s  eta {even / sum(alone):.3f}  gain {even / max(alone):.2f}")


def run_overlap(polychip, steps, tmp):
    """Exposed communication per step (the wait for the gradient reduction
    after the backward pass) on two modelled chips, `default` (830k
    parameters), with and without --dp-overlap."""
    env = dict(os.environ, POLYCHIP_SIM_MODELLED=",".join([chip("a", 1), chip("b", 1)]))
    exposed = {}
    for flag in ("", "--dp-overlap"):
        args = ["--np", "2", "-a", "sim.modelled-a,sim.modelled-b", "--steps", str(steps)]
        out = subprocess.run([polychip, "train", "--preset", "default", "--out",
                              os.path.join(tmp, f"overlap{flag}")] + args + ([flag] if flag else []),
                             env=env, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(out.stderr)
        exposed[flag] = float(re.search(r"exposed communication: ([0-9.]+) ms", out.stdout).group(1))
    print(f"exposed communication, 1:1 on 'default': {exposed['']:.2f} ms a step without overlap, "
          f"{exposed['--dp-overlap']:.2f} ms with --dp-overlap "
          f"({exposed['--dp-overlap'] / exposed['']:.2f}x)")


def run_real_pair(polychip, steps, tmp):
    """cpu and OpenCL (PoCL), one thread each, so the two ranks use one core
    each; their speeds are whatever this machine gives."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", POCL_MAX_PTHREAD_COUNT="1",
               OMP_NUM_THREADS="1")
    env.pop("POLYCHIP_SIM_MODELLED", None)
    print("cpu + opencl, one core each:")
    measure_pool(polychip, "real", ["cpu", "opencl"], env, steps, tmp)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--polychip", default="build/bin/polychip")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--pools", default=",".join(POOLS))
    parser.add_argument("--no-real-pair", action="store_true")
    a = parser.parse_args()
    print(f"preset '{PRESET}' ({ROWS} rows of {SEQ} tokens a step, one-row micro-batches), "
          f"{a.steps} steps a run, step 1 not counted; chip a = {chip('a', 1)} "
          f"(GFLOP/s:GB/s:launch us), the others slower by the pool's ratio")
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.pools.split(","):
            run_pool(a.polychip, name, POOLS[name], a.steps, tmp)
        run_overlap(a.polychip, a.steps, tmp)
        if not a.no_real_pair:
            run_real_pair(a.polychip, a.steps, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
