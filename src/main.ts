import { ConfigError, loadConfig } from './config.ts';
import { createDeps, localEngine } from './deps.ts';
import { buildInferenceNode } from './inference-node/app.ts';
import { buildApp } from './app.ts';

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  if (config.role === 'inference') {
    const engine = localEngine(config);
    await engine.refresh?.();
    const node = await buildInferenceNode({
      engine,
      token: config.remote.token,
      bodyLimitBytes: config.bodyLimitBytes,
      logLevel: config.logLevel,
    });
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void node.close().then(() => process.exit(0)));
    await node.listen({ port: config.port, host: config.host });
    return;
  }
  const deps = await createDeps(config);
  // Until Redis answers, limits are counted per process (the insurance limiter); wait briefly for it.
  if (!(await deps.rateLimiter.ready(5000))) process.stderr.write('warning: REDIS_URL did not answer within 5 s; rate limits are per process until it does\n');
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
