"""Test-wide settings: offline backend, a frozen clock, no prompts, no real key.

Environment variables set here also reach the notebook kernels that nbval starts,
so committed notebook outputs are reproduced exactly.
"""
import os

FROZEN_NOW = "2026-11-30T10:00:00-08:00"  # a Monday morning in Los Angeles

os.environ["WORKSHOP_BACKEND"] = "offline"
os.environ["WORKSHOP_NOW"] = FROZEN_NOW
os.environ["WORKSHOP_NO_PROMPT"] = "1"
os.environ["TQDM_DISABLE"] = "1"  # progress bars show timings, which differ on every run
os.environ.pop("NVIDIA_API_KEY", None)
os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_default_client():
    """Each test starts with no shared client, so environment changes take effect."""
    from helpers import client

    client.reset_default()
    yield
    client.reset_default()
