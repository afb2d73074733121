import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ERROR_CODES, ERROR_STATUS, type ErrorCode } from '../../src/shared/errors.ts';
import { DB_KIND } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

/**
 * What Fastify's router and Node's HTTP parser refuse before any route runs answers in the
 * documented shape too: `{error, code, request_id}`, a code of the closed list with its status
 * from the table, the request id also in `x-request-id`, and no long input echoed back.
 */
function assertServiceError(status: number, headers: Record<string, string | undefined>, text: string, expected: { status: number; code: ErrorCode }) {
  assert.equal(status, expected.status, text);
  assert.match(headers['content-type'] ?? '', /^application\/json/);
  const body = JSON.parse(text) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ['code', 'error', 'request_id'], text);
  assert.ok(ERROR_CODES.includes(body.code as ErrorCode), `${String(body.code)} is not a code of the closed list`);
  assert.equal(body.code, expected.code);
  assert.equal(ERROR_STATUS[body.code as ErrorCode], status, 'the status is the code table’s');
  assert.equal(typeof body.error, 'string');
  assert.ok((body.error as string).length < 300, `a short message: ${text.slice(0, 400)}`);
  assert.match(String(body.request_id), /^req_/);
  assert.equal(headers['x-request-id'], body.request_id);
}

/** One request written as raw bytes on its own connection; the answer as the server wrote it. */
function rawRequest(port: number, bytes: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => {
      out += d;
    });
    socket.on('error', () => {}); // the server closes the connection after its answer
    socket.on('close', () => {
      const [head = '', body = ''] = out.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const status = Number(statusLine.split(' ')[1]);
      if (!status) return reject(new Error(`no HTTP answer: ${JSON.stringify(out.slice(0, 200))}`));
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status, headers, body });
    });
  });
}

describe(`framework and HTTP-parser errors (${DB_KIND})`, () => {
  let t: ListeningApp;
  let port: number;
  before(async () => {
    t = await createListeningApp();
    port = Number(new URL(t.baseUrl).port);
  });
  after(() => t.close());

  for (const path of ['/api/models/%ZZ', '/api/models/%ED%A0%80', '/api/models/%', '/api/account/keys/%E0%A4%A']) {
    test(`a path that is not valid percent-encoding (${path}) is 400 request_error`, async () => {
      const res = await fetch(t.baseUrl + path, { method: path.includes('keys') ? 'DELETE' : 'GET' });
      assertServiceError(res.status, Object.fromEntries(res.headers), await res.text(), { status: 400, code: 'request_error' });
    });
  }

  test('a request id sent by the client is kept on a router refusal', async () => {
    const res = await fetch(`${t.baseUrl}/api/models/%ZZ`, { headers: { 'x-request-id': 'client-id-1' } });
    const body = (await res.json()) as { request_id: string };
    assert.equal(body.request_id, 'client-id-1');
    assert.equal(res.headers.get('x-request-id'), 'client-id-1');
  });

  test('a path parameter over 100 characters is 414 uri_too_long, without the path echoed', async () => {
    const long = 'a'.repeat(5000);
    const res = await fetch(`${t.baseUrl}/api/models/${long}`);
    const text = await res.text();
    assertServiceError(res.status, Object.fromEntries(res.headers), text, { status: 414, code: 'uri_too_long' });
    assert.ok(!text.includes('a'.repeat(200)));
  });

  const malformed: [string, string][] = [
    ['Content-Length that is not a number', 'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}'],
    [
      'Content-Length and Transfer-Encoding together',
      'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ],
    ['two Content-Length headers', 'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab'],
    ['a header name with a space', 'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n'],
  ];
  for (const [what, bytes] of malformed) {
    test(`${what}: 400 request_error on the raw connection`, async () => {
      const r = await rawRequest(port, bytes);
      assertServiceError(r.status, r.headers, r.body, { status: 400, code: 'request_error' });
    });
  }

  test('headers over the size limit: 431 headers_too_large, nothing of them echoed', async () => {
    const r = await rawRequest(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`);
    assertServiceError(r.status, r.headers, r.body, { status: 431, code: 'headers_too_large' });
    assert.ok(!r.body.includes('bbbb'));
  });

  test('the service still answers after those refusals', async () => {
    const res = await fetch(`${t.baseUrl}/healthz`);
    assert.equal(res.status, 200);
  });
});
