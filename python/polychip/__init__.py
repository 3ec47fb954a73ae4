"""polychip: a hardware abstraction layer for AI chips, from Python.

The compiled part (polychip._polychip) holds the runtime: adapters, devices,
tensors, the operator contract and the collectives (Communicator); polychip.patching
and polychip.suites (certify, train: they run in the polychip command) are pure Python.
See docs/python.md.
"""

from ._polychip import (  # noqa: F401 (re-exported)
    Adapter,
    Communicator,
    Device,
    Error,
    Event,
    StatusCode,
    Stream,
    Tensor,
    adapters,
    call,
    declare_hook_point,
    device,
    devices,
    empty,
    hook_points,
    hooks,
    invoke_hook,
    load_patch_library,
    ops,
    patch_kernel,
    patches,
    register_hook,
    restore_patch,
    tensor,
    unregister_hook,
)
from . import patching  # noqa: F401 (pure Python, polychip.patching)
from . import suites  # noqa: F401 (pure Python: the suites and training in the polychip command)
from .suites import certify, train  # noqa: F401 (re-exported)


def from_dlpack(producer, device=None):
    """A polychip.Tensor holding the contents of any DLPack producer whose
    memory is on the CPU (torch.Tensor, numpy.ndarray, ...), on `device`
    (a polychip.Device or a spec such as "sim.faithful"; default cpu).

    This is a copy: the adapter ABI has no way to adopt memory it did not
    allocate. The other direction, torch.from_dlpack(tensor) and
    numpy.from_dlpack(tensor), shares memory without a copy.
    """
    import numpy

    if not hasattr(producer, "__dlpack__"):
        raise TypeError("from_dlpack needs an object with __dlpack__ (a torch.Tensor, a NumPy "
                        "array, ...), not %s" % type(producer).__name__)
    try:
        array = numpy.from_dlpack(producer)
    except (BufferError, RuntimeError, TypeError) as e:
        raise TypeError("from_dlpack: " + _why_numpy_refused(producer, e)) from e
    return tensor(array, device=device)


_DLPACK_CPU = 1  # DLDeviceType kDLCPU


def _why_numpy_refused(producer, error):
    """Why numpy.from_dlpack refused `producer`: its memory is elsewhere
    than the CPU, or (CPU memory) NumPy has no type for its elements, as for
    bfloat16 and the float8 types."""
    try:
        device_type = int(producer.__dlpack_device__()[0])
    except Exception:  # no or a broken __dlpack_device__: NumPy's own words say why
        device_type = None
    if device_type is not None and device_type != _DLPACK_CPU:
        return ("the producer's memory is on DLPack device type %d, not the CPU (%s); only CPU "
                "memory can be imported" % (device_type, error))
    why = "NumPy cannot import it (%s)" % error
    if device_type == _DLPACK_CPU:
        why = "the producer's memory is on the CPU, but " + why
    dtype = getattr(producer, "dtype", None)
    if dtype is not None:
        why += "; its dtype is %s" % dtype
    if "dtype" in str(error).lower():
        # polychip has bf16 and f8, but imports through NumPy, which has not.
        why += (": NumPy has no bfloat16 or float8 type; convert such a tensor to float32 "
                "and give polychip's dtype, polychip.tensor(t.float(), dtype=\"bf16\")")
    return why


__all__ = [
    "Adapter",
    "Communicator",
    "Device",
    "Error",
    "Event",
    "StatusCode",
    "Stream",
    "Tensor",
    "adapters",
    "call",
    "certify",
    "declare_hook_point",
    "device",
    "devices",
    "empty",
    "from_dlpack",
    "hook_points",
    "hooks",
    "invoke_hook",
    "load_patch_library",
    "ops",
    "patch_kernel",
    "patches",
    "register_hook",
    "restore_patch",
    "unregister_hook",
    "patching",
    "suites",
    "tensor",
    "train",
]
