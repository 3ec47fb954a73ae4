"""Kernel patches written in Python (monkey-patch mode): a callable replaces
an op's kernel on every device of a type, sees the tensors as NumPy arrays
(inputs read-only, outputs written in place), gets the attributes by their
contract names, is listed with its origin and restorable; what it raises
is an error naming the op and the exception."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import polychip


@pytest.fixture
def patch():
    """polychip.patch_kernel, with every patch still active restored after the test."""
    made = []

    def patch_kernel(*args, **kwargs):
        made.append(polychip.patch_kernel(*args, **kwargs))
        return made[-1]

    yield patch_kernel
    active = {p["id"] for p in polychip.patches()}
    for patch_id in made:
        if patch_id in active:
            polychip.restore_patch(patch_id)


@pytest.fixture
def sim():
    return polychip.device("sim.faithful")


# sim.faithful's memory is not host visible, the cpu adapter's is: the
# kernel sees host copies on both.
@pytest.mark.parametrize("spec", ["sim.faithful", "cpu"])
def test_a_python_kernel_replaces_the_op_until_restored(patch, spec):
    device = polychip.device(spec)
    x = polychip.tensor(np.array([-2, -1, 0, 3], np.float32), device=device)
    y = polychip.empty([4], device=device)
    seen = []

    def leaky_relu(x, y):
        seen.append((x.dtype, x.flags.writeable, y.flags.writeable))
        y[...] = np.where(x > 0, x, 0.5 * x)

    patch_id = patch(device.device_type, "relu", leaky_relu)
    listed = [p for p in polychip.patches() if p["id"] == patch_id]
    assert len(listed) == 1
    assert listed[0]["op"] == "relu" and listed[0]["device_type"] == device.device_type
    assert listed[0]["origin"].startswith("python: <function")
    polychip.call("relu", x, y)
    assert y.numpy().tolist() == [-1.0, -0.5, 0.0, 3.0]
    assert seen == [(np.float32, False, True)]

    polychip.restore_patch(patch_id)
    assert all(p["id"] != patch_id for p in polychip.patches())
    polychip.call("relu", x, y)
    assert y.numpy().tolist() == [0.0, 0.0, 0.0, 3.0]
    assert len(seen) == 1


def test_only_the_patched_device_type_runs_the_python_kernel(patch, sim):
    patch(sim.device_type, "neg", lambda x, y: y.fill(42))
    cpu = polychip.device("cpu")
    x = polychip.tensor(np.ones(3, np.float32), device=cpu)
    y = polychip.empty([3], device=cpu)
    polychip.call("neg", x, y)
    assert y.numpy().tolist() == [-1.0, -1.0, -1.0]


def test_a_python_gemm_gets_every_attribute_by_name(patch, sim):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((5, 4)).astype(np.float32)
    c = rng.standard_normal((3, 5)).astype(np.float32)
    received = {}

    def numpy_gemm(a, b, c, y, **attributes):
        received.update(attributes)
        left = a.T if attributes["trans_a"] else a
        right = b.T if attributes["trans_b"] else b
        product = left.astype(np.float64) @ right.astype(np.float64)
        y[...] = attributes["alpha"] * product + attributes["beta"] * c

    inputs = [polychip.tensor(v, device=sim) for v in (a, b, c)]
    y = polychip.empty([3, 5], device=sim)
    patch(sim.device_type, "gemm", numpy_gemm)
    polychip.call("gemm", *inputs, y, trans_b=1, alpha=2.0, beta=0.5)

    names = {attr["name"] for op in polychip.ops() if op["name"] == "gemm"
             for attr in op["attributes"]}
    assert set(received) == names
    assert (received["trans_a"], received["trans_b"]) == (0, 1)
    assert (received["alpha"], received["beta"]) == (2.0, 0.5)
    # The device's own result, computed on the cpu adapter, agrees.
    cpu = polychip.device("cpu")
    y_cpu = polychip.empty([3, 5], device=cpu)
    polychip.call("gemm", *[polychip.tensor(v, device=cpu) for v in (a, b, c)], y_cpu,
                  trans_b=1, alpha=2.0, beta=0.5)
    np.testing.assert_allclose(y.numpy(), y_cpu.numpy(), rtol=1e-5, atol=1e-6)


def test_bf16_arrives_as_float32_and_goes_back_rounded(patch, sim):
    x = polychip.tensor(np.array([1.0, 2.0, -3.0], np.float32), dtype="bf16", device=sim)
    y = polychip.empty([3], dtype="bf16", device=sim)
    seen = []

    def third(x, y):
        seen.append((x.dtype, x.tolist()))
        y[...] = x / 3

    patch(sim.device_type, "neg", third)
    polychip.call("neg", x, y)
    assert seen == [(np.float32, [1.0, 2.0, -3.0])]
    rounded = polychip.tensor(np.array([1, 2, -3], np.float32) / 3, dtype="bf16").numpy()
    assert y.numpy().tolist() == rounded.tolist()
    assert y.numpy().tolist() != (np.array([1, 2, -3], np.float32) / 3).tolist()


@pytest.mark.parametrize("dtypes", [["f16", "f16"], ["f16"]])  # whole, or its first tensors'
def test_a_signature_patch_leaves_other_dtypes_to_the_device(patch, sim, dtypes):
    patch(sim.device_type, "neg", lambda x, y: y.fill(7), dtypes=dtypes)
    for dtype, expected in (("f16", [7.0, 7.0]), ("f32", [-1.0, -2.0])):
        x = polychip.tensor(np.array([1, 2], np.float32), dtype=dtype, device=sim)
        y = polychip.empty([2], dtype=dtype, device=sim)
        polychip.call("neg", x, y)
        assert y.numpy().tolist() == expected, dtype


def test_the_most_recent_python_patch_runs_and_restoring_it_uncovers_the_earlier(patch, sim):
    x = polychip.tensor(np.zeros(2, np.float32), device=sim)
    y = polychip.empty([2], device=sim)
    patch(sim.device_type, "neg", lambda x, y: y.fill(1))
    second = patch(sim.device_type, "neg", lambda x, y: y.fill(2))
    polychip.call("neg", x, y)
    assert y.numpy().tolist() == [2.0, 2.0]
    polychip.restore_patch(second)
    polychip.call("neg", x, y)
    assert y.numpy().tolist() == [1.0, 1.0]


def test_a_python_kernel_sees_the_streams_earlier_work(patch, sim):
    stream = polychip.Stream(sim)
    x = polychip.empty([4], device=sim)
    y = polychip.empty([4], device=sim)
    patch(sim.device_type, "neg", lambda x, y: np.add(x, 1, out=y))
    polychip.call("fill", x, value=3.0, stream=stream)
    polychip.call("neg", x, y, stream=stream)
    stream.synchronize()
    assert y.numpy().tolist() == [4.0] * 4


def test_what_a_python_kernel_raises_fails_the_call_naming_op_and_exception(patch, sim):
    def broken(x, y):
        raise RuntimeError("the vendor's kernel is broken")

    patch(sim.device_type, "exp", broken)
    x = polychip.tensor(np.zeros(2, np.float32), device=sim)
    y = polychip.empty([2], device=sim)
    # An earlier call's failure on the same adapter: its message was quoted
    # as the patch's before ("event_elapsed: an event was never recorded").
    with pytest.raises(polychip.Error, match="never recorded"):
        polychip.Event.elapsed_ms(polychip.Event(sim), polychip.Event(sim))
    with pytest.raises(polychip.Error,
                       match="Python kernel for exp raised.*the vendor's kernel is broken") as raised:
        polychip.call("exp", x, y)
    assert str(raised.value).startswith(
        f"INTERNAL: exp on {sim.label} ({sim.device_type}): the patched kernel (python: "
        "<function test_what_a_python_kernel_raises_fails_the_call_naming_op_and_exception."
        "<locals>.broken at ")
    assert ") failed with INTERNAL: Python kernel for exp raised" in str(raised.value)
    assert "never recorded" not in str(raised.value)


def test_a_python_kernel_that_calls_its_own_op_fails_at_the_recursion_limit_without_crashing():
    # As the hook of test_adaptation.py: in its own interpreter.
    job = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys
        import polychip
        def exp(x, y):
            polychip.call("exp", polychip.empty([2]), polychip.empty([2]))
        polychip.patch_kernel("cpu.host", "exp", exp)
        sys.setrecursionlimit(300)
        try:
            exp(None, None)
        except polychip.Error as e:
            print("Python kernel for exp raised RecursionError" in str(e))
        """)], capture_output=True, text=True, timeout=120)
    assert (job.returncode, job.stdout) == (0, "True\n"), job.stderr[-2000:]


@pytest.mark.parametrize("spec", ["cpu", "sim.faithful"])
def test_a_python_kernel_that_keeps_a_view_fails_the_call_and_writes_nothing(patch, spec):
    # On cpu (host-visible memory) the kernel's arrays were views of the
    # tensors: its writes landed though the call failed, and the kept view
    # wrote into y afterwards (or into freed memory).
    device = polychip.device(spec)
    x = polychip.tensor(np.zeros(3, np.float32), device=device)
    y = polychip.tensor(np.zeros(3, np.float32), device=device)
    kept = []

    def keeps_a_view(x, y):
        y[...] = 5
        kept.append(y[1:])

    patch(device.device_type, "exp", keeps_a_view)
    with pytest.raises(polychip.Error, match=r"kept tensor 1 \(or a view of it\) after returning"
                                             r".*nothing was written back"):
        polychip.call("exp", x, y)
    assert y.numpy().tolist() == [0.0, 0.0, 0.0]
    kept[0][...] = 9  # the kernel's own memory now, not y's
    assert y.numpy().tolist() == [0.0, 0.0, 0.0]
    kept.clear()
    # A copy is the kernel's own.
    patch(device.device_type, "exp", lambda x, y: kept.append(np.array(y)))
    polychip.call("exp", x, y)
    assert len(kept) == 1


@pytest.mark.parametrize("spec", ["cpu", "sim.faithful"])
def test_a_python_kernel_that_raises_writes_nothing(patch, spec):
    device = polychip.device(spec)
    x = polychip.tensor(np.zeros(3, np.float32), device=device)
    y = polychip.tensor(np.ones(3, np.float32), device=device)

    def fails_halfway(x, y):
        y[0] = 7
        raise ValueError("halfway")

    patch(device.device_type, "exp", fails_halfway)
    with pytest.raises(polychip.Error, match="halfway"):
        polychip.call("exp", x, y)
    assert y.numpy().tolist() == [1.0, 1.0, 1.0]


GEMM_CALL = "fn(a, b, c, y, *, trans_a, trans_b, math_mode, alpha, beta)"


@pytest.mark.parametrize("op, kernel, why", [
    ("gemm", lambda a, b, c, y, *, trans_a, trans_b, alpha, beta: None,
     "got an unexpected keyword argument 'math_mode'"),
    ("gemm", lambda a, b, c, y, *, trans_a, trans_b, alpha, beta, math_mode, gamma: None,
     "missing a required argument: 'gamma'"),
    ("gemm", lambda a, b, y, **attributes: None, "too many positional arguments"),
    ("relu", lambda x, y, alpha: None, "missing a required argument: 'alpha'"),
    ("relu", lambda x: None, "too many positional arguments"),
])
def test_a_kernel_that_cannot_take_the_ops_arguments_is_refused_when_patched(op, kernel, why):
    before = polychip.patches()
    with pytest.raises(polychip.Error, match=why) as raised:
        polychip.patch_kernel("sim.faithful", op, kernel)
    assert raised.value.code == polychip.StatusCode.INVALID_ARGUMENT
    assert f"{op}'s kernel is called as " + (GEMM_CALL if op == "gemm" else "fn(x, y)") \
        in raised.value.message
    assert polychip.patches() == before


class CallableGemm:
    def __call__(self, a, b, c, y, *, trans_a, trans_b, alpha, beta, math_mode):
        pass


@pytest.mark.parametrize("kernel", [
    lambda *tensors, **attributes: None,
    lambda a, b, c, y, **attributes: None,
    lambda a, b, c, y, *, trans_a, trans_b, alpha, beta, math_mode, unused=None: None,
    lambda *tensors, trans_a, trans_b, alpha, beta, math_mode: None,
    CallableGemm(),
])
def test_kernels_that_take_the_ops_arguments_are_accepted(patch, kernel):
    patch_id = patch("sim.faithful", "gemm", kernel)
    assert any(p["id"] == patch_id for p in polychip.patches())


def test_a_python_kernel_cannot_write_its_inputs(patch, sim):
    def writes_input(x, y):
        x[0] = 5

    patch(sim.device_type, "exp", writes_input)
    x = polychip.tensor(np.zeros(2, np.float32), device=sim)
    y = polychip.empty([2], device=sim)
    with pytest.raises(polychip.Error, match="read-only"):
        polychip.call("exp", x, y)
    assert x.numpy().tolist() == [0.0, 0.0]


@pytest.mark.parametrize("device_type, op, fn, dtypes, message", [
    ("sim.faithful", "no_such_op", lambda *a: None, None, "not an op of the contract"),
    ("no.such", "exp", lambda *a: None, None, "no such device"),
    ("sim.faithful", "exp", "not a function", None, "not callable"),
    ("sim.faithful", "exp", lambda *a: None, ["f32", "f99"], "unknown dtype 'f99'"),
    ("sim.faithful", "exp", lambda *a: None, ["f32"] * 3, "3 dtypes but exp takes 2 tensors"),
])
def test_patching_a_missing_target_fails_naming_it(device_type, op, fn, dtypes, message):
    before = polychip.patches()
    with pytest.raises(polychip.Error, match=message):
        polychip.patch_kernel(device_type, op, fn, dtypes=dtypes)
    assert polychip.patches() == before


def test_restoring_an_unknown_patch_is_an_error():
    with pytest.raises(polychip.Error, match="no active patch with id 999999"):
        polychip.restore_patch(999999)
