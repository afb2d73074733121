import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  AuthenticationError,
  InvalidRequestError,
  NotFoundError,
  RateLimitError,
  ServiceError,
  TsfmClient,
  TsfmError,
  type ForecastInput,
} from '../../sdk/src/index.ts';
import { createKey, registerUser } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

/** Series i ends with the value i, so the test double's echo-last forecast says which series it was. */
function series(n: number): ForecastInput[] {
  return Array.from({ length: n }, (_, i) => ({ target: [1, 2, 3, i], start: '2024-01-01', item_id: `s${i}` }));
}

describe('TypeScript SDK against the real server', () => {
  let t: ListeningApp;
  let client: TsfmClient;
  before(async () => {
    t = await createListeningApp();
    const user = await registerUser(t);
    const key = await createKey(t, user, 'sdk');
    client = new TsfmClient({ baseUrl: t.baseUrl, apiKey: key.key });
  });
  after(async () => t.close());

  test('forecast returns the typed response', async () => {
    const r = await client.forecast({
      model: 'echo-last',
      inputs: series(2),
      parameters: { prediction_length: 3, frequency: 'D', quantile_levels: [0.1, 0.9] },
    });
    assert.equal(r.model, 'echo-last');
    assert.equal(r.outputs.length, 2);
    assert.deepEqual(r.outputs[1]?.mean, [[1], [1], [1]]);
    assert.deepEqual(r.outputs[0]?.timestamps?.length, 3);
    assert.deepEqual(r.quantile_levels, [0.1, 0.9]);
  });

  test('forecastMany splits 150 series into calls of 64, keeps their order and reports progress', async () => {
    const progress: number[] = [];
    const r = await client.forecastMany(
      { model: 'echo-last', inputs: series(150), parameters: { prediction_length: 2, frequency: 'D' } },
      { concurrency: 3, onProgress: (done, total) => progress.push(done / total) },
    );
    assert.equal(r.ids.length, 3);
    assert.equal(new Set(r.ids).size, 3);
    assert.equal(r.outputs.length, 150);
    for (const [i, o] of r.outputs.entries()) assert.deepEqual(o.mean, [[i], [i]], `series ${i} in place`);
    assert.equal(progress[0], 0);
    assert.equal(progress.at(-1), 1);
    assert.equal(progress.length, 4);
    for (let i = 1; i < progress.length; i++) assert.ok((progress[i] ?? 0) > (progress[i - 1] ?? 0));
    const fromServer = await client.usage();
    assert.equal(fromServer.totals.requests, 1 + 3, 'one usage event per call');
  });

  test('forecastBatch runs 70 requests as two batch calls, items in order, errors per item', async () => {
    const requests = series(70).map((input, i) => ({ model: i === 5 ? 'no-such-model' : 'echo-last', inputs: [input], parameters: { prediction_length: 1 } }));
    const items = await client.forecastBatch(requests);
    assert.equal(items.length, 70);
    items.forEach((item, i) => {
      if (i === 5) {
        assert.equal(item.ok, false);
        assert.equal(item.error?.code, 'model_not_found');
      } else {
        assert.equal(item.ok, true);
        assert.deepEqual(item.result?.outputs[0]?.mean, [[i]]);
      }
    });
  });

  test('chunkSize above 64 is refused before any call', async () => {
    await assert.rejects(
      client.forecastMany({ model: 'echo-last', inputs: series(3) }, { chunkSize: 65 }),
      (e: unknown) => e instanceof TsfmError && e.code === 'invalid_input',
    );
  });

  test('errors are typed and carry the API code', async () => {
    await assert.rejects(client.forecast({ model: 'no-such-model', inputs: series(1) }), (e: unknown) => {
      assert.ok(e instanceof NotFoundError);
      assert.equal(e.status, 404);
      assert.equal(e.code, 'model_not_found');
      assert.ok(e.requestId);
      return true;
    });
    await assert.rejects(client.forecast({ model: 'echo-last', inputs: series(1), parameters: { prediction_length: 0 } }), (e: unknown) => {
      assert.ok(e instanceof InvalidRequestError);
      assert.equal(e.code, 'validation_error');
      assert.deepEqual(e.detail[0]?.loc, ['body', 'parameters', 'prediction_length']);
      assert.match(e.message, /parameters\.prediction_length/);
      return true;
    });
    // No credential at all: the server answers 400 missing_credential, still an AuthenticationError.
    await assert.rejects(
      new TsfmClient({ baseUrl: t.baseUrl }).usage(),
      (e: unknown) => e instanceof AuthenticationError && e.status === 400 && e.code === 'missing_credential',
    );
    const bad = new TsfmClient({ baseUrl: t.baseUrl, apiKey: 'tsfm_not_a_real_key' });
    await assert.rejects(
      bad.models().then(() => bad.usage()),
      (e: unknown) => e instanceof AuthenticationError && e.code === 'invalid_credential',
    );
  });

  test('models, whoami and key management through a session', async () => {
    const models = await client.models();
    assert.ok(models.some((m) => m.id === 'echo-last'));
    assert.equal((await client.model('echo-last')).id, 'echo-last');
    const me = await client.whoami();
    assert.equal(me.auth_type, 'api_key');

    const user = await registerUser(t);
    const session = await TsfmClient.login(user.email, user.password, { baseUrl: t.baseUrl });
    const owner = new TsfmClient({ baseUrl: t.baseUrl, apiKey: session.token });
    const created = await owner.keys.create('from the sdk');
    assert.match(created.key, /^tsfm_/);
    assert.ok((await owner.keys.list()).some((k) => k.id === created.id));
    const viaKey = new TsfmClient({ baseUrl: t.baseUrl, apiKey: created.key });
    assert.equal((await viaKey.whoami()).auth_type, 'api_key');
    // Limits at creation and by update; a default key may not manage keys (403, a TsfmError).
    const limited = await owner.keys.create('limited', { allowed_models: ['echo-*'], rate_limit_per_minute: 10 });
    assert.deepEqual(limited.allowed_models, ['echo-*']);
    const changed = await owner.keys.update(limited.id, { label: 'renamed', rate_limit_per_minute: null });
    assert.equal(changed.label, 'renamed');
    assert.equal(changed.rate_limit_per_minute, null);
    await assert.rejects(viaKey.keys.create('escalate'), (e: unknown) => e instanceof TsfmError && e.status === 403 && /keys:write/.test(e.message));
    await owner.keys.revoke(created.id);
    await assert.rejects(viaKey.whoami(), AuthenticationError);
    await assert.rejects(
      TsfmClient.login(user.email, 'wrong password', { baseUrl: t.baseUrl }),
      (e: unknown) => e instanceof AuthenticationError && e.code === 'invalid_credentials',
    );
  });
});

describe('SDK retries and timeouts (a scripted server)', () => {
  let server: Server;
  let base: string;
  let script: { status: number; headers?: Record<string, string>; body: unknown }[] = [];
  let attempts = 0;
  const bodies: string[] = [];
  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        attempts += 1;
        bodies.push(body);
        const step = script.shift();
        if (!step) return; // never answers: the client's timeout fires
        res.writeHead(step.status, { 'content-type': 'application/json', 'x-request-id': `req-${attempts}`, ...step.headers });
        res.end(JSON.stringify(step.body));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const reset = (s: typeof script) => {
    script = s;
    attempts = 0;
    bodies.length = 0;
  };
  const limited = { status: 429, headers: { 'retry-after': '0' }, body: { error: 'slow down', code: 'rate_limit_exceeded' } };
  const busy = { status: 503, headers: { 'retry-after': '0' }, body: { error: 'queue full', code: 'upstream_unavailable' } };

  test('429 and 503 are retried (honouring retry-after) and the body is resent each time', async () => {
    reset([limited, busy, { status: 200, body: { models: [] } }]);
    const c = new TsfmClient({ baseUrl: base, apiKey: 'k' });
    assert.deepEqual(await c.models(), []);
    assert.equal(attempts, 3);
    reset([limited, { status: 200, body: { keys: [] } }]);
    await c.keys.create('x').catch(() => undefined);
    assert.equal(attempts, 2);
    assert.deepEqual(bodies, ['{"label":"x"}', '{"label":"x"}']);
  });

  test('when retries run out the last answer becomes a typed error with retryAfter', async () => {
    reset([limited, limited, limited]);
    const c = new TsfmClient({ baseUrl: base, apiKey: 'k', maxRetries: 2 });
    await assert.rejects(c.models(), (e: unknown) => {
      assert.ok(e instanceof RateLimitError);
      assert.equal(e.code, 'rate_limit_exceeded');
      assert.equal(e.retryAfter, 0);
      assert.equal(e.requestId, 'req-3');
      return true;
    });
    assert.equal(attempts, 3);
  });

  test('a retry-after longer than the client accepts fails at once', async () => {
    reset([{ ...limited, headers: { 'retry-after': '3600' } }]);
    const c = new TsfmClient({ baseUrl: base, apiKey: 'k', maxRetryDelayMs: 5000 });
    await assert.rejects(c.models(), (e: unknown) => e instanceof RateLimitError && e.retryAfter === 3600);
    assert.equal(attempts, 1);
  });

  test('other errors are not retried', async () => {
    reset([{ status: 500, body: { error: 'boom', code: 'internal_error' } }]);
    const c = new TsfmClient({ baseUrl: base, apiKey: 'k' });
    await assert.rejects(c.models(), (e: unknown) => e instanceof ServiceError && e.code === 'internal_error');
    assert.equal(attempts, 1);
  });

  test('a timeout is a ServiceError with code timeout and is not retried', async () => {
    reset([]);
    const c = new TsfmClient({ baseUrl: base, apiKey: 'k', timeoutMs: 300 });
    await assert.rejects(c.models(), (e: unknown) => e instanceof ServiceError && e.code === 'timeout' && e.status === 0);
    assert.equal(attempts, 1);
  });

  test('an unreachable server is a ServiceError with code network_error', async () => {
    const c = new TsfmClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k', maxRetries: 1 });
    await assert.rejects(c.models(), (e: unknown) => e instanceof ServiceError && e.code === 'network_error' && e.status === 0);
  });

  test('a base URL without http:// or https:// is a TsfmError at construction; blanks and trailing slashes are trimmed', async () => {
    for (const bad of ['127.0.0.1:8105', 'localhost:8105', 'ftp://example.com', 'http://', '']) {
      assert.throws(
        () => new TsfmClient({ baseUrl: bad }),
        (e: unknown) => e instanceof InvalidRequestError && e.code === 'invalid_input' && /baseUrl .* e\.g\. http/.test(e.message),
        bad,
      );
    }
    assert.throws(() => new TsfmClient({ baseUrl: '127.0.0.1:8105' }), /must start with http:\/\/ or https:\/\/, e\.g\. http:\/\/127\.0\.0\.1:8105/);
    reset([{ status: 200, body: { models: [] } }]);
    const c = new TsfmClient({ baseUrl: ` ${base}/ \n` });
    assert.equal(c.baseUrl, base);
    assert.deepEqual(await c.models(), []);
  });

  test('a credential error is an AuthenticationError whatever its status (missing_credential is a 400)', async () => {
    reset([
      { status: 400, body: { error: 'A credential is required', code: 'missing_credential' } },
      { status: 401, body: { error: 'Unknown key', code: 'invalid_credential' } },
      { status: 400, body: { error: 'bad path', code: 'request_error' } },
    ]);
    const c = new TsfmClient({ baseUrl: base });
    await assert.rejects(c.usage(), (e: unknown) => e instanceof AuthenticationError && e.status === 400 && e.code === 'missing_credential');
    await assert.rejects(c.usage(), (e: unknown) => e instanceof AuthenticationError && e.code === 'invalid_credential');
    await assert.rejects(c.usage(), (e: unknown) => e instanceof InvalidRequestError && !(e instanceof AuthenticationError));
  });
});
