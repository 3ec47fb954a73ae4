"""Fixtures shared by the Python tests."""
import os

import pytest


@pytest.fixture
def torch():
    """Debian's python3-torch (tools/setup/setup.sh installs it). A venv
    without it (tools/run.sh's with PyPI's NumPy 2, which Debian's torch
    was not built for) sets POLYCHIP_TEST_WITHOUT_TORCH=1 to skip the tests
    that use it; anywhere else a missing torch fails them."""
    if os.environ.get("POLYCHIP_TEST_WITHOUT_TORCH") == "1":
        pytest.skip("POLYCHIP_TEST_WITHOUT_TORCH=1: this interpreter has no torch")
    import torch

    return torch
