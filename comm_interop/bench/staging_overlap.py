#!/usr/bin/env python3
"""Host staging with overlap vs whole-buffer staging, side by side in one run.

Runs `polychip comm-perf` on device buffers (default: opencl and sim.faithful,
whose memory the host cannot touch, so every byte is staged) with
POLYCHIP_COMM_STAGING=overlap and =whole in alternating rounds and prints
each round's time and the median ratio whole/overlap (> 1: overlap is faster).
(By default, staging=auto, these two devices stage whole buffers: they have no
copy engine.)

On this project's CPU machines the "device" copies are memcpy on the same
cores as the network, so overlap can only hide latency, not add bandwidth;
on accelerators the copies run on DMA engines.

Usage: staging_overlap.py --polychip build/bin/polychip [--rounds 5] [--np 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(exe, np_, devices, size, staging):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [exe, "comm-perf", "--np", str(np_), "--devices", devices, "-b", str(size),
           "-e", str(size), "-w", "2", "-n", "5", "-J", out]
    env = dict(os.environ, POLYCHIP_COMM_STAGING=staging)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if proc.returncode != 0:
        sys.exit("comm-perf failed (%d):\n%s%s" % (proc.returncode, proc.stdout, proc.stderr))
    with open(out) as f:
        row = json.load(f)["results"][0]
    os.unlink(out)
    if row["out_of_place"]["wrong"] or row["in_place"]["wrong"]:
        sys.exit("comm-perf reported wrong results")
    return row["out_of_place"]["time_us"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--polychip", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--size", type=int, default=64 << 20)
    ap.add_argument("--devices", nargs="*", default=["opencl", "sim.faithful"])
    args = ap.parse_args()
    for devices in args.devices:
        ratios = []
        for r in range(args.rounds):
            whole = run(args.polychip, args.np, devices, args.size, "whole")
            overlap = run(args.polychip, args.np, devices, args.size, "overlap")
            ratios.append(whole / overlap)
            print("%-14s round %d  whole %9.1f us  overlap %9.1f us  whole/overlap %.2f"
                  % (devices, r + 1, whole, overlap, whole / overlap), flush=True)
        print("%-14s median whole/overlap %.2f over %d rounds (np=%d, %d bytes f32 all-reduce)\n"
              % (devices, statistics.median(ratios), args.rounds, args.np, args.size), flush=True)


if __name__ == "__main__":
    main()
