import pytest

from helpers.core import clock


def test_frozen_clock_honours_environment(monkeypatch):
    monkeypatch.setenv("WORKSHOP_NOW", "2026-11-30T10:00:00-08:00")
    moment = clock.now("America/Los_Angeles")
    assert (moment.year, moment.month, moment.day, moment.hour) == (2026, 11, 30, 10)
    assert moment.strftime("%A") == "Monday"


def test_frozen_clock_converts_zone(monkeypatch):
    monkeypatch.setenv("WORKSHOP_NOW", "2026-11-30T10:00:00-08:00")
    assert clock.now("Asia/Tokyo").hour == 3  # next day, 03:00


def test_unfrozen_clock_moves(monkeypatch):
    monkeypatch.delenv("WORKSHOP_NOW", raising=False)
    assert clock.now().year >= 2026


def test_bad_frozen_value_is_explained(monkeypatch):
    monkeypatch.setenv("WORKSHOP_NOW", "next tuesday")
    with pytest.raises(clock.ClockError, match="WORKSHOP_NOW"):
        clock.now()


def test_naive_frozen_value_is_rejected(monkeypatch):
    monkeypatch.setenv("WORKSHOP_NOW", "2026-11-30T10:00:00")
    with pytest.raises(clock.ClockError, match="offset"):
        clock.now()


def test_unknown_zone_is_named():
    with pytest.raises(clock.ClockError, match="Mars/Olympus"):
        clock.get_timezone("Mars/Olympus")
