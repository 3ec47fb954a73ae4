"""Tensors and NumPy: copies in, zero-copy views out where memory is host visible."""

import numpy as np
import pytest

import polychip


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int8, np.int32,
                                   np.int64, np.uint8, np.bool_])
def test_round_trip_keeps_values_dtype_and_shape(dtype):
    source = (np.arange(12) % 5).astype(dtype).reshape(3, 4)
    t = polychip.tensor(source)
    assert t.shape == (3, 4)
    assert t.nbytes == source.nbytes
    back = t.numpy()
    assert back.dtype == source.dtype
    np.testing.assert_array_equal(back, source)


def test_tensor_copies_its_input():
    source = np.ones(4, dtype=np.float32)
    t = polychip.tensor(source)
    source[:] = 7
    np.testing.assert_array_equal(t.numpy(), np.ones(4, dtype=np.float32))


def test_non_contiguous_input_is_taken_in_logical_order():
    source = np.arange(12, dtype=np.float32).reshape(3, 4).T
    np.testing.assert_array_equal(polychip.tensor(source).numpy(), source)


def test_host_visible_view_shares_memory_both_ways():
    t = polychip.tensor(np.zeros((2, 3), dtype=np.float32))
    view = np.asarray(t)
    assert view.base is t  # a view of the tensor's memory, which it keeps alive
    assert np.asarray(t).__array_interface__["data"][0] == view.__array_interface__["data"][0]

    # NumPy writes, the op reads them from the same memory.
    view[:] = [[-1, 2, -3], [4, -5, 6]]
    y = polychip.empty([2, 3])
    polychip.call("relu", t, y)
    np.testing.assert_array_equal(y.numpy(), [[0, 2, 0], [4, 0, 6]])

    # The op writes, NumPy sees it without a copy.
    polychip.call("neg", y, t)
    np.testing.assert_array_equal(view, [[0, -2, 0], [-4, 0, -6]])


def test_view_outlives_the_python_name_of_its_tensor():
    t = polychip.tensor(np.full(3, 5, dtype=np.int32))
    view = np.asarray(t)
    del t
    np.testing.assert_array_equal(view, [5, 5, 5])


def test_bf16_converts_from_and_to_float_with_rounding():
    t = polychip.tensor([1.0, 1.00390625, 3.140625], dtype="bf16")
    assert t.dtype == "bf16"
    # 1 + 2^-8 is a tie between bf16 neighbours: rounds to even (1.0).
    np.testing.assert_array_equal(t.numpy(), np.array([1.0, 1.0, 3.140625], dtype=np.float32))


def test_dtype_without_numpy_equivalent_cannot_be_viewed():
    t = polychip.tensor([1.0], dtype="bf16")
    with pytest.raises(polychip.Error, match="bf16 has no NumPy dtype") as raised:
        np.asarray(t)
    assert raised.value.code == polychip.StatusCode.UNSUPPORTED


def test_device_memory_that_is_not_host_visible_is_copied_not_viewed():
    device = next((d for d in polychip.devices() if not d.host_visible_memory), None)
    if device is None:
        pytest.skip("every device here has host-visible memory")
    t = polychip.tensor(np.arange(4, dtype=np.float32), device=device)
    np.testing.assert_array_equal(t.numpy(), np.arange(4, dtype=np.float32))
    with pytest.raises(polychip.Error, match="not host visible") as raised:
        np.asarray(t)
    assert raised.value.code == polychip.StatusCode.UNSUPPORTED


def test_unsupported_numpy_dtype_is_refused_naming_it():
    with pytest.raises(polychip.Error, match="<U1") as raised:
        polychip.tensor(np.array(["x"]))
    assert raised.value.code == polychip.StatusCode.INVALID_ARGUMENT


# bf16 and f8 go through float64 as the NumPy dtypes go to theirs: what
# NumPy cannot convert is its own error, naming the value (NumPy 2 as
# np.str_('x')).
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f8e4m3"])
def test_values_that_are_not_numbers_are_named(dtype):
    with pytest.raises(ValueError, match=r"could not convert string to float: (np\.str_\()?'x'"):
        polychip.tensor(["x"], dtype=dtype)


def test_unknown_dtype_name_is_refused():
    with pytest.raises(polychip.Error, match="f13") as raised:
        polychip.empty([2], dtype="f13")
    assert raised.value.code == polychip.StatusCode.INVALID_ARGUMENT


def test_shape_whose_size_overflows_is_refused_not_wrapped():
    with pytest.raises(polychip.Error, match=r"needs more than 2\^64 bytes") as raised:
        polychip.empty([2**40, 2**40])
    assert raised.value.code == polychip.StatusCode.INVALID_ARGUMENT


def test_device_of_the_wrong_type_is_named():
    with pytest.raises(polychip.Error, match="not 3") as raised:
        polychip.empty([2], device=3)
    assert raised.value.code == polychip.StatusCode.INVALID_ARGUMENT


def test_empty_tensor_views_as_an_empty_array():
    view = np.asarray(polychip.tensor(np.zeros((0, 3), dtype=np.float32)))
    assert view.shape == (0, 3) and view.dtype == np.float32
