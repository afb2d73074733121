/**
 * POST /v1/series/ingest on about the largest accepted paste (140,000 rows, 5 MB of CSV, 70 hourly
 * series): wall time per call and the longest event-loop stall seen by a 2 ms timer meanwhile.
 * In-process (Fastify inject, SQLite); `npm run bench:ingest`.
 */
import { call, createTestApp, registerUser } from '../test/helpers/app.ts';

const t = await createTestApp({ env: { RATE_LIMIT_FREE_PER_MINUTE: '100000' } });
const u = await registerUser(t);
const rows: string[] = ['unique_id,ds,y'];
const perSeries = 2000;
for (let s = 0; s < 70; s++) {
  const start = Date.UTC(2020, 0, 1);
  for (let i = 0; i < perSeries; i++) rows.push(`s${s},${new Date(start + i * 3_600_000).toISOString()},${(Math.sin(i / 10) * 100).toFixed(3)}`);
}
const text = `${rows.join('\n')}\n`;
console.log(`rows ${rows.length - 1}, bytes ${Buffer.byteLength(text)}`);
for (let k = 0; k < 3; k++) {
  let last = performance.now();
  let worst = 0;
  const iv = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 2);
    last = now;
  }, 2);
  const t0 = performance.now();
  const r = await call(t, 'POST', '/v1/series/ingest', { token: u.token, body: { text } });
  const ms = performance.now() - t0;
  clearInterval(iv);
  console.log(`status ${r.status} series ${r.body?.inputs?.length} ms ${ms.toFixed(0)} longest event-loop stall ms ${worst.toFixed(0)}`);
}
await t.close();
