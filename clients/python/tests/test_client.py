"""Tests of the Python client.

The live part needs a running service: TSFM_BASE_URL and TSFM_API_KEY (test/clients/python.test.ts
starts one with the `echo-last` test model and runs this file; it is skipped otherwise). The
DataFrame part needs pandas and is skipped with a message without it; the retry part runs a
scripted server of its own.
"""

import json
import math
import os
import threading
import unittest
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import tsfm_client
from tsfm_client.frequency import infer_frequency, parse_frequency, parse_time
from tsfm_client import (
    AuthenticationError,
    Client,
    InvalidRequestError,
    NotFoundError,
    RateLimitError,
    ServiceError,
    TsfmError,
)

BASE = os.environ.get("TSFM_BASE_URL")
KEY = os.environ.get("TSFM_API_KEY")
LIVE = bool(BASE and KEY)

try:
    import pandas as pd
except Exception:  # the DataFrame tests say why they are skipped
    pd = None


def long_rows(n_series, n_points=3):
    """Series i ends with the value i (the echo-last model repeats it), daily from 2024-01-01."""
    rows = []
    for i in range(n_series):
        for d in range(n_points):
            rows.append({"unique_id": f"id{i:03d}", "ds": f"2024-01-0{d + 1}", "y": float(i if d == n_points - 1 else d)})
    return rows


@unittest.skipUnless(LIVE, "TSFM_BASE_URL and TSFM_API_KEY are not set: no server to test against")
class LiveTests(unittest.TestCase):
    def setUp(self):
        self.client = Client(api_key=KEY, base_url=BASE)

    def test_models_and_validate(self):
        ids = [m["id"] for m in self.client.models()]
        self.assertIn("echo-last", ids)
        self.assertEqual(self.client.validate()["auth_type"], "api_key")

    def test_forecast_returns_nixtla_long_format(self):
        rows = list(reversed(long_rows(2)))  # order of rows within a series does not matter
        out = self.client.forecast(rows, h=2, model="echo-last", freq="D", quantiles=[0.1, 0.9])
        records = out.to_dict("records") if pd is not None else out
        if pd is not None:
            self.assertIsInstance(out, pd.DataFrame)
            self.assertEqual(list(out.columns), ["unique_id", "ds", "echo-last", "echo-last-q-10", "echo-last-q-90"])
        else:
            self.assertIsInstance(out, list)
            self.assertEqual(list(out[0].keys()), ["unique_id", "ds", "echo-last", "echo-last-q-10", "echo-last-q-90"])
        # first-seen order of unique_id: id001 comes first in the reversed rows
        self.assertEqual([r["unique_id"] for r in records], ["id001", "id001", "id000", "id000"])
        self.assertEqual([r["echo-last"] for r in records], [1.0, 1.0, 0.0, 0.0])
        self.assertAlmostEqual(records[0]["echo-last-q-10"], 1.0 - 0.4)
        ds = [str(r["ds"])[:10] for r in records]
        self.assertEqual(ds, ["2024-01-04", "2024-01-05", "2024-01-04", "2024-01-05"])

    def test_level_gives_lo_hi_columns_and_list_input(self):
        out = self.client.forecast([3.0, None, 5.0], h=1, model="echo-last", level=[80])
        records = out.to_dict("records") if pd is not None else out
        self.assertEqual(len(records), 1)
        r = records[0]
        self.assertEqual(r["unique_id"], "series")
        self.assertEqual(r["ds"], 1)
        self.assertEqual(r["echo-last"], 5.0)
        self.assertAlmostEqual(r["echo-last-lo-80"], 5.0 - 0.4)
        self.assertAlmostEqual(r["echo-last-hi-80"], 5.0 + 0.4)

    def test_more_than_64_series_are_batched_in_order_with_progress(self):
        progress = []
        before = self.client.usage()["totals"]["requests"]
        out = self.client.forecast(long_rows(150), h=1, model="echo-last", freq="D", max_workers=3, on_progress=lambda d, t: progress.append((d, t)))
        records = out.to_dict("records") if pd is not None else out
        self.assertEqual(len(records), 150)
        for i, r in enumerate(records):
            self.assertEqual(r["unique_id"], f"id{i:03d}")
            self.assertEqual(r["echo-last"], float(i))
        self.assertEqual(progress, [(0, 150), (64, 150), (128, 150), (150, 150)])
        self.assertEqual(self.client.usage()["totals"]["requests"] - before, 3)

    def test_ensemble_names_the_column_ensemble(self):
        rows = [{"unique_id": "load", "ds": f"2024-01-{d + 1:02d}", "y": float(10 + d % 4)} for d in range(24)]
        out = self.client.forecast(rows, h=2, freq="D", ensemble=True, models=["echo-last", "echo-short"])
        records = out.to_dict("records") if pd is not None else out
        self.assertEqual([r["unique_id"] for r in records], ["load", "load"])
        self.assertEqual(records[0]["ensemble"], 13.0)
        self.assertEqual(str(records[0]["ds"])[:10], "2024-01-25")

    def test_forecast_batch_splits_requests(self):
        reqs = [{"model": "no-such-model" if i == 3 else "echo-last", "inputs": [{"target": [1, 2, i]}], "parameters": {"prediction_length": 1}} for i in range(70)]
        items = self.client.forecast_batch(reqs)
        self.assertEqual(len(items), 70)
        self.assertFalse(items[3]["ok"])
        self.assertEqual(items[3]["error"]["code"], "model_not_found")
        self.assertEqual(items[69]["result"]["outputs"][0]["mean"], [[69]])

    def test_typed_errors_carry_the_code(self):
        with self.assertRaises(NotFoundError) as cm:
            self.client.forecast([1, 2, 3], h=2, model="autoets")
        self.assertEqual(cm.exception.code, "model_not_found")
        self.assertEqual(cm.exception.status, 404)
        self.assertTrue(cm.exception.request_id)
        with self.assertRaises(InvalidRequestError) as cm:
            self.client.forecast([1, 2, 3], h=20000, model="echo-last")
        self.assertEqual(cm.exception.code, "validation_error")
        self.assertEqual(cm.exception.detail[0]["loc"], ["body", "parameters", "prediction_length"])
        with self.assertRaises(AuthenticationError) as cm:
            Client(api_key="tsfm_wrong", base_url=BASE).usage()
        self.assertEqual(cm.exception.code, "invalid_credential")
        with self.assertRaises(InvalidRequestError) as cm:
            self.client.forecast([{"ds": "2024-01-01", "y": "abc"}], h=1, model="echo-last")
        self.assertEqual(cm.exception.code, "invalid_input")
        self.assertIn("row 0: y is not a number", str(cm.exception))


def _ds(out):
    records = out.to_dict("records") if pd is not None else out
    return [(r["unique_id"], str(r["ds"])[:10]) for r in records]


@unittest.skipUnless(LIVE, "TSFM_BASE_URL and TSFM_API_KEY are not set: no server to test against")
class CalendarTests(unittest.TestCase):
    """Forecast dates on anchored calendars and across missing dates (with or without pandas)."""

    def setUp(self):
        self.client = Client(api_key=KEY, base_url=BASE)

    def forecast(self, dates, h, **kw):
        rows = [{"ds": d, "y": float(i)} for i, d in enumerate(dates)]
        return _ds(self.client.forecast(rows, h=h, model="echo-last", **kw))

    def test_fiscal_years_and_quarters_off_january_keep_their_anchor(self):
        self.assertEqual(self.forecast(["2020-07-01", "2021-07-01", "2022-07-01", "2023-07-01"], 2), [("series", "2024-07-01"), ("series", "2025-07-01")])
        self.assertEqual(self.forecast(["2020-02-01", "2020-05-01", "2020-08-01", "2020-11-01"], 2), [("series", "2021-02-01"), ("series", "2021-05-01")])
        self.assertEqual(self.forecast(["2021-06-30", "2022-06-30", "2023-06-30"], 2), [("series", "2024-06-30"), ("series", "2025-06-30")])
        self.assertEqual(self.forecast(["2021-02-28", "2021-05-31", "2021-08-31"], 2), [("series", "2021-11-30"), ("series", "2022-02-28")])

    def test_missing_dates_are_null_steps_so_the_forecast_follows_the_last_date(self):
        rows = [
            {"unique_id": u, "ds": d, "y": y}
            for u, d, y in [("a", "2024-01-01", 1), ("a", "2024-01-02", 2), ("a", "2024-01-03", 3), ("b", "2024-01-01", 1), ("b", "2024-01-03", 3), ("b", "2024-01-04", 4)]
        ]
        with self.assertWarnsRegex(UserWarning, r"filled 1 missing date with None: b \(1\)"):
            out = self.client.forecast(rows, h=1, model="echo-last")
        self.assertEqual(_ds(out), [("a", "2024-01-04"), ("b", "2024-01-05")])
        records = out.to_dict("records") if pd is not None else out
        self.assertEqual(records[1]["echo-last"], 4.0)
        # the first series has the gap: the frequency comes from all of them
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.assertEqual(_ds(self.client.forecast(rows[3:] + rows[:3], h=1, model="echo-last")), [("b", "2024-01-05"), ("a", "2024-01-04")])
            # with freq="D", a series missing 01-04 is forecast for 01-06, not for a date it has
            self.assertEqual(self.forecast(["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-05"], 1, freq="D"), [("series", "2024-01-06")])
            # whole-number ds: gaps filled too, the output continues them
            out = self.client.forecast([{"ds": d, "y": float(d)} for d in (1, 2, 4)], h=2, model="echo-last")
        records = out.to_dict("records") if pd is not None else out
        self.assertEqual([r["ds"] for r in records], [5, 6])
        with self.assertRaises(InvalidRequestError) as cm:
            self.forecast(["2024-01-01", "2024-01-02"], 1, freq="MS")
        self.assertEqual(cm.exception.code, "invalid_input")
        self.assertIn("series series: ds 2024-01-02 is off the grid that starts at 2024-01-01 (frequency MS, the freq given", str(cm.exception))


@unittest.skipUnless(LIVE, "TSFM_BASE_URL and TSFM_API_KEY are not set: no server to test against")
@unittest.skipIf(pd is None, "pandas is not importable by this interpreter: DataFrame tests skipped (apt-get install python3-pandas)")
class DataFrameTests(unittest.TestCase):
    def test_dataframe_in_and_out_with_inferred_frequency(self):
        df = pd.DataFrame(
            {
                "unique_id": ["a"] * 4 + ["b"] * 4,
                "ds": list(pd.date_range("2023-01-01", periods=4, freq="MS")) * 2,
                "y": [1.0, 2.0, 3.0, 4.0, 10.0, 20.0, float("nan"), 40.0],
            }
        )
        out = Client(api_key=KEY, base_url=BASE).forecast(df, h=3, model="echo-last", level=[80, 95])
        self.assertIsInstance(out, pd.DataFrame)
        self.assertEqual(
            list(out.columns),
            ["unique_id", "ds", "echo-last", "echo-last-lo-80", "echo-last-hi-80", "echo-last-lo-95", "echo-last-hi-95"],
        )
        self.assertTrue(pd.api.types.is_datetime64_any_dtype(out["ds"]))
        self.assertIsNone(out["ds"].dt.tz)
        self.assertEqual(list(out["ds"][:3]), list(pd.date_range("2023-05-01", periods=3, freq="MS")))
        self.assertEqual(list(out["echo-last"]), [4.0] * 3 + [40.0] * 3)
        self.assertTrue((out["echo-last-lo-95"] < out["echo-last-lo-80"]).all())

    def test_anchored_pandas_frequencies_keep_their_anchor(self):
        client = Client(api_key=KEY, base_url=BASE)
        cases = [
            ("2020-07-01", "AS-JUL", ["2024-07-01", "2025-07-01"]),
            ("2020-02-01", "QS-NOV", ["2021-02-01", "2021-05-01"]),
            ("2020-06-30", "A-JUN", ["2024-06-30", "2025-06-30"]),
        ]
        for start, pandas_freq, expected in cases:
            try:
                stamps = pd.date_range(start, periods=4, freq=pandas_freq)
            except ValueError:  # pandas 3 spells them YS-JUL, YE-JUN
                stamps = pd.date_range(start, periods=4, freq=pandas_freq.replace("AS", "YS").replace("A-", "YE-"))
            df = pd.DataFrame({"unique_id": "s", "ds": stamps, "y": [1.0, 2.0, 3.0, 4.0]})
            out = client.forecast(df, h=2, model="echo-last")
            self.assertEqual([str(d)[:10] for d in out["ds"]], expected, pandas_freq)
            # a missing row (pandas cannot infer a frequency then) is a null step
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = client.forecast(df.drop(index=1), h=2, model="echo-last")
            self.assertEqual([str(d)[:10] for d in out["ds"]], expected, f"{pandas_freq} with a gap")


class _Scripted(BaseHTTPRequestHandler):
    script = []
    attempts = 0

    def _answer(self):
        type(self).attempts += 1
        n = int(self.headers.get("content-length") or 0)
        if n:
            self.rfile.read(n)
        status, headers, body = type(self).script.pop(0)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        for k, v in {"content-type": "application/json", "x-request-id": f"req-{type(self).attempts}", **headers}.items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = _answer
    do_POST = _answer

    def log_message(self, *args):
        pass


class RetryTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
        cls.thread = threading.Thread(target=cls.server.serve_forever, daemon=True)
        cls.thread.start()
        cls.base = f"http://127.0.0.1:{cls.server.server_address[1]}"

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def script(self, steps):
        _Scripted.script = list(steps)
        _Scripted.attempts = 0

    limited = (429, {"retry-after": "0"}, {"error": "slow down", "code": "rate_limit_exceeded"})
    busy = (503, {"retry-after": "0"}, {"error": "queue full", "code": "upstream_unavailable"})

    def test_429_and_503_are_retried(self):
        self.script([self.limited, self.busy, (200, {}, {"models": []})])
        self.assertEqual(Client(api_key="k", base_url=self.base).models(), [])
        self.assertEqual(_Scripted.attempts, 3)

    def test_retries_run_out_into_a_typed_error(self):
        self.script([self.limited] * 3)
        with self.assertRaises(RateLimitError) as cm:
            Client(api_key="k", base_url=self.base, max_retries=2).models()
        self.assertEqual(cm.exception.code, "rate_limit_exceeded")
        self.assertEqual(cm.exception.retry_after, 0)
        self.assertEqual(cm.exception.request_id, "req-3")
        self.assertEqual(_Scripted.attempts, 3)

    def test_a_long_retry_after_fails_at_once(self):
        self.script([(429, {"retry-after": "3600"}, {"error": "slow down", "code": "rate_limit_exceeded"})])
        with self.assertRaises(RateLimitError) as cm:
            Client(api_key="k", base_url=self.base, max_retry_delay=5).models()
        self.assertEqual(cm.exception.retry_after, 3600)
        self.assertEqual(_Scripted.attempts, 1)

    def test_other_errors_are_not_retried(self):
        self.script([(500, {}, {"error": "boom", "code": "internal_error"})])
        with self.assertRaises(ServiceError) as cm:
            Client(api_key="k", base_url=self.base).models()
        self.assertEqual(cm.exception.code, "internal_error")
        self.assertEqual(_Scripted.attempts, 1)

    def test_unreachable_is_network_error(self):
        with self.assertRaises(TsfmError) as cm:
            Client(api_key="k", base_url="http://127.0.0.1:1", max_retries=0).models()
        self.assertEqual(cm.exception.code, "network_error")

    def test_a_missing_credential_is_an_authentication_error(self):
        self.script([(400, {}, {"error": "A credential is required", "code": "missing_credential"})])
        with self.assertRaises(AuthenticationError) as cm:
            Client(api_key="", base_url=self.base).usage()
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "missing_credential"))
        self.script([(400, {}, {"error": "bad", "code": "request_error"})])
        with self.assertRaises(InvalidRequestError):
            Client(api_key="k", base_url=self.base).usage()

    def test_an_answer_that_is_not_json_is_a_typed_error(self):
        self.script([(200, {"content-type": "text/html"}, b"<!doctype html><title>TSFM</title>")])
        with self.assertRaises(ServiceError) as cm:
            Client(api_key="k", base_url=self.base).request("GET", "/")
        self.assertEqual(cm.exception.code, "invalid_response")
        self.assertIn("GET / answered text/html, not JSON", str(cm.exception))

    def test_pandas_flag_matches_the_interpreter(self):
        self.assertEqual(tsfm_client.HAS_PANDAS, pd is not None)


class InputTests(unittest.TestCase):
    """Input checks made before any call (no server needed)."""

    def setUp(self):
        self.client = Client(api_key="k", base_url="http://127.0.0.1:1", max_retries=0)

    def test_infinity_is_refused_naming_the_value(self):
        for value in (float("inf"), float("-inf")):
            with self.assertRaises(InvalidRequestError) as cm:
                self.client.forecast([value, 1, 2, 3, 4], h=2)
            self.assertEqual(cm.exception.code, "invalid_input")
            self.assertIn("row 0: y must be a finite number, got", str(cm.exception))
        with self.assertRaises(InvalidRequestError) as cm:
            self.client.forecast([{"ds": "2024-01-01", "y": "-inf"}], h=1)
        self.assertIn("row 0: y must be a finite number, got -inf", str(cm.exception))
        with self.assertRaises(InvalidRequestError) as cm:
            self.client.forecast_raw({"model": "naive", "inputs": [{"target": [1.0, math.inf]}]})
        self.assertIn("cannot be sent as JSON", str(cm.exception))

    def test_dates_must_be_iso_and_distinct(self):
        with self.assertRaises(InvalidRequestError) as cm:
            self.client.forecast([{"ds": "01/02/2024", "y": 1}], h=1)
        self.assertIn("ds is not an ISO 8601 date", str(cm.exception))
        with self.assertRaises(InvalidRequestError) as cm:
            self.client.forecast([{"ds": "2024-01-01", "y": 1}, {"ds": "2024-01-01T00:00:00Z", "y": 2}], h=1)
        self.assertIn("appears twice", str(cm.exception))

    def test_frequencies_are_inferred_with_anchors_and_gaps(self):
        def infer(*dates):
            return infer_frequency([[parse_time(d) for d in dates]])

        self.assertEqual(infer("2020-07-01", "2021-07-01", "2022-07-01"), "YS-JUL")
        self.assertEqual(infer("2021-02-01", "2021-05-01", "2021-08-01"), "QS-FEB")
        self.assertEqual(infer("2021-06-30", "2022-06-30", "2023-06-30"), "Y-JUN")
        self.assertEqual(infer("2021-02-28", "2021-05-31", "2021-08-31"), "Q-NOV")
        self.assertEqual(infer("2021-01-01", "2021-04-01", "2021-07-01"), "QS")
        self.assertEqual(infer("2024-01-01", "2024-01-02", "2024-01-05"), "D")
        self.assertEqual(infer("2024-01-04", "2024-01-05", "2024-01-08"), "B")
        self.assertEqual(infer("2024-01-01T00:00:00Z", "2024-01-01T00:15:00Z", "2024-01-01T00:45:00Z"), "15min")
        self.assertIsNone(infer("2024-01-01", "2024-01-03", "2024-01-06"))
        self.assertEqual(infer_frequency([[parse_time("2020-01-01"), parse_time("2021-01-01"), parse_time("2022-01-01")], [parse_time("2023-01-01")]]), "YS")
        self.assertEqual(infer_frequency([[parse_time("2020-01-01"), parse_time("2021-01-01"), parse_time("2022-01-01")], [parse_time("2020-07-01"), parse_time("2021-07-01")]]), "12MS")
        for code in ("W-WED", "QS-FEB", "Q-NOV", "QE-NOV", "A-JUN", "YE-JUN", "AS-JUL", "15min", "B"):
            self.assertIsNotNone(parse_frequency(code), code)
        for code in ("W-XYZ", "M-JAN", "SMS"):
            self.assertIsNone(parse_frequency(code), code)


if __name__ == "__main__":
    unittest.main()
