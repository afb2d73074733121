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
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .errors import InvalidRequestError, TsfmError, error_for

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
        """One call to any route; returns the parsed JSON answer or raises a TsfmError."""
        url = self.base_url + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        data = None if body is None else json.dumps(body, allow_nan=False).encode("utf-8")
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
                    return json.loads(raw) if raw else None
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
        ``freq``: pandas-style code (``D``, ``h``, ``W``, ``MS``, ``QS``…), inferred with pandas when
        omitted. ``quantiles`` (e.g. ``[0.1, 0.5, 0.9]``) add columns ``<model>-q-10``…; ``level``
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
        if freq is None and ds_kind == "datetime":
            freq = _infer_freq(series)
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
        for (uid, ds, _), out in zip(series, outputs):
            by_level = {q["level"]: q["values"] for q in (out.get("quantile_predictions") or [])}
            stamps = out.get("timestamps")
            for j, step in enumerate(out["mean"]):
                if ds_kind == "int" and ds:
                    t: Any = int(ds[-1]) + (j + 1) * (int(ds[-1]) - int(ds[-2]) if len(ds) > 1 else 1)
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
        if ds_kind == "datetime" and len(out_df):
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
    return None if math.isnan(f) else f


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
            rows.sort(key=lambda r: r[0])
        out.append((uid, [t for t, _ in rows] if kind != "none" else [], [y for _, y in rows]))
    return out, kind


def _stamp(t: Any, i: int) -> Tuple[Any, str]:
    if isinstance(t, bool):
        raise InvalidRequestError(message=f"row {i}: ds is not a date: {t!r}", code="invalid_input")
    if isinstance(t, int) or (hasattr(t, "dtype") and getattr(t.dtype, "kind", "") in "iu"):
        return int(t), "int"
    if _pd is not None and isinstance(t, _pd.Timestamp):
        return t.isoformat(), "datetime"
    if isinstance(t, (_dt.datetime, _dt.date)):
        return t.isoformat(), "datetime"
    if isinstance(t, str):
        try:
            _dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidRequestError(message=f"row {i}: ds is not an ISO 8601 date: {t!r}", code="invalid_input") from None
        return t, "datetime"
    raise InvalidRequestError(message=f"row {i}: ds is not a date: {t!r}", code="invalid_input")


def _infer_freq(series: List[Tuple[Any, List[Any], List[Optional[float]]]]) -> Optional[str]:
    """The pandas frequency of the first series with 3 or more points, as a code the API accepts."""
    if _pd is None:
        return None
    for _, ds, _ in series:
        if len(ds) >= 3:
            try:
                f = _pd.infer_freq(_pd.DatetimeIndex(_pd.to_datetime(ds, utc=True)))
            except (TypeError, ValueError):
                return None
            if f is None:
                return None
            # QS-OCT, YS-JAN, A-DEC…: the API takes the unanchored code; weekly anchors (W-SUN) pass as they are
            if "-" in f and not f.startswith("W"):
                f = f.split("-")[0]
            return f
    return None
