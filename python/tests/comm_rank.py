"""One rank of test_comm.py's jobs (started by mpirun): every collective on
NumPy arrays, and the all-reduce on a polychip tensor of this rank's device
(rank 0 on cpu, rank 1 on sim.faithful: two adapters in one job). Prints one
line, OK or what differed; exits non-zero on an error."""
import sys

import numpy as np

import polychip

devices = ["cpu", "sim.faithful"]
comm = polychip.Communicator.from_environment(polychip.device(devices[0]))
rank, size = comm.rank, comm.size
device = polychip.device(devices[rank % len(devices)])

problems = []

x = np.arange(1000, dtype=np.float32) + rank
out = np.empty_like(x)
comm.all_reduce(x, out)
expected = sum(np.arange(1000, dtype=np.float32) + r for r in range(size))
if not np.array_equal(out, expected):
    problems.append("all_reduce")

in_place = np.full(17, rank + 1, dtype=np.int64)
comm.all_reduce(in_place, op="max")
if not np.array_equal(in_place, np.full(17, size, dtype=np.int64)):
    problems.append("in-place all_reduce max")

b = np.full(5, 7.0 if rank == 1 else 0.0)
comm.broadcast(b, root=1)
if not np.array_equal(b, np.full(5, 7.0)):
    problems.append("broadcast")

gathered = np.empty(3 * size, dtype=np.float32)
comm.all_gather(np.full(3, rank, dtype=np.float32), gathered)
if not np.array_equal(gathered, np.repeat(np.arange(size, dtype=np.float32), 3)):
    problems.append("all_gather")

block = np.empty(2, dtype=np.float64)
comm.reduce_scatter(np.arange(2 * size, dtype=np.float64), block)
if not np.array_equal(block, size * np.arange(2 * rank, 2 * rank + 2, dtype=np.float64)):
    problems.append("reduce_scatter")

if rank == 0:
    comm.send(np.arange(4, dtype=np.int32), peer=1)
elif rank == 1:
    got = np.zeros(4, dtype=np.int32)
    comm.recv(got, peer=0)
    if not np.array_equal(got, np.arange(4, dtype=np.int32)):
        problems.append("send/recv")

t = polychip.tensor(np.full(64, 0.5 * (rank + 1), dtype=np.float32), device=device)
comm.all_reduce(t)
if not np.array_equal(t.numpy(), np.full(64, 0.5 * size * (size + 1) / 2, dtype=np.float32)):
    problems.append("all_reduce on a %s tensor" % device.device_type)

comm.barrier()
print("rank %d on %s: %s" % (rank, device.device_type, "OK" if not problems else
                                 "WRONG " + ", ".join(problems)), flush=True)
sys.exit(1 if problems else 0)
