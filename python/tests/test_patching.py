"""polychip.patching: apply, restore exactly, and fail loudly naming the target."""

import pytest

import patch_targets
from polychip import patching
from polychip.patching import PatchError, Patcher


def snapshot(namespace):
    return dict(vars(namespace))


def assert_unchanged(namespace, before):
    after = dict(vars(namespace))
    assert after.keys() == before.keys()
    for name, value in before.items():
        assert after[name] is value, name


@pytest.fixture
def pristine():
    """Snapshots of every namespace the tests patch, checked after each test."""
    namespaces = [patch_targets, patch_targets.Base, patch_targets.Derived]
    before = [snapshot(n) for n in namespaces]
    yield
    for namespace, snap in zip(namespaces, before):
        assert_unchanged(namespace, snap)


def test_patch_then_restore_leaves_module_and_classes_exactly_as_before(pristine):
    module_before = snapshot(patch_targets)
    base_before = snapshot(patch_targets.Base)
    patcher = patching.patch({
        "patch_targets.scale": lambda x, factor=2: -x,
        "patch_targets.LIMIT": 99,
        "patch_targets.Base.greet": lambda self, name: f"hi {name}",
        "patch_targets.Base.twice": lambda x: 3 * x,
        "patch_targets.Base.make": lambda cls, value: ("patched", value),
    })
    assert patcher.active
    assert patch_targets.scale(5) == -5
    assert patch_targets.LIMIT == 99
    assert patch_targets.Base().greet("a") == "hi a"
    assert patch_targets.Base.twice(2) == 6  # still a staticmethod
    assert patch_targets.Derived.make(1) == ("patched", 1)  # still a classmethod
    patcher.restore()
    assert not patcher.active
    assert_unchanged(patch_targets, module_before)
    assert_unchanged(patch_targets.Base, base_before)
    assert patch_targets.scale(5) == 10


def test_inherited_attribute_is_patched_on_the_subclass_and_removed_on_restore(pristine):
    with patching.patch({"patch_targets.Derived.greet": lambda self, name: "derived"}):
        assert patch_targets.Derived().greet("x") == "derived"
        assert patch_targets.Base().greet("x") == "hello x"
        assert "greet" in vars(patch_targets.Derived)
    assert "greet" not in vars(patch_targets.Derived)


def test_context_manager_restores_when_the_body_raises(pristine):
    with pytest.raises(RuntimeError):
        with Patcher({"patch_targets.scale": lambda x, factor=2: 0}):
            assert patch_targets.scale(4) == 0
            raise RuntimeError("body failed")
    assert patch_targets.scale(4) == 8


def test_replacement_can_call_the_original(pristine):
    patcher = Patcher({"patch_targets.scale": lambda x, factor=2: patcher.original(
        "patch_targets.scale")(x, factor) + 1})
    with patcher:
        assert patch_targets.scale(4) == 9


def test_generic_wrapper_signature_is_accepted(pristine):
    with patching.patch({"patch_targets.Base.greet": lambda *args, **kwargs: "any"}):
        assert patch_targets.Base().greet("x") == "any"


def test_missing_attribute_names_the_target(pristine):
    with pytest.raises(PatchError, match=r"'patch_targets.Base.wave'.*has no attribute 'wave'") \
            as raised:
        patching.patch({"patch_targets.Base.wave": lambda self: None})
    assert raised.value.target == "patch_targets.Base.wave"


def test_missing_class_on_the_way_names_it(pristine):
    with pytest.raises(PatchError, match=r"patch_targets has no attribute 'Gone'"):
        patching.patch({"patch_targets.Gone.method": lambda self: None})


def test_missing_module_names_the_target(pristine):
    with pytest.raises(PatchError, match=r"'no_such_module_xyz.f'.*no module 'no_such_module_xyz'"):
        patching.patch({"no_such_module_xyz.f": lambda: None})


@pytest.mark.parametrize("target", [
    "patch_targets",
    "os\x00.sep",  # importlib found a copy of the frozen os module under "os\0"
    1,
])
def test_malformed_target_is_refused(pristine, target):
    with pytest.raises(PatchError, match=r"a target is 'module.attribute'"):
        patching.patch({target: 1})


@pytest.mark.parametrize("replacement", [
    lambda x: x,                 # a parameter missing
    lambda x, factor: x,         # a default missing
    lambda x, scale=2: x,        # a parameter renamed
    lambda x, *, factor=2: x,    # a parameter's kind changed
])
def test_signature_mismatch_names_target_and_both_signatures(pristine, replacement):
    with pytest.raises(PatchError, match=r"'patch_targets.scale'.*\(x, factor=2\)"):
        patching.patch({"patch_targets.scale": replacement})


def test_classmethod_signature_is_compared_without_binding(pristine):
    with pytest.raises(PatchError, match="'patch_targets.Base.make'"):
        patching.patch({"patch_targets.Base.make": lambda value: value})


def test_non_callable_replacement_for_a_callable_is_refused(pristine):
    with pytest.raises(PatchError, match="is not"):
        patching.patch({"patch_targets.scale": 42})


def test_mapping_is_applied_all_or_nothing(pristine):
    with pytest.raises(PatchError, match="'patch_targets.Base.wave'"):
        patching.patch({"patch_targets.scale": lambda x, factor=2: 0,
                        "patch_targets.Base.wave": lambda self: None})
    assert patch_targets.scale(1) == 2


def test_a_target_that_cannot_be_set_undoes_the_ones_set_before_it(pristine):
    with pytest.raises(PatchError, match=r"'builtins.int.real': it cannot be set: .*immutable"):
        patching.patch({"patch_targets.LIMIT": 10, "builtins.int.real": 5})
    assert patch_targets.LIMIT == 3


def test_restore_refuses_to_undo_a_later_foreign_change(pristine):
    patcher = patching.patch({"patch_targets.LIMIT": 10})
    patch_targets.LIMIT = 11
    with pytest.raises(PatchError, match="changed by someone else"):
        patcher.restore()
    patch_targets.LIMIT = 10
    patcher.restore()
    assert patch_targets.LIMIT == 3


def test_double_apply_is_refused_and_restore_is_idempotent(pristine):
    patcher = patching.patch({"patch_targets.LIMIT": 10})
    with pytest.raises(PatchError, match="already applied"):
        patcher.apply()
    patcher.restore()
    patcher.restore()
