"""Data-parallel training across adapters: each rank fits the same linear
model on its own shard, on its own device (rank 0: cpu, rank 1: sim.faithful,
...), and polychip averages the gradients across ranks every step.

    mpirun -np 2 python3 python/examples/dp_train.py   (or any launcher)
"""
import hashlib

import numpy as np

import polychip

ADAPTERS = ["cpu", "sim.faithful", "opencl"]
STEPS, LEARNING_RATE, SHARD, FEATURES = 60, 0.1, 64, 8

comm = polychip.Communicator.from_environment()  # ranks from the launcher's environment
device = polychip.device(ADAPTERS[comm.rank % len(ADAPTERS)])

rng = np.random.default_rng(comm.rank)  # every rank its own shard of one problem
true_w = np.linspace(-1, 1, FEATURES, dtype=np.float32).reshape(FEATURES, 1)
x = rng.standard_normal((SHARD, FEATURES)).astype(np.float32)
y = x @ true_w + 0.01 * rng.standard_normal((SHARD, 1)).astype(np.float32)
x_dev, y_dev = polychip.tensor(x, device=device), polychip.tensor(y, device=device)

w = np.zeros((FEATURES, 1), dtype=np.float32)  # the same start on every rank
for step in range(STEPS):
    # residual = x @ w - y, on this rank's device
    residual = polychip.tensor(-y, device=device)
    polychip.call("gemm", x_dev, polychip.tensor(w, device=device), residual, residual,
                  alpha=1.0, beta=1.0)
    # gradient of the mean squared error: 2/N * x^T @ residual
    grad = polychip.empty([FEATURES, 1], dtype="f32", device=device)
    polychip.call("gemm", x_dev, residual, polychip.tensor(np.zeros_like(w), device=device),
                  grad, alpha=2.0 / SHARD, beta=0.0, trans_a=1)
    comm.all_reduce(grad, op="avg")  # the same averaged gradient on every rank
    w -= LEARNING_RATE * grad.numpy()
    loss = np.array([float(np.mean(residual.numpy() ** 2))], dtype=np.float64)
    comm.all_reduce(loss, op="avg")
    if step in (0, STEPS - 1):
        print("rank %d (%s) step %2d loss %.6f" % (comm.rank, device.device_type, step, loss[0]),
              flush=True)

print("rank %d weights sha256 %s" % (comm.rank, hashlib.sha256(w.tobytes()).hexdigest()[:16]),
      flush=True)
