"""DLPack export: consumers view host-visible tensor memory without a copy."""

import numpy as np
import pytest

import polychip


def test_numpy_from_dlpack_shares_memory_with_the_tensor():
    t = polychip.tensor(np.zeros(4, dtype=np.float32))
    assert t.__dlpack_device__() == (1, 0)  # kDLCPU
    view = np.from_dlpack(t)  # NumPy makes DLPack imports read-only
    assert view.__array_interface__["data"][0] == np.asarray(t).__array_interface__["data"][0]
    polychip.call("fill", t, value=3.0)  # NumPy sees what the op wrote
    np.testing.assert_array_equal(view, [3, 3, 3, 3])


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int8, np.int32, np.int64,
                                   np.uint8])
def test_dtypes_and_shape_survive_the_exchange(dtype):
    source = (np.arange(6) % 4).astype(dtype).reshape(2, 3)
    view = np.from_dlpack(polychip.tensor(source))
    assert view.dtype == source.dtype
    np.testing.assert_array_equal(view, source)


def test_view_keeps_the_memory_after_the_tensor_is_gone():
    t = polychip.tensor(np.full(3, 7, dtype=np.int64))
    view = np.from_dlpack(t)
    del t
    np.testing.assert_array_equal(view, [7, 7, 7])


def test_unconsumed_capsule_is_released():
    t = polychip.tensor(np.ones(2, dtype=np.float32))
    capsule = t.__dlpack__()
    assert type(capsule).__name__ == "PyCapsule"
    del capsule  # frees its reference to the buffer; t still reads fine
    np.testing.assert_array_equal(t.numpy(), [1, 1])


def test_dtype_without_dlpack_code_is_refused():
    with pytest.raises(polychip.Error, match="f8e4m3 has no DLPack dtype") as raised:
        polychip.tensor([1.0], dtype="f8e4m3").__dlpack__()
    assert raised.value.code == polychip.StatusCode.UNSUPPORTED


def test_memory_that_is_not_host_visible_is_refused():
    device = next((d for d in polychip.devices() if not d.host_visible_memory), None)
    if device is None:
        pytest.skip("every device here has host-visible memory")
    t = polychip.tensor(np.arange(2, dtype=np.float32), device=device)
    for export in (t.__dlpack__, t.__dlpack_device__):
        with pytest.raises(polychip.Error, match="not host visible"):
            export()


def test_torch_shares_memory_with_numpy_and_the_tensor(torch):
    t = polychip.tensor(np.zeros(3, dtype=np.float32))
    as_torch = torch.from_dlpack(t)
    as_numpy = np.asarray(t)
    as_torch += 5
    np.testing.assert_array_equal(as_numpy, [5, 5, 5])
    np.testing.assert_array_equal(t.numpy(), [5, 5, 5])


def check_imported_on_sim(producer, values):
    t = polychip.from_dlpack(producer, device="sim.faithful")
    assert t.device.device_type == "sim.faithful"
    assert t.dtype == "f32" and list(t.shape) == [3, 4]
    np.testing.assert_array_equal(t.numpy(), values)


def test_from_dlpack_imports_torch_by_copy_on_any_device(torch):
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    check_imported_on_sim(torch.from_numpy(values.copy()), values)


def test_from_dlpack_imports_numpy_by_copy_on_any_device():
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    check_imported_on_sim(values, values)
    # A copy: changing the source later does not change the tensor.
    source = values.copy()
    t = polychip.from_dlpack(source)
    source[0, 0] = 99
    assert t.numpy()[0, 0] == 0


def test_from_dlpack_refuses_what_is_not_a_producer():
    with pytest.raises(TypeError, match="needs an object with __dlpack__"):
        polychip.from_dlpack([1, 2, 3])


def test_from_dlpack_of_a_bf16_torch_tensor_names_its_dtype_not_its_memory(torch):
    # torch exports bf16 (kDLBfloat); NumPy has no type to import it as.
    with pytest.raises(TypeError) as raised:
        polychip.from_dlpack(torch.tensor([1.5], dtype=torch.bfloat16))
    message = str(raised.value)
    assert "only CPU memory" not in message
    assert "memory is on the CPU, but NumPy cannot import it" in message
    assert "its dtype is torch.bfloat16" in message and "no bfloat16 or float8 type" in message
    # The way the message names works.
    t = torch.tensor([1.5, -2.25], dtype=torch.bfloat16)
    converted = polychip.tensor(t.float(), dtype="bf16")
    assert converted.dtype == "bf16" and converted.numpy().tolist() == [1.5, -2.25]


class ProducerOnAGpu:
    """A DLPack producer whose memory is on a CUDA device (kDLCUDA), as a
    GPU tensor's: NumPy gets a capsule it cannot read. This machine has no
    GPU to make a real one."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        raise BufferError("cannot export device memory to the CPU")


def test_from_dlpack_of_memory_elsewhere_than_the_cpu_says_so():
    with pytest.raises(TypeError, match="memory is on DLPack device type 2, not the CPU.*only "
                                        "CPU memory can be imported"):
        polychip.from_dlpack(ProducerOnAGpu())
