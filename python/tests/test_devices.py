"""Adapters and devices as the global runtime sees them."""

import pytest

import polychip


def test_cpu_adapter_and_device_are_listed():
    names = [a.name for a in polychip.adapters()]
    assert "cpu" in names
    cpu = polychip.device("cpu")
    assert cpu in polychip.devices()
    assert cpu.label == "cpu:0"
    assert cpu.adapter == "cpu"
    assert cpu.device_type == "cpu.host"
    assert "f32" in cpu.dtypes
    assert cpu.host_visible_memory


def test_device_found_by_its_type_is_the_same_device():
    cpu = polychip.device("cpu")
    assert polychip.device(cpu.device_type) == cpu
    assert hash(polychip.device("cpu:0")) == hash(cpu)


def test_a_device_is_unequal_to_what_is_not_a_device():
    # As any Python object: ==, != and `in` on a mixed list do not raise.
    cpu = polychip.device("cpu")
    assert (cpu == None) is False  # noqa: E711 (the comparison under test)
    assert cpu != "cpu:0"
    assert [None, "cpu", cpu].index(cpu) == 2


def test_adapters_without_devices_say_why():
    for adapter in polychip.adapters():
        if adapter.device_count == 0:
            assert adapter.unavailable_reason


def test_unknown_device_is_not_found_naming_it():
    try:
        polychip.device("no_such_chip")
    except polychip.Error as error:
        assert error.code == polychip.StatusCode.NOT_FOUND
        assert "no_such_chip" in str(error)
    else:
        raise AssertionError("polychip.device('no_such_chip') did not raise")


def test_an_error_quoting_a_nul_byte_is_whole():
    # str(error) ended at the NUL ("NOT_FOUND: no device 'cpu"), as if cpu were missing.
    with pytest.raises(polychip.Error) as raised:
        polychip.device("cpu\x00sim")
    assert str(raised.value).startswith("NOT_FOUND: no device 'cpu\x00sim'; devices: cpu:0")
