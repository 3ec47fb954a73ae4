"""polychip.Communicator: collectives between processes under mpirun, and
argument errors raised as polychip.Error naming what is wrong."""
import os
import re
import shutil
import socket
import subprocess
import sys

import numpy as np
import pytest

import polychip

HERE = os.path.dirname(os.path.abspath(__file__))


def mpirun(np_, script, timeout=120):
    if not shutil.which("mpirun"):
        pytest.fail("mpirun is missing: tools/setup/setup.sh installs openmpi-bin")
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np_),
           "-x", "PYTHONPATH", "-x", "POLYCHIP_COMM_TIMEOUT=60", sys.executable,
           os.path.join(HERE, script)]  # script: relative to this folder
    # mpirun's variables must decide the ranks, not a torchrun-style job of
    # this process (the single_rank fixture's).
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env["POLYCHIP_COMM_TIMEOUT"] = "60"
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def test_every_collective_is_exact_across_two_processes_on_two_adapters():
    job = mpirun(2, "comm_rank.py")
    assert job.returncode == 0, job.stdout + job.stderr
    assert "rank 0 on cpu.host: OK" in job.stdout, job.stdout + job.stderr
    assert "rank 1 on sim.faithful: OK" in job.stdout, job.stdout + job.stderr


@pytest.fixture(scope="module")
def single_rank():
    # A job of one rank in this process, torchrun-style variables.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    job = {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    saved = {k: os.environ.get(k) for k in job}
    os.environ.update(job)
    try:
        yield polychip.Communicator.from_environment()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v


def test_a_single_rank_reduces_to_itself(single_rank):
    assert (single_rank.rank, single_rank.size) == (0, 1)
    x = np.arange(5, dtype=np.float32)
    out = np.zeros_like(x)
    single_rank.all_reduce(x, out)
    assert np.array_equal(out, x)


@pytest.mark.parametrize("call, message", [
    (lambda c: c.all_reduce(np.zeros(4, np.float32), np.zeros(4, np.float64)),
     "send is f32 but recv is f64"),
    (lambda c: c.all_reduce(np.zeros(4, np.float32), np.zeros(3, np.float32)),
     "recv holds 3 elements, expected 4"),
    (lambda c: c.all_reduce(np.zeros((4, 4), np.float32)[:, 1]),
     "C-contiguous"),
    (lambda c: c.all_reduce(np.zeros(4, np.float32), op="median"),
     "median"),
    (lambda c: c.all_reduce([1.0, 2.0]),
     "a NumPy array or a polychip.Tensor"),
    (lambda c: c.all_reduce(np.zeros(4, np.complex64)),
     "has no polychip dtype"),
    (lambda c: c.broadcast(np.zeros(4, np.float32), root=3),
     "root"),
    (lambda c: c.all_reduce(np.arange(4, dtype=">f4"), np.zeros(4, "<f4")),
     r"send has dtype >f4, not in the host's byte order \(convert it with .astype\('<f4'\)\)"),
    (lambda c: c.all_gather(np.arange(4, dtype="<i8"), np.zeros(4, ">i8")),
     "recv has dtype >i8, not in the host's byte order"),
])
def test_bad_arguments_raise_errors_naming_them(single_rank, call, message):
    with pytest.raises(polychip.Error, match=message):
        call(single_rank)


def test_a_read_only_output_is_refused(single_rank):
    out = np.zeros(4, np.float32)
    out.setflags(write=False)
    with pytest.raises(polychip.Error, match="read-only"):
        single_rank.all_reduce(np.zeros(4, np.float32), out)


def test_the_data_parallel_example_trains_the_same_weights_on_two_adapters():
    example = os.path.join(HERE, "..", "examples", "dp_train.py")
    job = mpirun(2, example)
    assert job.returncode == 0, job.stdout + job.stderr
    hashes = set(re.findall(r"weights sha256 ([0-9a-f]{16})", job.stdout))
    losses = [float(v) for v in re.findall(r"rank 0 \S+ step +\d+ loss ([\d.]+)", job.stdout)]
    assert len(hashes) == 1, job.stdout  # every rank took the same averaged steps
    assert len(losses) == 2 and losses[1] < 0.01 * losses[0], job.stdout
    assert "(sim.faithful)" in job.stdout, job.stdout
