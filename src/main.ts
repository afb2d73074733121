import { ConfigError, loadConfig } from './config.ts';
import { createDeps } from './deps.ts';
import { buildApp } from './http/app.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const deps = await createDeps(config);
  const app = await buildApp(deps);
  app.addHook('onClose', async () => deps.close());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      app.log.info({ signal }, 'shutting down');
      void app.close().then(() => process.exit(0));
    });
  }
  await app.listen({ port: config.port, host: config.host });
}

void main();
