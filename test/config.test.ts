import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';

describe('configuration', () => {
  test('defaults', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8000);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.dataDir, './data');
    assert.deepEqual(c.database, { kind: 'sqlite', path: './data/tsfm.sqlite' });
    assert.equal(c.publicBaseUrl, 'http://127.0.0.1:8000');
    assert.equal(c.mail.outboxDir, './data/outbox');
    assert.equal(c.sessionTtlMs, 30 * 24 * 3600 * 1000);
    // Memory goes back after large requests once quiet (ADR 0010, sixth pass); MCP bodies are smaller than REST's.
    assert.equal(c.memory.idleCompactGrowthBytes, 64 * 1024 * 1024);
    assert.equal(c.mcpBodyLimitBytes, 2 * 1024 * 1024);
    assert.equal(loadConfig({ BODY_LIMIT_BYTES: '100000' }).mcpBodyLimitBytes, 100_000, 'never above the REST limit');
  });

  test('DATABASE_URL switches to PostgreSQL; ADMIN_EMAILS are normalised', () => {
    const c = loadConfig({ DATABASE_URL: 'postgres://u@h/db', ADMIN_EMAILS: ' A@x.com, b@y.org ,' });
    assert.deepEqual(c.database, { kind: 'postgres', url: 'postgres://u@h/db', migrationUrl: null, credentialCacheMs: 30_000 });
    assert.equal(c.inference.workerNice, 10);
    const off = loadConfig({ DATABASE_URL: 'postgres://u@h/db', CREDENTIAL_CACHE_SECONDS: '0' });
    assert.equal(off.database.kind === 'postgres' && off.database.credentialCacheMs, 0);
    assert.deepEqual([...c.adminEmails], ['a@x.com', 'b@y.org']);
  });

  test('a bad value stops start-up with a message naming the variable', () => {
    const cases: [Record<string, string>, string][] = [
      [{ PORT: 'eighty' }, 'PORT'],
      [{ PORT: '70000' }, 'PORT'],
      [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
      [{ PUBLIC_BASE_URL: 'not a url' }, 'PUBLIC_BASE_URL'],
      [{ SMTP_URL: 'http://mail' }, 'SMTP_URL'],
      [{ SESSION_TTL_DAYS: '0' }, 'SESSION_TTL_DAYS'],
      [{ CAPTCHA_VERIFIER: 'hcaptcha' }, 'CAPTCHA_SECRET'],
      [{ CREDENTIAL_CACHE_SECONDS: '-1' }, 'CREDENTIAL_CACHE_SECONDS'],
      [{ INFERENCE_WORKER_NICE: '20' }, 'INFERENCE_WORKER_NICE'],
      [{ INFERENCE_WORKER_NICE: 'low' }, 'INFERENCE_WORKER_NICE'],
    ];
    for (const [env, name] of cases) {
      assert.throws(
        () => loadConfig(env),
        (e: unknown) => e instanceof ConfigError && e.message.includes(name),
        name,
      );
    }
  });
});
