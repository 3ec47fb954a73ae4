#!/usr/bin/python3
"""polychip comm-perf vs Gloo (torch.distributed), side by side in one run.

Prints busbw at 64 MiB f32 sum all-reduce for np=2 and np=4 and the 8-byte
all-reduce latency at np=2 and the ratios to Gloo (targets: busbw >= 1.5x
Gloo at np=2, latency <= 0.2x Gloo) for polychip as it runs by default
(ranks on one host talk through shared memory) and for polychip forced onto
TCP (POLYCHIP_COMM_TRANSPORT=tcp, what ranks on different hosts use; Gloo
uses TCP on one host too). Rounds alternate the three so all see the same
machine load; the best round of each is reported.

Usage: compare_gloo.py --polychip build/bin/polychip [--rounds 3] [--json out.json]
Needs Debian's python3-torch (run with /usr/bin/python3).
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gloo_worker(rank, world, port, size_bytes, iters, warmup, out_path):
    import torch
    import torch.distributed as dist
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    t = torch.ones(max(size_bytes // 4, 1), dtype=torch.float32)
    for _ in range(warmup):
        dist.all_reduce(t)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
    elapsed = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    expected = float(world ** (warmup + iters))
    ok = bool(torch.all(t == expected)) if expected < 2 ** 24 else True
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump({"seconds": elapsed.item(), "ok": ok}, f)
    dist.destroy_process_group()


def run_gloo(np_, size_bytes, iters, warmup):
    import torch.multiprocessing as mp
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    mp.spawn(gloo_worker, args=(np_, free_port(), size_bytes, iters, warmup, out), nprocs=np_,
             join=True)
    with open(out) as f:
        result = json.load(f)
    os.unlink(out)
    return result["seconds"]


def run_polychip(exe, np_, size_bytes, iters, warmup, transport):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [exe, "comm-perf", "--np", str(np_), "-b", str(size_bytes), "-e", str(size_bytes),
           "-w", str(warmup), "-n", str(iters), "-J", out]
    env = dict(os.environ, POLYCHIP_COMM_TRANSPORT=transport)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if proc.returncode != 0:
        sys.exit("polychip comm-perf failed (%d):\n%s%s" % (proc.returncode, proc.stdout, proc.stderr))
    with open(out) as f:
        doc = json.load(f)
    os.unlink(out)
    row = doc["results"][0]
    if row["out_of_place"]["wrong"] or row["in_place"]["wrong"]:
        sys.exit("polychip comm-perf reported wrong results")
    links = row["transport"].split("+")[0]
    if links != ("tcp" if transport == "tcp" else "shm"):
        sys.exit("polychip ran over %s, expected %s" % (row["transport"], transport))
    return row["out_of_place"]["time_us"] * 1e-6


PEERS = ("polychip", "polychip-tcp", "gloo")


def busbw(size_bytes, seconds, np_):
    return size_bytes / seconds / 1e9 * 2 * (np_ - 1) / np_


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--polychip", required=True, help="path to the polychip executable")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--only", help="run only the cases whose name contains this (e.g. np=2)")
    args = ap.parse_args()
    big = 64 << 20
    cases = [("busbw 64 MiB np=2", 2, big, 5, 2), ("busbw 64 MiB np=4", 4, big, 5, 2),
             ("latency 8 B np=2", 2, 8, 500, 50)]
    if args.only:
        cases = [c for c in cases if args.only in c[0]]
    best = {}
    for r in range(args.rounds):
        for name, np_, size, iters, warmup in cases:
            for peer in PEERS:
                if peer == "polychip":
                    t = run_polychip(args.polychip, np_, size, iters, warmup, "auto")
                elif peer == "polychip-tcp":
                    t = run_polychip(args.polychip, np_, size, iters, warmup, "tcp")
                else:
                    t = run_gloo(np_, size, iters, warmup)
                key = (name, peer)
                best[key] = min(best.get(key, float("inf")), t)
                print("round %d  %-20s %-12s %10.1f us" % (r + 1, name, peer, t * 1e6), flush=True)
    print()
    report = {}
    for name, np_, size, _, _ in cases:
        g = best[(name, "gloo")]
        report[name] = {}
        for peer in PEERS[:2]:
            p = best[(name, peer)]
            if size > 8:
                pb, gb = busbw(size, p, np_), busbw(size, g, np_)
                ratio = pb / gb
                print("%-20s %-12s %6.3f GB/s  gloo %6.3f GB/s  ratio %.2fx (target >= 1.5x at np=2)"
                      % (name, peer, pb, gb, ratio))
                report[name][peer] = {"gbps": pb, "gloo_gbps": gb, "ratio": ratio}
            else:
                ratio = p / g
                print("%-20s %-12s %7.1f us   gloo %7.1f us   ratio %.3fx (target <= 0.2x)"
                      % (name, peer, p * 1e6, g * 1e6, ratio))
                report[name][peer] = {"us": p * 1e6, "gloo_us": g * 1e6, "ratio": ratio}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
