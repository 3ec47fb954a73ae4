"""polychip: a hardware abstraction layer for AI chips, from Python.

The compiled part (polychip._polychip) holds the runtime: adapters, devices,
tensors, the operator contract and the collectives (Communicator); polychip.patching is pure Python.
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
    patches,
    register_hook,
    restore_patch,
    tensor,
    unregister_hook,
)
from . import patching  # noqa: F401 (pure Python, polychip.patching)

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
    "declare_hook_point",
    "device",
    "devices",
    "empty",
    "hook_points",
    "hooks",
    "invoke_hook",
    "load_patch_library",
    "ops",
    "patches",
    "register_hook",
    "restore_patch",
    "unregister_hook",
    "patching",
    "tensor",
]
