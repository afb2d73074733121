/**
 * A scheduler replica in its own process (the kill -9 test): opens the database given as JSON in
 * argv[2], runs the scheduler loop with the real clock, prints "ready". Never exits by itself.
 */
import { loadConfig } from '../../src/config.ts';
import { openDatabase, type DatabaseTarget } from '../../src/db/index.ts';
import { createDeps } from '../../src/deps.ts';
import { createScheduler } from '../../src/schedules/runner.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';

const target = JSON.parse(process.argv[2] ?? '{}') as DatabaseTarget;
const config = loadConfig({
  DATA_DIR: process.argv[3] ?? '/tmp',
  LOG_LEVEL: 'silent',
  PAYMENTS_PROVIDER: 'local',
  OUTBOUND_ALLOW_HTTP: 'true',
  OUTBOUND_ALLOW_LOOPBACK: 'true',
  SCHEDULER: 'off',
  SCHEDULER_INTERVAL_MS: '100',
  SCHEDULE_LEASE_MS: '2000',
});
const database = await openDatabase(target);
const deps = await createDeps(config, { database, engine: new FakeEngine(), logger: false, backgroundJobs: false });
createScheduler(deps, { log: (m, e) => process.stderr.write(`${m}: ${String(e)}\n`) }).start();
process.stdout.write('ready\n');
setInterval(() => {}, 1 << 30);
