import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createKey, DB_KIND, registerUser, type TestUser } from '../helpers/app.ts';
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
function rawRequest(port: number, head: string, body: Buffer | string, waitMs: number): Promise<RawAnswer> {
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
