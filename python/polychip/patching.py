"""Patch attributes of Python modules and classes, safely.

    with polychip.patching.patch({"torch.nn.functional.gelu": my_gelu}):
        ...

Each key names a target "package.module.Class.attribute" (the longest
importable prefix is the module, the rest is looked up attribute by
attribute). Patching fails loudly, naming the target, when the target no
longer exists or when a callable replacement's signature differs from the
original's, so an upstream change breaks the patch at once instead of
silently (what made FlagScale drop monkey-patching). A mapping is applied
all or nothing, the originals are kept (Patcher.original) and restore()
leaves every namespace exactly as it was, including attributes that were
inherited rather than defined on the patched class.
"""

import importlib
import inspect
from typing import Any, Dict, Mapping, Optional

__all__ = ["PatchError", "Patcher", "patch"]

_MISSING = object()


class PatchError(Exception):
    """A patch could not be applied or restored; .target names it."""

    def __init__(self, target: str, reason: str):
        super().__init__(f"cannot patch {target!r}: {reason}")
        self.target = target
        self.reason = reason


def _import_longest_prefix(target: str, parts):
    """The module named by the longest importable prefix of parts, and its length."""
    for length in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:length])
        try:
            return importlib.import_module(name), length
        except ModuleNotFoundError as error:
            # Only "this prefix is not a module": an import failing inside
            # an existing module is that module's error and propagates.
            if error.name is None or not name.startswith(error.name):
                raise
    raise PatchError(target, f"no module {parts[0]!r} can be imported")


class _Slot:
    """One target resolved to the namespace that holds it."""

    def __init__(self, target: str):
        parts = target.split(".") if isinstance(target, str) else []
        # Names only: importlib finds the frozen module os under "os\0" (a
        # copy nobody else uses), so a NUL byte would patch nothing.
        if len(parts) < 2 or not all(part.isidentifier() for part in parts):
            raise PatchError(target, "a target is 'module.attribute' or 'module.Class.attribute'")
        owner, length = _import_longest_prefix(target, parts)
        path = ".".join(parts[:length])
        for part in parts[length:-1]:
            if not hasattr(owner, part):
                raise PatchError(target, f"{path} has no attribute {part!r} (it no longer exists)")
            owner, path = getattr(owner, part), f"{path}.{part}"
        self.name = parts[-1]
        if not hasattr(owner, self.name):
            raise PatchError(target, f"{path} has no attribute {self.name!r} (it no longer exists)")
        self.target = target
        self.owner = owner
        # The raw entry of the owner's own namespace (staticmethod and
        # classmethod objects included), or _MISSING when inherited.
        self.own_entry = vars(owner).get(self.name, _MISSING)
        # What the owner's namespace (or its bases) hold, unbound.
        self.raw = inspect.getattr_static(owner, self.name)
        self.original = getattr(owner, self.name)


def _signature(value) -> Optional[inspect.Signature]:
    try:
        return inspect.signature(value)
    except (TypeError, ValueError):  # builtins without signature metadata
        return None


def _accepts_anything(signature: inspect.Signature) -> bool:
    kinds = {p.kind for p in signature.parameters.values()}
    return {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD} <= kinds


def _shape(signature: inspect.Signature):
    return [(p.name, p.kind, p.default is not inspect.Parameter.empty)
            for p in signature.parameters.values()]


def _unwrapped(value: Any) -> Any:
    return value.__func__ if isinstance(value, (staticmethod, classmethod)) else value


def _check_replacement(slot: _Slot, replacement: Any) -> None:
    original = _unwrapped(slot.raw)
    if not callable(original):
        return
    if not callable(_unwrapped(replacement)):
        raise PatchError(slot.target, f"the original is callable, the replacement "
                                      f"{replacement!r} is not")
    original, new = _signature(original), _signature(_unwrapped(replacement))
    if original is None or new is None or _accepts_anything(new):
        return
    if _shape(original) != _shape(new):
        raise PatchError(slot.target, f"the replacement's signature {new} does not match the "
                                      f"original's {original} (parameter names, kinds and "
                                      f"which have defaults must agree)")


def _as_entry(slot: _Slot, replacement: Any) -> Any:
    """Keeps a patched staticmethod/classmethod one, so calls bind the same way."""
    if isinstance(slot.raw, (staticmethod, classmethod)) and not isinstance(
            replacement, (staticmethod, classmethod)):
        return type(slot.raw)(replacement)
    return replacement


class Patcher:
    """A set of patches, applied by apply() or `with`, undone by restore()."""

    def __init__(self, patches: Mapping[str, Any]):
        self._patches: Dict[str, Any] = dict(patches)
        self._applied: Dict[str, tuple] = {}  # target -> (slot, installed entry)

    @property
    def active(self) -> bool:
        return bool(self._applied)

    def original(self, target: str) -> Any:
        """What `target` was before the patch (a replacement may call it)."""
        if target not in self._applied:
            raise PatchError(target, "it is not patched by this Patcher")
        return self._applied[target][0].original

    def apply(self) -> "Patcher":
        """Applies every patch or, when one fails, none (raising PatchError)."""
        if self.active:
            raise PatchError(next(iter(self._applied)), "this Patcher is already applied")
        slots = [_Slot(target) for target in self._patches]  # all resolved and checked first
        for slot in slots:
            _check_replacement(slot, self._patches[slot.target])
        for slot in slots:
            entry = _as_entry(slot, self._patches[slot.target])
            try:
                setattr(slot.owner, slot.name, entry)
            except Exception as error:  # a read-only attribute, a built-in type, ...
                self.restore()  # the ones applied so far
                raise PatchError(slot.target, f"it cannot be set: {error}") from error
            self._applied[slot.target] = (slot, entry)
        return self

    def restore(self) -> None:
        """Puts every original back; a no-op when nothing is applied.

        Refuses (changing nothing) when a patched attribute was replaced by
        someone else since, so a later patch is never silently undone.
        """
        for target, (slot, entry) in self._applied.items():
            if vars(slot.owner).get(slot.name, _MISSING) is not entry:
                raise PatchError(target, "it was changed by someone else after this patch; "
                                         "restore that change first")
        for slot, _ in reversed(list(self._applied.values())):
            if slot.own_entry is _MISSING:
                delattr(slot.owner, slot.name)
            else:
                setattr(slot.owner, slot.name, slot.own_entry)
        self._applied.clear()

    def __enter__(self) -> "Patcher":
        # `with patch(...)` arrives applied, `with Patcher(...)` does not.
        return self if self.active else self.apply()

    def __exit__(self, *exc_info) -> None:
        self.restore()


def patch(patches: Mapping[str, Any]) -> Patcher:
    """Applies `patches` ({"module.Class.attribute": replacement}) now.

    Returns the Patcher: call restore() later, or use it in a `with`.
    """
    return Patcher(patches).apply()
