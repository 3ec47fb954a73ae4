#!/usr/bin/env python3
"""Runs a command on a machine made busy the way a CI run makes it: a busy
loop on every core, and a process that keeps binding listeners to port 0 and
hanging up on whatever connects to them, as the ranks and rendezvous stores
of the comm tests that ctest -j runs beside another test do. A test that
relies on its timing or on a port staying free fails here far more often
than in CI (docs/testing.md, "Stress runs").

Usage: stress_under_load.py [--busy N] [--listeners M] -- COMMAND [ARGS...]
  --busy       busy loops (default: one per core)
  --listeners  listeners the churner keeps open at once (default 2000)
Exit status: the command's (1 when it could not be started).
"""
import argparse
import collections
import ctypes
import multiprocessing
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent():
    """A load process outlives no runner, even one killed by ctest's timeout."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:  # the runner was gone before prctl took effect
        os._exit(0)


def busy_loop():
    die_with_parent()
    while True:
        pass


def loopback_listener():
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        s.setblocking(False)
        return s
    except OSError:
        s.close()
        raise


def churn_ports(listeners):
    """Keeps `listeners` loopback listeners on kernel-chosen ports, replacing
    the oldest with a new one as fast as it can; a connection to any of them
    is accepted and closed at once (another job's store refusing a stranger)."""
    die_with_parent()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = listeners + 64
    resource.setrlimit(resource.RLIMIT_NOFILE,
                       (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))
    selector = selectors.DefaultSelector()
    held = collections.deque()
    while True:
        try:
            s = loopback_listener()
            selector.register(s, selectors.EVENT_READ)
            held.append(s)
        except OSError:  # out of files or ports: the oldest makes room
            if not held:
                raise
            s = None
        if s is None or len(held) > listeners:
            oldest = held.popleft()
            selector.unregister(oldest)
            oldest.close()
        for key, _ in selector.select(0):
            try:
                key.fileobj.accept()[0].close()
            except OSError:
                pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--listeners", type=int, default=2000)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.busy < 0 or args.listeners < 1:
        parser.error("give --busy >= 0, --listeners >= 1 and a command after --")
    # SIGTERM (ctest's timeout, a user) ends the load too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load = [multiprocessing.Process(target=busy_loop, daemon=True) for _ in range(args.busy)]
    load.append(multiprocessing.Process(target=churn_ports, args=(args.listeners,), daemon=True))
    for p in load:
        p.start()
    print(f"stress_under_load: {args.busy} busy loops and {args.listeners} churning listeners "
          f"beside: {' '.join(command)}", flush=True)
    try:
        return subprocess.call(command)
    except OSError as e:
        print(f"stress_under_load: cannot run {command[0]}: {e}", file=sys.stderr)
        return 1
    finally:
        for p in load:
            p.kill()
            p.join()


if __name__ == "__main__":
    sys.exit(main())
