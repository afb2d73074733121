import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createEngine } from '../../src/engine/engine.ts';
import { booksOf } from '../billing/helpers.ts';
import { createKey, DB_KIND, registerUser, type TestUser } from '../helpers/app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

/** What came back on a raw connection: the status line and headers (if any), and whether the server closed it. */
interface RawAnswer {
  status: number | null;
  head: string;
  /** The body as received (not de-chunked). */
  body: string;
  closed: boolean;
  ms: number;
}

/**
 * Sends `head` (request line and headers) and `body` on a raw connection, then waits up to
 * `waitMs` for the server's answer and for it to close the connection. The client never sends
 * more than `body`: a Content-Length larger than it is a body that stops midway.
 */
function rawRequest(port: number, head: string, body: Buffer | string, waitMs: number, more?: (socket: Socket) => void): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const socket: Socket = connect(port, '127.0.0.1');
    let received = '';
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const m = /^HTTP\/1\.1 (\d{3})/.exec(received);
      const [h = '', ...rest] = received.split('\r\n\r\n');
      resolve({ status: m ? Number(m[1]) : null, head: h, body: rest.join('\r\n\r\n'), closed, ms: performance.now() - t0 });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on('data', (d) => {
      received += d.toString('latin1');
    });
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('connect', () => {
      socket.write(head);
      socket.write(body);
      more?.(socket);
    });
  });
}

const head = (path: string, length: number, headers: Record<string, string> = {}) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

describe(`the request lifecycle: credential before body (${DB_KIND})`, () => {
  let t: ListeningApp;
  let port: number;
  let u: TestUser;
  let key: string;
  before(async () => {
    t = await createListeningApp();
    port = Number(new URL(t.baseUrl).port);
    u = await registerUser(t);
    key = (await createKey(t, u)).key;
  });
  after(() => t.close());

  // 9 MB announced, 64 KiB sent: the server must answer without waiting for the rest.
  const announced = 9 * 1024 * 1024;
  const part = Buffer.alloc(64 * 1024, ' ');

  test('an authenticated route refuses a body without a credential, or with one that does not resolve, before reading it, and closes the connection', async () => {
    const cases = [
      ['/v1/forecast', {}, 400, 'missing_credential'],
      ['/v1/series/ingest', { Authorization: 'Bearer tsfm_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, 401, 'invalid_credential'],
      ['/v1/forecast', { Authorization: 'Basic dXNlcjpwYXNz' }, 401, 'invalid_credential'],
    ] as const;
    for (const [path, headers, status, code] of cases) {
      const r = await rawRequest(port, head(path, announced, headers), part, 3000);
      assert.equal(r.status, status, `${path} ${JSON.stringify(headers)}: ${r.head}`);
      assert.ok(r.closed, `${path}: the connection is closed, the rest of the body is not read`);
      assert.match(r.head, /connection: close/i);
      assert.equal(JSON.parse(r.body).code, code);
    }
  });

  test("/mcp answers its own 401 with WWW-Authenticate before reading a body, and a key's body is still read in full", async () => {
    const mcp = await rawRequest(port, head('/mcp', 1024 * 1024, { Accept: 'application/json, text/event-stream' }), part, 3000);
    assert.equal(mcp.status, 401, mcp.head);
    assert.match(mcp.head, /www-authenticate: Bearer resource_metadata=/i);
    assert.ok(mcp.closed);
    // With a key the server waits for the body (no answer while it is incomplete)...
    const waiting = await rawRequest(port, head('/v1/forecast', announced, { Authorization: `Bearer ${key}` }), part, 600);
    assert.equal(waiting.status, null, waiting.head);
    // ... and reads it when it is all there.
    const body = JSON.stringify({ model: 'echo-last', inputs: [{ target: [1, 2, 3] }], parameters: { prediction_length: 2 } });
    const ok = await rawRequest(port, head('/v1/forecast', Buffer.byteLength(body), { Authorization: `Bearer ${key}`, Connection: 'close' }), body, 3000);
    assert.equal(ok.status, 200, ok.head);
  });

  test('a route limited per client address refuses past its limit before reading the body; failed credential checks still count per address', async () => {
    const small = await createListeningApp({ env: { AUTH_RATE_LIMIT_PER_MINUTE: '2' } });
    const p = Number(new URL(small.baseUrl).port);
    try {
      const login = JSON.stringify({ email: 'nobody@example.com', password: 'wrong password' });
      for (let i = 0; i < 2; i++) {
        const r = await rawRequest(p, head('/api/auth/login', login.length, { Connection: 'close' }), login, 3000);
        assert.equal(r.status, 401, r.head);
      }
      const third = await rawRequest(p, head('/api/auth/login', announced), part, 3000);
      assert.equal(third.status, 429, third.head);
      assert.ok(third.closed);
      // Wrong keys: 401 twice, then 429 (AUTH_RATE_LIMIT_PER_MINUTE), each before the body.
      const wrong = { Authorization: 'Bearer tsfm_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB' };
      const statuses: (number | null)[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await rawRequest(p, head('/v1/forecast', announced, wrong), part, 3000)).status);
      assert.deepEqual(statuses, [401, 401, 429]);
    } finally {
      await small.close();
    }
  });
});

describe(`the request lifecycle: time to send a request (${DB_KIND})`, () => {
  let t: ListeningApp;
  let port: number;
  let key: string;
  const engine = new FakeEngine();
  before(async () => {
    t = await createListeningApp({
      env: { REQUEST_TIMEOUT_MS: '1000', REQUEST_BODY_MIN_BYTES_PER_SECOND: '2000', REQUEST_BODY_RATE_WINDOW_MS: '400' },
      overrides: { engine },
    });
    port = Number(new URL(t.baseUrl).port);
    key = (await createKey(t, await registerUser(t))).key;
  });
  after(() => t.close());

  const auth = () => ({ Authorization: `Bearer ${key}` });

  test('a body that stops midway is answered 408 request_timeout within a window of the minimum rate, and its connection closed', async () => {
    const r = await rawRequest(port, head('/v1/forecast', 1024 * 1024, auth()), Buffer.alloc(200 * 1024, ' '), 5000);
    assert.equal(r.status, 408, r.head);
    assert.ok(r.closed);
    assert.equal(JSON.parse(r.body).code, 'request_timeout');
    assert.match(JSON.parse(r.body).error, /REQUEST_BODY_MIN_BYTES_PER_SECOND/);
    assert.ok(r.ms < 1000, `${r.ms} ms`);
  });

  test('a body sent steadily but not within REQUEST_TIMEOUT_MS, headers that never end, and a body trickled a few bytes at a time are cut too', async () => {
    let timer: NodeJS.Timeout | undefined;
    const steady = await rawRequest(port, head('/v1/forecast', 1024 * 1024, auth()), '{', 5000, (socket) => {
      timer = setInterval(() => socket.writable && socket.write(Buffer.alloc(1024, ' ')), 50);
    });
    clearInterval(timer);
    assert.equal(steady.status, 408, steady.head);
    assert.match(JSON.parse(steady.body).error, /REQUEST_TIMEOUT_MS/);
    assert.ok(steady.ms >= 1000 && steady.ms < 4000, `${steady.ms} ms`);
    const headers = await rawRequest(port, 'POST /v1/forecast HTTP/1.1\r\nHost: 127.0.0.1\r\n', '', 5000);
    assert.equal(headers.status, 408, headers.head);
    assert.ok(headers.closed);
    const trickle = await rawRequest(port, head('/v1/forecast', 100_000, auth()), '{', 5000, (socket) => {
      timer = setInterval(() => socket.writable && socket.write(' '), 50);
    });
    clearInterval(timer);
    assert.equal(trickle.status, 408, trickle.head);
    assert.match(JSON.parse(trickle.body).error, /REQUEST_BODY_MIN_BYTES_PER_SECOND/);
    // Cut by the rate (a window of 400 ms), before the request timeout.
    assert.ok(trickle.ms < 1000, `${trickle.ms} ms`);
  });

  test('the limit is on sending the request, not on answering it: a job longer than REQUEST_TIMEOUT_MS is answered', async () => {
    engine.delayMs = 1500;
    try {
      const body = JSON.stringify({ model: 'echo-last', inputs: [{ target: [1, 2, 3] }], parameters: { prediction_length: 2 } });
      const r = await rawRequest(port, head('/v1/forecast', Buffer.byteLength(body), { ...auth(), Connection: 'close' }), body, 5000);
      assert.equal(r.status, 200, r.head);
      assert.ok(r.ms >= 1500, `${r.ms} ms`);
    } finally {
      engine.delayMs = 0;
    }
  });
});

describe(`the request lifecycle: an answer nobody reads (${DB_KIND})`, () => {
  let t: ListeningApp;
  let port: number;
  let key: string;
  const engine = new FakeEngine();
  before(async () => {
    t = await createListeningApp({ env: { RESPONSE_SEND_TIMEOUT_MS: '500' }, overrides: { engine } });
    t.app.server.on('connection', (s: Socket) => serverSide.set(s.remotePort as number, s));
    port = Number(new URL(t.baseUrl).port);
    key = (await createKey(t, await registerUser(t))).key;
  });
  after(() => t.close());

  /** The server's end of each connection, by the client's port. */
  const serverSide = new Map<number, Socket>();

  /**
   * Sends a request and reads nothing until `pauseMs` after the server has started writing the
   * answer, then reads what is left: the bytes, and whether the answer ended (its last chunk).
   */
  function readLate(body: string, pauseMs: number): Promise<{ bytes: number; complete: boolean }> {
    return new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let bytes = 0;
      let tail = '';
      socket.pause();
      socket.on('connect', async () => {
        socket.write(head('/v1/forecast', Buffer.byteLength(body), { Authorization: `Bearer ${key}`, Connection: 'close' }));
        socket.write(body);
        const started = () => (serverSide.get(socket.localPort as number)?.bytesWritten ?? 0) > 0;
        while (!started()) await new Promise((r) => setTimeout(r, 20));
        await new Promise((r) => setTimeout(r, pauseMs));
        socket.on('data', (d: Buffer) => {
          bytes += d.length;
          tail = (tail + d.toString('latin1')).slice(-16);
        });
        socket.resume();
      });
      const done = () => resolve({ bytes, complete: tail.endsWith('0\r\n\r\n') });
      socket.on('error', done);
      socket.on('close', done);
    });
  }

  // About 10 MB of answer: more than the kernel's socket buffers take for a reader that reads nothing.
  const large = JSON.stringify({ model: 'echo-last', inputs: [{ target: [1.5, 2.5, 3.5] }], parameters: { prediction_length: 10_000, num_samples: 190 } });

  test('an answer whose client reads nothing for RESPONSE_SEND_TIMEOUT_MS is dropped, its connection closed', async () => {
    const r = await readLate(large, 1500);
    assert.equal(r.complete, false, `${r.bytes} bytes`);
    assert.ok(r.bytes < 8_000_000, `${r.bytes} bytes`);
  });

  test('a client that reads in time gets the whole answer', async () => {
    const r = await readLate(large, 0);
    assert.equal(r.complete, true, `${r.bytes} bytes`);
    assert.ok(r.bytes > 9_000_000, `${r.bytes} bytes`);
  });

  test('the watch ends with its answer: a pipelined request computing longer than RESPONSE_SEND_TIMEOUT_MS behind it is answered', async () => {
    const body = JSON.stringify({ model: 'echo-last', inputs: [{ target: [1, 2, 3] }], parameters: { prediction_length: 2 } });
    const one = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    const last = `${head('/v1/forecast', Buffer.byteLength(body), { Authorization: `Bearer ${key}`, Connection: 'close' })}${body}`;
    // Both requests in one write: the second computes (1.5 s) while the first is answered, and long after.
    engine.delayMs = 1500;
    try {
      const r = await rawRequest(port, one + last, '', 6000);
      assert.equal(r.status, 200, r.head);
      assert.equal((`${r.head}\r\n\r\n${r.body}`.match(/HTTP\/1\.1 200/g) ?? []).length, 2, r.body.slice(0, 300));
    } finally {
      engine.delayMs = 0;
    }
  });
});

describe(`the request lifecycle: a client that leaves before its answer (${DB_KIND})`, () => {
  const until = async (what: string, ok: () => boolean | Promise<boolean>, ms: number) => {
    const end = performance.now() + ms;
    while (!(await ok())) {
      if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  /** Opens a request and returns its socket (the client leaves by destroying it). */
  const open = (port: number, path: string, key: string, body: unknown): Socket => {
    const text = JSON.stringify(body);
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    const mcp: Record<string, string> = path === '/mcp' ? { Accept: 'application/json, text/event-stream' } : {};
    socket.write(head(path, Buffer.byteLength(text), { Authorization: `Bearer ${key}`, ...mcp }));
    socket.write(text);
    return socket;
  };

  test('a running job is stopped and a queued one dropped; nothing is held, charged or recorded', async () => {
    const engine = createEngine({ poolSize: 1, timeoutMs: 120_000, maxQueue: 64, modelsDir: '/nonexistent', threads: 1 });
    const stats = () => engine.stats?.() ?? { running: -1, waiting: -1 };
    // The job must run for seconds: its work bound (ADR 0039) is raised with the engine's time limit.
    const t = await createListeningApp({ overrides: { engine, backgroundJobs: false }, env: { INFERENCE_MAX_JOB_WORK_MS: '60000' } });
    try {
      const port = Number(new URL(t.baseUrl).port);
      const u = await registerUser(t);
      const key = (await createKey(t, u)).key;
      const before = await booksOf(t, u.id);
      // 8 series × 1,000 points of auto-arima: about 5 s on one worker.
      const inputs = Array.from({ length: 8 }, (_, s) => ({
        target: Array.from({ length: 1000 }, (_, i) => 100 + 10 * Math.sin((2 * Math.PI * i) / 24 + s) + 3 * Math.sin(i * 0.37 * (s + 1)) + (i % (5 + s))),
      }));
      const body = { model: 'auto-arima', inputs, parameters: { prediction_length: 24, frequency: 'h' } };
      const running = open(port, '/v1/forecast', key, body);
      await until('the first job runs', () => stats().running === 1, 10_000);
      const queued = open(port, '/v1/forecast', key, body);
      await until('the second job waits (one job per account at once)', () => stats().waiting === 1, 10_000);
      queued.destroy();
      await until('the queued job is dropped', () => stats().waiting === 0, 2000);
      assert.equal(stats().running, 1);
      running.destroy();
      // The worker is stopped (its thread terminated), not left to finish the 5 s job.
      await until('the running job is stopped', () => stats().running === 0, 2000);
      await until('the holds are released', async () => (await booksOf(t, u.id)).held === 0, 5000);
      const after = await booksOf(t, u.id);
      assert.equal(after.balance, before.balance);
      assert.equal(after.events, 0);
      assert.equal(after.debits, 0);
      assert.ok(after.balanced);
    } finally {
      await t.close();
    }
  });

  test('a job that finishes after its client left is not charged: forecast, batch, cross-validation, an MCP tool call', async () => {
    // An engine that does not stop on the signal: the answer is ready, but there is nobody to give it to.
    const engine = new FakeEngine();
    engine.delayMs = 400;
    const t = await createListeningApp({ overrides: { engine, backgroundJobs: false } });
    try {
      const port = Number(new URL(t.baseUrl).port);
      const u = await registerUser(t);
      const key = (await createKey(t, u)).key;
      const target = [5, 7, 6, 8, 7, 9, 8, 10, 9, 11, 10, 12, 11, 13, 12, 14];
      const calls = [
        ['/v1/forecast', { model: 'echo-last', inputs: [{ target }], parameters: { prediction_length: 3 } }],
        ['/v1/forecast/batch', { requests: [{ model: 'echo-last', inputs: [{ target }], parameters: { prediction_length: 3 } }] }],
        ['/v1/cross-validation', { models: ['echo-last'], inputs: [{ target }], prediction_length: 2, n_windows: 2 }],
        [
          '/mcp',
          {
            jsonrpc: '2.0',
            id: 1,
            method: 'tools/call',
            params: { name: 'forecast', arguments: { model: 'echo-last', inputs: [{ target }], parameters: { prediction_length: 3 } } },
          },
        ],
      ] as const;
      const before = await booksOf(t, u.id);
      for (const [path, body] of calls) {
        const jobs = engine.jobs.length;
        const socket = open(port, path, key, body);
        await until(`${path}: the job runs`, () => engine.jobs.length > jobs, 5000);
        socket.destroy();
        // Past the job's end, and its release.
        await new Promise((r) => setTimeout(r, 1000));
        const after = await booksOf(t, u.id);
        assert.equal(after.events, 0, `${path}: no usage event`);
        assert.equal(after.balance, before.balance, `${path}: nothing charged`);
        assert.equal(after.held, 0, `${path}: the hold released`);
        assert.ok(after.balanced, path);
      }
      // The same calls, read: charged as usual.
      for (const [path, body] of calls) {
        const r = await fetch(`${t.baseUrl}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${key}` },
          body: JSON.stringify(body),
        });
        const text = await r.text();
        assert.equal(r.status, 200, `${path}: ${text}`);
        assert.doesNotMatch(text, /"isError":true/, path);
      }
      assert.equal((await booksOf(t, u.id)).events, calls.length);
    } finally {
      await t.close();
    }
  });
});
