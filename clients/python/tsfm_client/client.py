"""Client for the TSFM forecasting service (standard library only; pandas used when importable)."""

from __future__ import annotations

import datetime as _dt
import email.utils
import json
import math
import os
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .errors import InvalidRequestError, TsfmError, error_for
from .frequency import OffGrid, grid_indexes, infer_frequency, iso, parse_frequency, parse_time

try:  # pandas is optional: DataFrames in and out when present, lists of dicts otherwise
    import pandas as _pd
except Exception:  # pragma: no cover - depends on the interpreter
    _pd = None

__all__ = ["Client", "MAX_PER_CALL", "DEFAULT_BASE_URL", "HAS_PANDAS"]

MAX_PER_CALL = 64
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
HAS_PANDAS = _pd is not None
_RETRY_STATUSES = (429, 503)
_MISSING = {"", "na", "nan", "null", "none"}

ProgressFn = Callable[[int, int], None]


def _parse_retry_after(value: Optional[str]) -> Optional[float]:
    if value is None or value.strip() == "":
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return max(0.0, (when - _dt.datetime.now(_dt.timezone.utc)).total_seconds())


class Client:
    """``Client(api_key, base_url).forecast(df, h=12, model="auto-ets", freq="MS")``.

    ``api_key`` defaults to ``TSFM_API_KEY`` and ``base_url`` to ``TSFM_BASE_URL`` (else
    http://127.0.0.1:8000). ``timeout`` is per attempt, in seconds; a timeout is not retried (the
    forecast may have run). 429 and 503 are retried up to ``max_retries`` times, waiting
    ``retry-after`` when the server sends it (failing at once when it asks for more than
    ``max_retry_delay`` seconds), else exponential backoff with full jitter.
    """

    def __init__(
        self,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_retry_delay: float = 60.0,
    ) -> None:
        self.api_key = api_key if api_key is not None else os.environ.get("TSFM_API_KEY")
        self.base_url = (base_url or os.environ.get("TSFM_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_delay = max_retry_delay

    # -- HTTP ---------------------------------------------------------------------------------
    def request(self, method: str, path: str, body: Any = None, query: Optional[Dict[str, Any]] = None) -> Any:
        """One call to any route; returns the parsed JSON answer or raises a TsfmError (an answer that is
        not JSON, such as a web page, is a ServiceError with code ``invalid_response``)."""
        url = self.base_url + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        try:
            data = None if body is None else json.dumps(body, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as e:
            raise InvalidRequestError(
                message=f"the body of {method} {path} cannot be sent as JSON: {e} (NaN and infinity are not JSON numbers: send None for a missing value)",
                code="invalid_input",
            ) from None
        headers = {"accept": "application/json", "user-agent": "tsfm-client-python/0.1.0"}
        if data is not None:
            headers["content-type"] = "application/json"
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        attempt = 0
        while True:
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as res:
                    raw = res.read()
                    if not raw:
                        return None
                    try:
                        return json.loads(raw)
                    except ValueError:
                        kind = res.headers.get("content-type") or "no content type"
                        snippet = raw[:60].decode("utf-8", "replace").strip()
                        raise error_for(
                            res.status,
                            message=f"{method} {path} answered {kind}, not JSON (is base_url the service's address?): {snippet!r}",
                            code="invalid_response",
                            request_id=res.headers.get("x-request-id"),
                        ) from None
            except urllib.error.HTTPError as e:
                raw = e.read()
                retry_after = _parse_retry_after(e.headers.get("retry-after"))
                if e.code in _RETRY_STATUSES and attempt < self.max_retries:
                    if retry_after is None:
                        delay = random.uniform(0, min(self.max_retry_delay, 0.3 * 2**attempt))
                    else:
                        delay = retry_after
                    if delay <= self.max_retry_delay:
                        attempt += 1
                        time.sleep(delay)
                        continue
                raise self._error(e.code, raw, e.headers.get("x-request-id"), retry_after) from None
            except urllib.error.URLError as e:
                reason = e.reason
                if isinstance(reason, ConnectionRefusedError) and attempt < self.max_retries:
                    attempt += 1
                    time.sleep(random.uniform(0, 0.3 * 2**attempt))
                    continue
                if isinstance(reason, (socket.timeout, TimeoutError)):
                    raise error_for(0, message=f"no answer from {method} {url} within {self.timeout} s", code="timeout") from None
                raise error_for(0, message=f"cannot reach {self.base_url}: {reason}", code="network_error") from None
            except (socket.timeout, TimeoutError):
                raise error_for(0, message=f"no answer from {method} {url} within {self.timeout} s", code="timeout") from None

    @staticmethod
    def _error(status: int, raw: bytes, request_id: Optional[str], retry_after: Optional[float]) -> TsfmError:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        kw: Dict[str, Any] = {"request_id": request_id, "retry_after": retry_after}
        if status == 422 and isinstance(body, dict) and isinstance(body.get("detail"), list):
            detail = body["detail"]
            first = detail[0] if detail and isinstance(detail[0], dict) else {}
            where = ".".join(str(x) for x in first.get("loc", [])) or "request"
            more = f" (and {len(detail) - 1} more)" if len(detail) > 1 else ""
            return error_for(status, message=f"{where}: {first.get('msg', 'invalid')}{more}", code="validation_error", detail=detail, **kw)
        if isinstance(body, dict) and isinstance(body.get("error"), str) and isinstance(body.get("code"), str):
            return error_for(status, message=body["error"], code=body["code"], **kw)
        return error_for(status, message=f"HTTP {status}", code="invalid_response", **kw)

    # -- plain endpoints ----------------------------------------------------------------------
    def models(self) -> List[Dict[str, Any]]:
        """The model catalog."""
        return self.request("GET", "/api/models")["models"]

    def usage(self, start: Optional[str] = None, end: Optional[str] = None) -> Dict[str, Any]:
        """Usage totals, per day, per model and per source (ISO 8601 window, end exclusive)."""
        return self.request("GET", "/api/account/usage/summary", query={"start": start, "end": end})

    def validate(self) -> Dict[str, Any]:
        """Which account the credential belongs to (raises AuthenticationError when invalid)."""
        return self.request("POST", "/v1/validate", body={})

    def forecast_raw(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """POST /v1/forecast with a body in the API's own shape; returns the API's answer."""
        return self.request("POST", "/v1/forecast", body=request)

    def forecast_batch(
        self, requests: Sequence[Dict[str, Any]], max_workers: int = 4, on_progress: Optional[ProgressFn] = None
    ) -> List[Dict[str, Any]]:
        """Any number of /v1/forecast bodies through /v1/forecast/batch (64 per call, concurrently);
        items in the order of the requests, each ``{"ok", "result", "error"}``."""
        chunks = [list(requests[i : i + MAX_PER_CALL]) for i in range(0, len(requests), MAX_PER_CALL)]
        parts = self._run_chunks(chunks, lambda c: self.request("POST", "/v1/forecast/batch", body={"requests": c})["data"], max_workers, on_progress, len(requests))
        return [item for part in parts for item in part]

    def _run_chunks(self, chunks: List[list], fn: Callable[[list], Any], max_workers: int, on_progress: Optional[ProgressFn], total: int) -> List[Any]:
        done = 0
        if on_progress:
            on_progress(0, total)

        def one(chunk: list) -> Any:
            return fn(chunk)

        results: List[Any] = []
        with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
            # map keeps the order of the chunks; progress is reported as each finishes in order
            for chunk, out in zip(chunks, pool.map(one, chunks)):
                results.append(out)
                done += len(chunk)
                if on_progress:
                    on_progress(done, total)
        return results

    # -- forecasting with data frames -----------------------------------------------------------
    def forecast(
        self,
        df: Any,
        h: int = 12,
        model: str = "auto-ets",
        freq: Optional[str] = None,
        quantiles: Optional[Sequence[float]] = None,
        level: Optional[Sequence[float]] = None,
        id_col: str = "unique_id",
        time_col: str = "ds",
        target_col: str = "y",
        ensemble: bool = False,
        models: Optional[Sequence[str]] = None,
        batch_size: int = MAX_PER_CALL,
        max_workers: int = 4,
        on_progress: Optional[ProgressFn] = None,
    ) -> Any:
        """Forecasts ``h`` steps of every series of ``df``.

        ``df``: a pandas DataFrame or a list of dicts in long format (``unique_id``, ``ds``, ``y``;
        without ``unique_id`` it is one series), a dict of columns, or a plain list of numbers.
        ``freq``: pandas-style code (``D``, ``h``, ``W``, ``MS``, ``QS``, ``YS-JUL``, ``Q-NOV``…), inferred
        from the ``ds`` of all series when omitted (anchors kept: fiscal years are ``YS-JUL``, not
        ``YS``). A date missing between two rows of a series is sent as None (a ``UserWarning`` says
        so), so the forecast starts after the last date; a ``ds`` off the grid of ``freq`` raises
        InvalidRequestError. Whole-number ``ds`` are step numbers (gaps filled the same way). ``quantiles`` (e.g. ``[0.1, 0.5, 0.9]``) add columns ``<model>-q-10``…; ``level``
        (e.g. ``[80, 95]``) adds ``<model>-lo-80`` / ``<model>-hi-80``. ``ensemble=True`` blends the
        best of ``models`` (default: the service's candidates) and names the column ``ensemble``.
        Series are sent ``batch_size`` (at most 64) per call, ``max_workers`` calls at once;
        ``on_progress(done, total)`` is called as calls complete.

        Returns a DataFrame (``unique_id``, ``ds``, ``<model>``, interval columns) when pandas is
        installed, else a list of dicts with the same keys.
        """
        if not isinstance(h, int) or h < 1:
            raise InvalidRequestError(message=f"h must be a positive integer, got {h!r}", code="invalid_input")
        if not 1 <= batch_size <= MAX_PER_CALL:
            raise InvalidRequestError(message=f"batch_size must be from 1 to {MAX_PER_CALL}, got {batch_size}", code="invalid_input")
        series, ds_kind = _to_series(df, id_col, time_col, target_col)
        if freq is not None and not isinstance(freq, str):
            freq = getattr(freq, "freqstr", None) or str(freq)  # a pandas offset such as pd.offsets.MonthBegin()
        series, freq, int_step = _align(series, ds_kind, freq)
        levels, names = _levels(quantiles, level)
        column = "ensemble" if ensemble else model
        params: Dict[str, Any] = {"prediction_length": h}
        if levels:
            params["quantile_levels"] = levels
        if freq and ds_kind != "int":
            params["frequency"] = freq

        inputs = []
        for uid, ds, ys in series:
            item: Dict[str, Any] = {"target": ys, "item_id": str(uid)}
            if ds and ds_kind != "int":
                item["start"] = ds[0]
            inputs.append(item)
        chunks = [inputs[i : i + batch_size] for i in range(0, len(inputs), batch_size)]

        def call(chunk: list) -> Dict[str, Any]:
            if ensemble:
                body: Dict[str, Any] = {"inputs": chunk, "parameters": params}
                if models:
                    body["models"] = list(models)
                return self.request("POST", "/v1/forecast/ensemble", body=body)["ensemble_result"]
            return self.request("POST", "/v1/forecast", body={"model": model, "inputs": chunk, "parameters": params})

        parts = self._run_chunks(chunks, call, max_workers, on_progress, len(inputs))
        outputs = [o for p in parts for o in p["outputs"]]
        rows: List[Dict[str, Any]] = []
        dated = True
        for (uid, ds, ys), out in zip(series, outputs):
            by_level = {q["level"]: q["values"] for q in (out.get("quantile_predictions") or [])}
            stamps = out.get("timestamps")
            dated = dated and bool(stamps)
            for j, step in enumerate(out["mean"]):
                if ds_kind == "int" and ds:
                    # step numbers continue after the last one (ys holds one value per step, gaps filled)
                    t: Any = int(ds[0]) + (len(ys) + j) * int_step
                elif stamps:
                    t = stamps[j]
                else:
                    t = j + 1
                row: Dict[str, Any] = {"unique_id": uid, "ds": t, column: step[0] if step else None}
                for lv, name in zip(levels, names):
                    vals = by_level.get(lv)
                    row[f"{column}-{name}"] = vals[j][0] if vals and vals[j] else None
                rows.append(row)
        if _pd is None:
            return rows
        out_df = _pd.DataFrame(rows, columns=["unique_id", "ds", column] + [f"{column}-{n}" for n in names])
        if ds_kind == "datetime" and dated and len(out_df):
            stamps_series = _pd.to_datetime(out_df["ds"], utc=True)
            out_df["ds"] = stamps_series.dt.tz_localize(None) if series_naive(df, time_col) else stamps_series
        return out_df


def series_naive(df: Any, time_col: str) -> bool:
    """True when the input's timestamps carry no time zone (the output then has none either)."""
    if _pd is not None and isinstance(df, _pd.DataFrame) and time_col in df.columns:
        col = df[time_col]
        return getattr(getattr(col, "dt", None), "tz", None) is None
    return True


def _levels(quantiles: Optional[Sequence[float]], level: Optional[Sequence[float]]) -> Tuple[List[float], List[str]]:
    if quantiles is not None and level is not None:
        raise InvalidRequestError(message="give quantiles or level, not both", code="invalid_input")
    if quantiles is not None:
        qs = [float(q) for q in quantiles]
        if any(not 0 < q < 1 for q in qs):
            raise InvalidRequestError(message=f"quantiles must be between 0 and 1, got {list(quantiles)}", code="invalid_input")
        return qs, [f"q-{_num(q * 100)}" for q in qs]
    if level is not None:
        qs, names = [], []
        for lv in sorted(float(x) for x in level):
            if not 0 < lv < 100:
                raise InvalidRequestError(message=f"level must be between 0 and 100, got {lv}", code="invalid_input")
            qs += [round((1 - lv / 100) / 2, 10), round((1 + lv / 100) / 2, 10)]
            names += [f"lo-{_num(lv)}", f"hi-{_num(lv)}"]
        return qs, names
    return [], []


def _num(x: float) -> str:
    r = round(x, 6)
    return str(int(r)) if r == int(r) else str(r)


def _value(v: Any, where: str) -> Optional[float]:
    if v is None:
        return None
    if isinstance(v, str):
        if v.strip().lower() in _MISSING:
            return None
        try:
            v = float(v)
        except ValueError:
            raise InvalidRequestError(message=f"{where}: y is not a number: {v!r}", code="invalid_input") from None
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise InvalidRequestError(message=f"{where}: y is not a number: {v!r}", code="invalid_input") from None
    if math.isnan(f):
        return None
    if math.isinf(f):
        raise InvalidRequestError(message=f"{where}: y must be a finite number, got {f}", code="invalid_input")
    return f


def _records(df: Any, id_col: str, time_col: str, target_col: str) -> Iterable[Dict[str, Any]]:
    if _pd is not None and isinstance(df, _pd.DataFrame):
        return df.to_dict("records")
    if isinstance(df, dict):
        cols = list(df.keys())
        n = len(df[target_col]) if target_col in df else 0
        return [{c: df[c][i] for c in cols} for i in range(n)]
    if isinstance(df, (list, tuple)):
        if all(x is None or isinstance(x, (int, float)) for x in df):
            return [{target_col: x} for x in df]
        return df
    raise InvalidRequestError(message="df must be a pandas DataFrame, a list of dicts, a dict of columns or a list of numbers", code="invalid_input")


def _to_series(df: Any, id_col: str, time_col: str, target_col: str) -> Tuple[List[Tuple[Any, List[Any], List[Optional[float]]]], str]:
    """[(unique_id, [ds…] ISO strings or ints, [y…])] in first-seen order, each sorted by ds; and
    what ds is: 'datetime', 'int' or 'none'."""
    groups: Dict[Any, List[Tuple[Any, Optional[float]]]] = {}
    kind = "none"
    for i, rec in enumerate(_records(df, id_col, time_col, target_col)):
        if not isinstance(rec, dict) or target_col not in rec:
            raise InvalidRequestError(message=f"row {i}: no {target_col!r} column", code="invalid_input")
        uid = rec.get(id_col, "series")
        t = rec.get(time_col)
        if t is not None:
            t, k = _stamp(t, i)
            if kind not in ("none", k):
                raise InvalidRequestError(message=f"row {i}: ds mixes integers and dates", code="invalid_input")
            kind = k
        groups.setdefault(uid, []).append((t, _value(rec[target_col], f"row {i}")))
    if not groups:
        raise InvalidRequestError(message="df holds no rows", code="invalid_input")
    out = []
    for uid, rows in groups.items():
        if kind != "none":
            if any(t is None for t, _ in rows):
                raise InvalidRequestError(message=f"series {uid}: some rows have no ds", code="invalid_input")
            key = (lambda r: r[0]) if kind == "int" else (lambda r: parse_time(r[0]))
            rows.sort(key=key)
            for a, b in zip(rows, rows[1:]):
                if key(a) == key(b):
                    raise InvalidRequestError(message=f"series {uid}: ds {b[0]} appears twice", code="invalid_input")
        out.append((uid, [t for t, _ in rows] if kind != "none" else [], [y for _, y in rows]))
    return out, kind


def _stamp(t: Any, i: int) -> Tuple[Any, str]:
    if isinstance(t, bool):
        raise InvalidRequestError(message=f"row {i}: ds is not a date: {t!r}", code="invalid_input")
    if isinstance(t, int) or (hasattr(t, "dtype") and getattr(t.dtype, "kind", "") in "iu"):
        return int(t), "int"
    if (_pd is not None and isinstance(t, _pd.Timestamp)) or isinstance(t, (_dt.datetime, _dt.date)):
        t = t.isoformat()
    if isinstance(t, str):
        if parse_time(t) is None:
            raise InvalidRequestError(message=f"row {i}: ds is not an ISO 8601 date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS): {t!r}", code="invalid_input")
        return t, "datetime"
    raise InvalidRequestError(message=f"row {i}: ds is not a date: {t!r}", code="invalid_input")


# Most empty steps filling may add (beyond that, the frequency is surely not the data's).
_MAX_FILL = 100_000

Series = List[Tuple[Any, List[Any], List[Optional[float]]]]


def _align(series: Series, ds_kind: str, freq: Optional[str]) -> Tuple[Series, Optional[str], int]:
    """Puts every series on its grid so that no step is silently dropped: a date (or step number)
    missing between two rows becomes None, which the service accepts, so the forecast continues
    after the last real step. Dates follow ``freq`` or the frequency inferred from all series (a date
    off that grid raises InvalidRequestError naming it); step numbers step by the greatest common
    divisor of their differences. Returns the series, the frequency to send and the step-number step."""
    observed = sum(len(ys) for _, _, ys in series)
    budget = max(_MAX_FILL, 10 * observed)
    filled: List[Tuple[Any, int, int]] = []

    def place(uid: Any, index: List[int], ys: List[Optional[float]]) -> List[Optional[float]]:
        n = index[-1] + 1 if index else 0
        out: List[Optional[float]] = [None] * n
        for k, y in zip(index, ys):
            out[k] = y
        if n > len(index):
            filled.append((uid, n - len(index), n))
        return out

    def too_many(what: str) -> InvalidRequestError:
        return InvalidRequestError(
            message=f"filling the missing steps on the {what} grid would add more than {budget} empty values (to {observed} given): is the frequency right?",
            code="invalid_input",
        )

    def report(what: str) -> None:
        if not filled:
            return
        count = sum(n for _, n, _ in filled)
        which = ", ".join(f"{uid} ({n})" for uid, n, _ in filled[:5]) + (f" and {len(filled) - 5} more series" if len(filled) > 5 else "")
        sparse = [f"{uid}: {n} of {total}" for uid, n, total in filled if n > total - n][:5]
        hint = f"; mostly empty (do their ds follow another frequency?): {', '.join(sparse)}" if sparse else ""
        warnings.warn(f"filled {count} missing {what}{'' if count == 1 else 's'} with None: {which}{hint}", stacklevel=4)

    if ds_kind == "int":
        step = 0
        for _, ds, _ in series:
            for a, b in zip(ds, ds[1:]):
                step = math.gcd(step, b - a)
        step = step or 1
        index = [[(t - ds[0]) // step for t in ds] for _, ds, _ in series]
        if sum((ix[-1] + 1 - len(ix)) if ix else 0 for ix in index) > budget:
            raise too_many(f"step {step}")
        out = [(uid, ds, place(uid, ix, ys)) for (uid, ds, ys), ix in zip(series, index)]
        report("step number")
        return out, freq, step
    if ds_kind != "datetime":
        return series, freq, 1
    times = [[parse_time(t) for t in ds] for _, ds, _ in series]
    code = freq or infer_frequency(times)  # type: ignore[arg-type]
    f = parse_frequency(code) if code else None
    if f is None:  # irregular without freq (rows get step numbers), or a code the service will name as unknown
        return series, code, 1
    left = budget
    out = []
    for (uid, ds, ys), ts in zip(series, times):
        at = grid_indexes(ts, f, len(ts) + left)  # type: ignore[arg-type]
        if at is None:
            raise too_many(code)
        if isinstance(at, OffGrid):
            where = "is not on it" if at.at == 0 else f"is off the grid that starts at {ds[0]}"
            given = ", the freq given" if freq else ""
            fix = "check freq, or leave it out to infer the frequency" if freq else "pass freq"
            raise InvalidRequestError(
                message=f"series {uid}: ds {ds[at.at]} {where} (frequency {code}{given}: expected {iso(at.expected)}); {fix}",
                code="invalid_input",
            )
        left -= (at[-1] + 1 - len(at)) if at else 0
        if left < 0:
            raise too_many(code)
        out.append((uid, ds, place(uid, at, ys)))
    report("date")
    return out, code, 1
