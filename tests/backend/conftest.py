"""Fixtures shared by the backend tests."""

import pytest
import torch


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models gain nothing from threads, and on a shared busy CPU threads stall."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
