"""Both adaptation modes from Python: hooks (in place) registered as Python
callables, and C kernel patches from a patch library (monkey-patch), each
listed with its origin and removable, and their failure modes."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import polychip

CPU = "cpu.host"


def test_a_python_hook_is_called_with_the_device_type_and_can_be_removed():
    seen = []
    hook_id = polychip.register_hook(CPU, "train.before_forward",
                                     lambda point, device_type, index: seen.append(
                                         (point, device_type, index)))
    try:
        assert any(h["id"] == hook_id and h["origin"].startswith("python: ")
                   for h in polychip.hooks())
        assert polychip.invoke_hook("train.before_forward", polychip.device("cpu"))
        assert seen == [("train.before_forward", CPU, 0)]
        # Another device type has no hook: the framework's default path runs.
        assert not polychip.invoke_hook("train.before_forward", polychip.device("sim.faithful"))
    finally:
        polychip.unregister_hook(hook_id)
    assert not polychip.invoke_hook("train.before_forward", polychip.device("cpu"))
    assert all(h["id"] != hook_id for h in polychip.hooks())


def test_a_hook_that_raises_fails_the_invocation_with_its_error():
    def broken(point, device_type, index):
        raise ValueError("the vendor's hook is broken")

    hook_id = polychip.register_hook(CPU, "train.after_backward", broken)
    try:
        with pytest.raises(polychip.Error, match="the vendor's hook is broken"):
            polychip.invoke_hook("train.after_backward", polychip.device("cpu"))
    finally:
        polychip.unregister_hook(hook_id)


def test_user_declared_hook_points_work_like_the_training_ones():
    polychip.declare_hook_point("test.python.point", "a point a Python framework declares")
    assert ("test.python.point", "a point a Python framework declares") in polychip.hook_points()
    calls = []
    hook_id = polychip.register_hook(CPU, "test.python.point", lambda *a: calls.append(a))
    try:
        polychip.invoke_hook("test.python.point", polychip.device("cpu"))
    finally:
        polychip.unregister_hook(hook_id)
    assert calls == [("test.python.point", CPU, 0)]


@pytest.mark.parametrize("device_type, point, message", [
    ("no.such", "train.before_forward", "no such device"),
    (CPU, "train.no_such_point", "unknown hook point 'train.no_such_point'"),
])
def test_hooks_on_unknown_targets_fail_naming_them(device_type, point, message):
    with pytest.raises(polychip.Error, match=message):
        polychip.register_hook(device_type, point, lambda *a: None)


def test_a_second_hook_at_the_same_point_is_refused_and_the_first_stays():
    first = []
    hook_id = polychip.register_hook(CPU, "train.before_optimizer_step", lambda *a: first.append(1))
    try:
        with pytest.raises(polychip.Error, match="already has a hook"):
            polychip.register_hook(CPU, "train.before_optimizer_step", lambda *a: None)
        polychip.invoke_hook("train.before_optimizer_step", polychip.device("cpu"))
        assert first == [1]
    finally:
        polychip.unregister_hook(hook_id)


def test_a_hook_that_invokes_itself_fails_at_the_recursion_limit_without_crashing():
    # What the innermost hook raised was formatted at Python's recursion
    # limit, where pybind11 retried str() without end (SIGSEGV); its own
    # interpreter, so that a crash fails this test only.
    job = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys
        import polychip
        cpu = polychip.device("cpu")
        polychip.register_hook("cpu.host", "train.before_forward",
                               lambda *a: polychip.invoke_hook("train.before_forward", cpu))
        sys.setrecursionlimit(300)
        try:
            polychip.invoke_hook("train.before_forward", cpu)
        except polychip.Error as e:
            print("failed with INTERNAL: RecursionError" in str(e))
        """)], capture_output=True, text=True, timeout=120)
    assert (job.returncode, job.stdout) == (0, "True\n"), job.stderr[-2000:]


PATCH_LIBRARY = os.environ.get("POLYCHIP_TEST_PATCH_LIBRARY")


@pytest.mark.skipif(not PATCH_LIBRARY, reason="ctest sets POLYCHIP_TEST_PATCH_LIBRARY")
def test_a_c_patch_library_patches_kernels_listed_and_restorable():
    before = {p["id"] for p in polychip.patches()}
    polychip.load_patch_library(PATCH_LIBRARY)
    added = [p for p in polychip.patches() if p["id"] not in before]
    assert {(p["device_type"], p["op"]) for p in added} == {("sim.faithful", "exp")}
    assert all(p["origin"] for p in added)
    for p in added:
        polychip.restore_patch(p["id"])
    assert {p["id"] for p in polychip.patches()} == before
    # Restored: the faithful kernel runs again (the patch would abort or hang).
    x = polychip.tensor(np.zeros(4, np.float32), device=polychip.device("sim.faithful"))
    y = polychip.empty([4], dtype="f32", device=polychip.device("sim.faithful"))
    polychip.call("exp", x, y)
    assert np.array_equal(y.numpy(), np.ones(4, np.float32))


def test_a_missing_patch_library_is_named():
    with pytest.raises(polychip.Error, match="/no/such/patch.so"):
        polychip.load_patch_library("/no/such/patch.so")


def test_an_empty_patch_library_path_is_refused():
    # dlopen("") is the program itself, searched for the patch entry point.
    with pytest.raises(polychip.Error, match="cannot load '': not a file path"):
        polychip.load_patch_library("")


@pytest.mark.skipif(not PATCH_LIBRARY, reason="ctest sets POLYCHIP_TEST_PATCH_LIBRARY")
def test_a_patch_library_path_with_a_nul_byte_is_refused():
    # dlopen read the path up to the NUL: the library loaded under another name.
    before = {p["id"] for p in polychip.patches()}
    try:
        with pytest.raises(polychip.Error, match="not a file path"):
            polychip.load_patch_library(PATCH_LIBRARY + "\x00.unused")
    finally:
        for p in polychip.patches():
            if p["id"] not in before:
                polychip.restore_patch(p["id"])


def test_a_hook_point_name_with_a_nul_byte_is_refused():
    # Hooks get the name as a C string: declared, it could never be invoked.
    with pytest.raises(polychip.Error, match="has a NUL byte") as raised:
        polychip.declare_hook_point("test.nul\x00point", "unusable")
    assert raised.value.code == polychip.StatusCode.INVALID_ARGUMENT
    assert all("\x00" not in name for name, _ in polychip.hook_points())
