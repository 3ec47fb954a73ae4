"""Streams and events: queued calls, their ordering, timing and tensor lifetime."""

import numpy as np
import pytest

import polychip


@pytest.fixture(params=["cpu", "sim:0"])  # sim's streams are asynchronous
def device(request):
    return polychip.device(request.param)


def test_queued_call_completes_by_synchronize_even_with_its_input_dropped(device):
    stream = polychip.Stream(device)
    out = polychip.empty([1 << 16], device=device)
    source = polychip.tensor(np.full(1 << 16, -3.0, dtype=np.float32), device=device)
    polychip.call("neg", source, out, stream=stream)
    del source  # the stream keeps it alive until synchronize() (sim also defers the free)
    stream.synchronize()
    np.testing.assert_array_equal(out.numpy(), np.full(1 << 16, 3.0, dtype=np.float32))


def test_event_orders_two_streams_and_times_them(device):
    first, second = polychip.Stream(device), polychip.Stream(device)
    x, y = polychip.empty([1024], device=device), polychip.empty([1024], device=device)
    start, filled = polychip.Event(device), polychip.Event(device)
    start.record(first)
    polychip.call("fill", x, value=2.0, stream=first)
    filled.record(first)
    filled.wait(second)
    polychip.call("neg", x, y, stream=second)
    second.synchronize()
    np.testing.assert_array_equal(y.numpy(), np.full(1024, -2.0, dtype=np.float32))
    filled.synchronize()
    assert filled.query()
    assert polychip.Event.elapsed_ms(start, filled) >= 0.0


def test_stream_of_another_device_is_refused_naming_both():
    stream = polychip.Stream(polychip.device("sim:0"))
    x, y = polychip.empty([2]), polychip.empty([2])
    with pytest.raises(polychip.Error, match="sim:0") as raised:
        polychip.call("neg", x, y, stream=stream)
    assert raised.value.code == polychip.StatusCode.INVALID_ARGUMENT


def test_stream_argument_of_the_wrong_type_is_named():
    x, y = polychip.empty([2]), polychip.empty([2])
    with pytest.raises(polychip.Error, match="takes a polychip.Stream, not 's'"):
        polychip.call("neg", x, y, stream="s")
