"""Frequencies on the client, as the service reads them (docs/forecasting.md "Frequencies and timestamps").

The pandas-style codes the service accepts, the grid each lays from a series' first timestamp (in
UTC, stepped exactly as the service steps it, so the forecast continues the grid), the code a set
of series' timestamps follow with missing dates allowed, and where each timestamp falls on the grid
(so a missing date becomes a missing value instead of being dropped). Standard library only; the
same rules as the TypeScript client (sdk/src/frequency.ts).
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
WEEKDAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
DAY_MS = 86_400_000

_UNITS: Dict[str, Tuple[str, bool]] = {
    "s": ("second", False),
    "S": ("second", False),
    "min": ("minute", False),
    "T": ("minute", False),
    "h": ("hour", False),
    "H": ("hour", False),
    "D": ("day", False),
    "B": ("bday", False),
    "W": ("week", False),
    "MS": ("month", False),
    "M": ("month", True),
    "ME": ("month", True),
    "QS": ("quarter", False),
    "Q": ("quarter", True),
    "QE": ("quarter", True),
    "YS": ("year", False),
    "AS": ("year", False),
    "Y": ("year", True),
    "YE": ("year", True),
    "A": ("year", True),
}
_FIXED_MS = {"second": 1000, "minute": 60_000, "hour": 3_600_000, "day": DAY_MS, "week": 7 * DAY_MS}
_MONTHS_PER = {"month": 1, "quarter": 3, "year": 12}
_CODE = re.compile(r"^(\d+)?([A-Za-z]+)(?:-([A-Za-z]{3}))?$")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}(?:([T ])[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$")
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


class Frequency(NamedTuple):
    code: str
    multiple: int
    unit: str
    period_end: bool
    # weeks: the weekday steps land on (0 = Sunday); quarters and years: the month phase of period starts
    anchor: Optional[int] = None


def parse_frequency(code: str) -> Optional[Frequency]:
    """A code the service accepts (``15min``, ``W-WED``, ``QS-FEB``, ``Y-JUN`` …), or None."""
    m = _CODE.match(code.strip())
    if not m:
        return None
    multiple = int(m.group(1)) if m.group(1) else 1
    u = _UNITS.get(m.group(2))
    if u is None or not 1 <= multiple <= 100_000:
        return None
    unit, end = u
    freq = Frequency(code.strip(), multiple, unit, end)
    if m.group(3) is None:
        return freq
    suffix = m.group(3).upper()
    if unit == "week":
        return freq._replace(anchor=WEEKDAYS.index(suffix)) if suffix in WEEKDAYS else None
    if suffix not in MONTHS or unit not in ("quarter", "year"):
        return None
    k = 3 if unit == "quarter" else 12
    month = MONTHS.index(suffix)
    return freq._replace(anchor=(month + 1 if end else month) % k)


def _from_ms(t: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(milliseconds=t)


def _to_ms(d: _dt.datetime) -> int:
    return (d - _EPOCH) // _dt.timedelta(milliseconds=1)


def _weekday(t: int) -> int:
    """0 = Sunday, as JavaScript's getUTCDay."""
    return (_from_ms(t).weekday() + 1) % 7


def _month_step(start: int, per: int, end: bool, periods: int, phase: int) -> int:
    d = _from_ms(start)
    mo = d.year * 12 + d.month - 1

    def at(x: int) -> int:
        return (x - phase) % per

    if end:
        while at(mo) != per - 1:
            mo += 1
    elif d.day != 1 or at(mo) != 0:
        mo += 1
        while at(mo) != 0:
            mo += 1
    mo += periods * per
    if end:
        mo += 1  # the day before the next month's first
    first = _dt.datetime(mo // 12, mo % 12 + 1, 1, tzinfo=_dt.timezone.utc)
    day = first - _dt.timedelta(days=1) if end else first
    return _to_ms(day) + (start - _to_ms(d.replace(hour=0, minute=0, second=0, microsecond=0)))


def _add_business_days(t: int, n: int) -> int:
    dow = _weekday(t)
    rolled = t + (2 if dow == 6 else 1 if dow == 0 else 0) * DAY_MS
    weekday = _weekday(rolled)
    weeks, rest = divmod(n, 5)
    return rolled + (weeks * 7 + (rest + 2 if weekday + rest > 5 else rest)) * DAY_MS


def step_time(start: int, freq: Frequency, k: int) -> int:
    """Epoch ms of step ``k`` (0 = the first, which may roll forward from ``start`` onto the grid)."""
    n = k * freq.multiple
    fixed = _FIXED_MS.get(freq.unit)
    if fixed is not None:
        first = start
        if freq.unit == "week" and freq.anchor is not None:
            first = start + ((freq.anchor - _weekday(start)) % 7) * DAY_MS
        return first + n * fixed
    if freq.unit == "bday":
        return _add_business_days(start, n)
    return _month_step(start, _MONTHS_PER[freq.unit], freq.period_end, n, freq.anchor or 0)


def parse_time(text: str) -> Optional[int]:
    """Epoch ms of an ISO 8601 date or date-time as the service reads it (no offset: UTC); None otherwise."""
    s = text.strip()
    m = _ISO.match(s)
    if not m:
        return None
    try:
        d = _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.timezone.utc)
    return _to_ms(d)


def _month_index(t: int) -> int:
    d = _from_ms(t)
    return d.year * 12 + d.month - 1


def _diffs(series: Sequence[Sequence[int]], f=lambda t: t) -> List[int]:
    return [f(s[i]) - f(s[i - 1]) for s in series for i in range(1, len(s))]


def _calendar_code(series: Sequence[Sequence[int]]) -> Optional[str]:
    times = [t for s in series for t in s]
    if any(t % DAY_MS for t in times):
        return None
    dates = [_from_ms(t) for t in times]
    starts = all(d.day == 1 for d in dates)
    ends = not starts and all((d + _dt.timedelta(days=1)).day == 1 for d in dates)
    if not starts and not ends:
        return None
    steps = _diffs(series, _month_index)
    if not steps:
        return None
    k = min(steps)
    if k < 1 or any(d % k for d in steps):
        return None
    s = "S" if starts else ""

    def many(n: int) -> str:
        return "" if n == 1 else str(n)

    if k % 12 == 0 or k % 3 == 0:
        per = 12 if k % 12 == 0 else 3
        phases = {_month_index(t) % per for t in times}
        if len(phases) == 1:
            p = phases.pop()
            unit = "Y" if per == 12 else "Q"
            calendar = p == 0 if starts else p == per - 1
            anchor = MONTHS[p] if starts or per == 12 else MONTHS[p + 9]
            return f"{many(k // per)}{unit}{s}" + ("" if calendar else f"-{anchor}")
        # series on different phases: months from each series' own start
    return f"{many(k)}M{s}"


def _fixed_code(ms: int) -> Optional[str]:
    for size, code in ((7 * DAY_MS, "W"), (DAY_MS, "D"), (3_600_000, "h"), (60_000, "min"), (1000, "s")):
        if ms % size == 0:
            return code if ms == size else f"{ms // size}{code}"
    return None


def infer_frequency(series: Sequence[Sequence[int]]) -> Optional[str]:
    """The frequency the timestamps (epoch ms, each series sorted and distinct) follow, missing steps allowed.

    Month, quarter or year starts or ends (``MS``, ``Q``, ``YS-JUL``, ``Y-JUN``, ``QS-FEB``,
    ``Q-NOV``, ``3MS`` …), business days (``B``: weekdays only, across a weekend), else a fixed step
    (``D``, ``2h``, ``15min``, ``W``). The step is the smallest between consecutive timestamps of any
    series and every other step must be a whole number of it; None when they are not (irregular) or
    no series has 3 timestamps.
    """
    if not any(len(s) >= 3 for s in series):
        return None
    calendar = _calendar_code(series)
    if calendar:
        return calendar
    steps = _diffs(series)
    step = min(steps)
    if step <= 0 or any(d % step for d in steps):
        return None
    if step == DAY_MS:
        weekdays = all(_weekday(t) not in (0, 6) for s in series for t in s)
        skips_weekend = any((s[i] - s[i - 1]) // DAY_MS > _weekday(s[i]) for s in series for i in range(1, len(s)))
        if weekdays and skips_weekend:
            return "B"
    return _fixed_code(step)


class OffGrid(NamedTuple):
    at: int
    expected: int


def grid_indexes(times: Sequence[int], freq: Frequency, max_steps: int) -> Union[List[int], OffGrid, None]:
    """The step index of each timestamp on ``freq``'s grid from the first; the first one off the grid
    (and the time expected there); or None when the last would be more than ``max_steps`` steps away."""
    if not times:
        return []
    t0 = times[0]
    first = step_time(t0, freq, 0)
    if first != t0:
        return OffGrid(0, first)
    fixed = _FIXED_MS.get(freq.unit)
    out: List[int] = []
    if fixed is not None:
        step = fixed * freq.multiple
        for j, t in enumerate(times):
            k, r = divmod(t - t0, step)
            if r:
                return OffGrid(j, t0 + (k + 1) * step)
            if k > max_steps:
                return None
            out.append(k)
        return out
    k = 0
    for j, t in enumerate(times):
        at = step_time(t0, freq, k)
        while at < t and k <= max_steps:
            k += 1
            at = step_time(t0, freq, k)
        if k > max_steps:
            return None
        if at != t:
            return OffGrid(j, at)
        out.append(k)
    return out


def iso(t: int) -> str:
    """Epoch ms as the service writes times: 2024-01-01T00:00:00.000Z."""
    return _from_ms(t).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t % 1000:03d}Z"
