/**
 * A real server process for the crash test: the whole app on its SQLite file with the real
 * worker-pool engine (createDeps wires it as in production). Prints its port.
 */
import { loadConfig } from '../../src/config.ts';
import { createDeps } from '../../src/deps.ts';
import { buildApp } from '../../src/app.ts';

const config = loadConfig();
const deps = await createDeps(config, { logger: false });
const app = await buildApp(deps);
await app.listen({ port: config.port, host: '127.0.0.1' });
const addr = app.server.address();
process.stdout.write(`listening ${typeof addr === 'object' && addr ? addr.port : config.port}\n`);
