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
        raise TypeError("from_dlpack: NumPy cannot read this producer's memory (%s); only CPU "
                        "memory can be imported" % e) from e
    return tensor(array, device=device)

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
