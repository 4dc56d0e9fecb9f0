"""Test-wide settings: see workshop_env.py (offline backend, frozen clock, no prompts, no real key)."""
import pytest

import workshop_env

workshop_env.apply()
FROZEN_NOW = workshop_env.FROZEN_NOW


@pytest.fixture(autouse=True)
def _fresh_default_client():
    """Each test starts with no shared client, so environment changes take effect."""
    from helpers import client

    client.reset_default()
    yield
    client.reset_default()
