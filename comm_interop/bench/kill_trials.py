#!/usr/bin/env python3
"""Kill trials: SIGKILL one rank of an externally launched job at a random
moment and time how long the survivors take to end.

Each trial starts --np ranks of `polychip comm-perf` the way torchrun or a
scheduler would (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the
environment; no polychip launcher that could end the job), kills one random
rank after a random delay in [0, --max-delay] seconds (so the kill lands in
the rendezvous, the connection set-up or a collective), and measures the
time from the kill until the last survivor has exited. Nothing kills the
survivors but their own failure detection; a survivor still alive after
--limit seconds is counted as hung, then killed.

Usage: kill_trials.py --polychip build/bin/polychip [--trials 24] [--np 4]
Prints one line per trial and the count of trials whose survivors took
longer than --slow seconds (the issue's criterion: 30 s).
"""
import argparse
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def trial(args, rng):
    port = free_port()
    procs = []
    for rank in range(args.np):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.np), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), POLYCHIP_COMM_TIMEOUT=str(args.limit * 2))
        if args.transport:
            env["POLYCHIP_COMM_TRANSPORT"] = args.transport
        procs.append(subprocess.Popen(
            [args.polychip, "comm-perf", "-c", "all_reduce", "-b", "1M", "-e", "8M", "-w", "2",
             "-n", str(args.iters)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    victim = rng.randrange(args.np)
    # Half the kills land in the first 0.15 s: the rendezvous and connection set-up.
    delay = rng.uniform(0, 0.15) if rng.random() < 0.5 else rng.uniform(0, args.max_delay)
    time.sleep(delay)
    killed_at = time.monotonic()
    procs[victim].send_signal(signal.SIGKILL)
    hung = 0
    ended_early = sum(p.poll() is not None for i, p in enumerate(procs) if i != victim)
    for p in procs:
        left = args.limit - (time.monotonic() - killed_at)
        try:
            p.wait(timeout=max(left, 0.01))
        except subprocess.TimeoutExpired:
            hung += 1
            p.kill()
            p.wait()
    return victim, delay, time.monotonic() - killed_at, hung, ended_early


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--polychip", required=True)
    ap.add_argument("--trials", type=int, default=24)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--iters", type=int, default=200,
                    help="timed iterations per size (np 4: about 3 s of work here)")
    ap.add_argument("--max-delay", type=float, default=1.0, help="kill within this many seconds")
    ap.add_argument("--limit", type=float, default=60, help="survivors alive after this: hung")
    ap.add_argument("--slow", type=float, default=30)
    ap.add_argument("--transport", choices=["auto", "tcp"], default=None)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    times, slow, hung_trials = [], 0, 0
    for t in range(args.trials):
        victim, delay, seconds, hung, ended_early = trial(args, rng)
        if ended_early:
            print(f"trial {t:3d}: a survivor had ended before the kill; raise --iters", flush=True)
        times.append(seconds)
        slow += seconds > args.slow
        hung_trials += hung > 0
        print(f"trial {t:3d}: killed rank {victim} after {delay:5.3f} s; survivors ended "
              f"{seconds:6.2f} s later{'  HUNG' if hung else ''}", flush=True)
    print(f"# {args.trials} trials, np {args.np}: median {statistics.median(times):.2f} s, "
          f"max {max(times):.2f} s; {slow} took > {args.slow:g} s; {hung_trials} hung "
          f"(> {args.limit:g} s)")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
