/**
 * A real server process for the crash test: the whole app on its SQLite file, with the test
 * double of the engine (a few ms per call, so kills land mid-inference). Prints its port.
 */
import { loadConfig } from '../../src/config.ts';
import { createDeps } from '../../src/deps.ts';
import { buildApp } from '../../src/http/app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';

const engine = new FakeEngine();
engine.delayMs = Number(process.env.FAKE_ENGINE_DELAY_MS ?? 5);
const config = loadConfig();
const deps = await createDeps(config, { engine, logger: false });
const app = await buildApp(deps);
await app.listen({ port: config.port, host: '127.0.0.1' });
const addr = app.server.address();
process.stdout.write(`listening ${typeof addr === 'object' && addr ? addr.port : config.port}\n`);
