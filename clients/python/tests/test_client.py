"""Tests of the Python client.

The live part needs a running service: TSFM_BASE_URL and TSFM_API_KEY (test/clients/python.test.ts
starts one with the `echo-last` test model and runs this file; it is skipped otherwise). The
DataFrame part needs pandas and is skipped with a message without it; the retry part runs a
scripted server of its own.
"""

import json
import os
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import tsfm_client
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


class _Scripted(BaseHTTPRequestHandler):
    script = []
    attempts = 0

    def _answer(self):
        type(self).attempts += 1
        n = int(self.headers.get("content-length") or 0)
        if n:
            self.rfile.read(n)
        status, headers, body = type(self).script.pop(0)
        data = json.dumps(body).encode()
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

    def test_pandas_flag_matches_the_interpreter(self):
        self.assertEqual(tsfm_client.HAS_PANDAS, pd is not None)


if __name__ == "__main__":
    unittest.main()
