"""One clock for the whole package, so tests and notebook outputs can freeze time.

Set ``WORKSHOP_NOW`` to an ISO 8601 timestamp with an offset (for example
``2026-11-30T10:00:00-08:00``) and every tool that asks for the time gets that
instant. Without it, the real current time is used.
"""
from __future__ import annotations

import os
from datetime import datetime, timezone

import pytz

from helpers.core.errors import WorkshopError

ENV_VAR = "WORKSHOP_NOW"
DEFAULT_TIMEZONE = "America/Los_Angeles"
# in date.weekday() order
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
# a month's name as people write it ("Jan", "January", "Sept."), one group; compile with re.I
MONTH_PATTERN = (r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
                 r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?(?![a-z])")


def month_number(word: str) -> int:
    """1-12 for a month's name or its abbreviation ("Sept." -> 9), as ``MONTH_PATTERN`` finds them."""
    return next(n for n, name in enumerate(MONTHS, 1) if name.startswith(word.lower().rstrip(".")[:3]))


class ClockError(WorkshopError, ValueError):
    """The frozen clock or a time zone name could not be understood."""


def get_timezone(name: str):
    """Return the pytz zone called ``name``, or raise ClockError naming it."""
    try:
        return pytz.timezone(name)
    except (pytz.UnknownTimeZoneError, AttributeError, TypeError):
        raise ClockError(
            f"unknown time zone {name!r}; use an IANA name such as 'America/Los_Angeles' or 'Europe/Berlin'"
        ) from None


def now(tz: str | None = None) -> datetime:
    """The current instant (frozen when WORKSHOP_NOW is set), in zone ``tz`` if given."""
    # Read on every call, not through Settings: the tools ask for the time with no settings in reach,
    # and a test (or a notebook cell) that sets WORKSHOP_NOW must move the clock at once.
    frozen = os.environ.get(ENV_VAR, "").strip()
    if frozen:
        try:
            moment = datetime.fromisoformat(frozen)
        except ValueError:
            raise ClockError(f"{ENV_VAR}={frozen!r} is not an ISO 8601 timestamp") from None
        if moment.tzinfo is None:
            raise ClockError(f"{ENV_VAR}={frozen!r} needs a UTC offset, e.g. 2026-11-30T10:00:00-08:00")
    else:
        moment = datetime.now(timezone.utc)
    if tz is None:
        tz = DEFAULT_TIMEZONE
    return moment.astimezone(get_timezone(tz))
