#!/usr/bin/env python3
"""Kill trials: SIGKILL one rank of a running job at a random moment and time
how long the survivors (and the launcher) take to end.

Two modes:
  default     --np ranks of `polychip comm-perf` started the way torchrun or a
              scheduler would (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the
              environment; nothing that could end the job), so only the ranks'
              own failure detection ends the survivors;
  --launcher  `polychip comm-perf --np N` (the built-in launcher); one of its
              ranks is killed, and the launcher must end the job and name it.
Half the kills land in the first 0.15 s (rendezvous and connection set-up),
the rest anywhere in the first --max-delay seconds (set-up or collectives).
A job still running --limit seconds after the kill counts as hung.

With --launcher the launcher's message must name the killed rank (its RANK,
read from the victim's environment) and the signal. --transport takes a comma
separated list (auto,tcp,rdma): trials cycle through it.

Usage: kill_trials.py --polychip build/bin/polychip [--trials 24] [--np 4] [--launcher]
Exit code 1 when any trial took longer than --slow seconds, hung, or (with
--launcher) ended without the launcher naming the killed rank.
"""
import argparse
import os
import random
import re
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


def perf_command(args):
    return [args.polychip, "comm-perf", "-c", "all_reduce", "-b", "1M", "-e", "8M", "-w", "2",
            "-n", str(args.iters)]


def kill_delay(args, rng):
    return rng.uniform(0, 0.15) if rng.random() < 0.5 else rng.uniform(0, args.max_delay)


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def rank_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for entry in f.read().split(b"\0"):
                if entry.startswith(b"RANK="):
                    return int(entry[5:])
    except OSError:
        pass
    return None


def environment_trial(args, rng, transport):
    port = free_port()
    procs = []
    for rank in range(args.np):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.np), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        if transport:
            env["POLYCHIP_COMM_TRANSPORT"] = transport
        procs.append(subprocess.Popen(perf_command(args), env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
    victim = rng.randrange(args.np)
    delay = kill_delay(args, rng)
    time.sleep(delay)
    early = [i for i, p in enumerate(procs) if i != victim and p.poll() is not None]
    killed_at = time.monotonic()
    procs[victim].send_signal(signal.SIGKILL)
    hung = False
    for p in procs:
        try:
            p.wait(timeout=max(args.limit - (time.monotonic() - killed_at), 0.01))
        except subprocess.TimeoutExpired:
            hung = True
            p.kill()
            p.wait()
    return dict(victim=victim, delay=delay, seconds=time.monotonic() - killed_at, hung=hung,
                note="a survivor had ended before the kill; raise --iters" if early else "")


def check_launcher_report(err, victim, world):
    """Empty when the launcher named the killed rank and every survivor either
    said itself which rank it lost or was ended by the launcher; else why not."""
    named = f"polychip launcher: rank {victim} was killed by signal 9"
    if named not in err:
        return f"no '{named}'"
    ended = re.search(r"ending the job \(killed rank\(s\) ([0-9, ]+)\)", err)
    ended_by_launcher = {int(r) for r in re.findall(r"[0-9]+", ended.group(1))} if ended else set()
    for survivor in range(world):
        if survivor == victim or survivor in ended_by_launcher:
            continue
        said = [line.split(f"rank {survivor}:", 1)[1] for line in err.splitlines()
                if f"rank {survivor}:" in line]
        if not any(re.search(rf"\brank {victim}\b(?!:)", text) for text in said):
            return f"rank {survivor} ended without naming rank {victim}"
    return ""


def launcher_trial(args, rng, transport):
    env = dict(os.environ)
    if transport:
        env["POLYCHIP_COMM_TRANSPORT"] = transport
    job = subprocess.Popen([args.polychip] + perf_command(args)[1:] + ["--np", str(args.np)],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    delay = kill_delay(args, rng)
    time.sleep(delay)
    ranks = children(job.pid)
    while len(ranks) < args.np and job.poll() is None:  # not every rank started yet
        time.sleep(0.001)
        ranks = children(job.pid)
    victim = rng.randrange(len(ranks)) if ranks else -1
    # Before its execve a rank has the launcher's environment; the launcher
    # forks ranks in order, so its children list is in rank order.
    victim_rank = None if victim < 0 else (rank_of(ranks[victim]) if rank_of(ranks[victim]) is not None else victim)
    killed_at = time.monotonic()
    if victim >= 0:
        try:
            os.kill(ranks[victim], signal.SIGKILL)
        except ProcessLookupError:
            pass
    hung = False
    try:
        _, err = job.communicate(timeout=args.limit)
    except subprocess.TimeoutExpired:
        hung = True
        job.kill()
        _, err = job.communicate()
    note = check_launcher_report(err, victim_rank, args.np) if victim_rank is not None else \
        "the launcher had ended before a rank could be killed"
    return dict(victim=victim if victim_rank is None else victim_rank, delay=delay, seconds=time.monotonic() - killed_at, hung=hung,
                note=note)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--polychip", required=True)
    ap.add_argument("--trials", type=int, default=24)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--iters", type=int, default=200,
                    help="timed iterations per size (np 4: about 3 s of work here)")
    ap.add_argument("--max-delay", type=float, default=1.0, help="kill within this many seconds")
    ap.add_argument("--limit", type=float, default=60, help="still running after this: hung")
    ap.add_argument("--slow", type=float, default=30)
    ap.add_argument("--transport", default=None,
                    help="POLYCHIP_COMM_TRANSPORT per trial, cycling through a list: auto,tcp,rdma")
    ap.add_argument("--launcher", action="store_true",
                    help="start the job with the built-in launcher (--np) and kill one of its ranks")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    run = launcher_trial if args.launcher else environment_trial
    transports = args.transport.split(",") if args.transport else [None]
    for t in transports:
        if t not in (None, "auto", "tcp", "rdma"):
            ap.error(f"--transport: unknown transport '{t}' (auto, tcp or rdma)")
    times, slow, hung, notes = [], 0, 0, 0
    for t in range(args.trials):
        transport = transports[t % len(transports)]
        r = run(args, rng, transport)
        times.append(r["seconds"])
        slow += r["seconds"] > args.slow
        hung += r["hung"]
        notes += bool(r["note"])
        print(f"trial {t:3d} ({transport or 'default'}): killed rank {r['victim']} after {r['delay']:5.3f} s; the job ended "
              f"{r['seconds']:6.2f} s later{'  HUNG' if r['hung'] else ''}"
              f"{'  (' + r['note'] + ')' if r['note'] else ''}", flush=True)
    print(f"# {args.trials} trials, np {args.np}, {'launcher' if args.launcher else 'env'}: "
          f"median {statistics.median(times):.2f} s, max {max(times):.2f} s; {slow} took > "
          f"{args.slow:g} s; {hung} hung (> {args.limit:g} s); {notes} with a note")
    return 1 if slow or hung or (args.launcher and notes) else 0


if __name__ == "__main__":
    sys.exit(main())
