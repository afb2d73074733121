import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import { createKey, registerUser } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

const BIN = join(import.meta.dirname, '..', '..', 'sdk', 'bin', 'tsfm.js');

function run(args: string[], env: Record<string, string>, stdin: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

describe('tsfm anomalies', () => {
  let t: ListeningApp;
  let env: Record<string, string>;
  before(async () => {
    t = await createListeningApp();
    const user = await registerUser(t);
    env = { TSFM_BASE_URL: t.baseUrl, TSFM_API_KEY: (await createKey(t, user, 'cli')).key, TSFM_CONFIG: '/nonexistent/tsfm.json' };
  });
  after(() => t.close());

  test('CSV in, one row per scored point out; --only-anomalies keeps the flagged ones with their ds', async () => {
    const days = Array.from({ length: 20 }, (_, i) => `2024-01-${String(i + 1).padStart(2, '0')},${i === 15 ? 90 : 10 + (i % 3)}`);
    const csv = `ds,y\n${days.join('\n')}\n`;
    const all = await run(['anomalies', '-', '--method', 'zscore', '--window', '8', '--sensitivity', '4'], env, csv);
    assert.equal(all.code, 0, all.stderr);
    const rows = parse(all.stdout, { columns: true }) as Record<string, string>[];
    assert.equal(rows.length, 20);
    assert.match(all.stderr, /^(frequency inferred from ds: D .*\n)?1 anomaly, \d+ credits/);
    const only = await run(['anomalies', '-', '--method', 'zscore', '--window', '8', '--sensitivity', '4', '--only-anomalies', '--format', 'json'], env, csv);
    assert.equal(only.code, 0, only.stderr);
    const flagged = JSON.parse(only.stdout) as { ds: string; value: number; anomaly: boolean }[];
    assert.deepEqual(
      flagged.map((r) => [r.ds, r.value, r.anomaly]),
      [['2024-01-16', 90, true]],
    );
  });
});
