import { ConfigError, loadConfig } from './config.ts';
import { createDeps, localEngine } from './deps.ts';
import { buildInferenceNode } from './inference-node/app.ts';
import { buildApp } from './app.ts';
import { paymentsWarning } from './billing/providers/index.ts';
import { logStreamFor } from './http/log-format.ts';
import { capYoungGeneration } from './heap-flags.ts';

async function main(): Promise<void> {
  // Before any worker thread starts (src/heap-flags.ts).
  capYoungGeneration();
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
    await listenOrExplain(() => node.listen({ port: config.port, host: config.host }), config.port);
    process.stdout.write(`TSFM inference node on http://${config.host}:${config.port}/v2 (Open Inference Protocol v2)\n`);
    return;
  }
  const paymentsNote = paymentsWarning(config);
  if (paymentsNote) process.stderr.write(`warning: ${paymentsNote}\n`);
  const deps = await createDeps(config);
  const logStream = logStreamFor(config.logFormat, process.stdout.isTTY === true);
  if (logStream) deps.logStream = logStream;
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
  await listenOrExplain(() => app.listen({ port: config.port, host: config.host }), config.port);
  const base = config.publicBaseUrl;
  process.stdout.write(
    [
      `TSFM is running on ${base}`,
      `  app and playground  ${base}/`,
      `  API reference       ${base}/docs  (errors: ${base}/docs/errors, which model: ${base}/docs/models)`,
      `  OpenAPI document    ${base}/openapi.json`,
      `  MCP endpoint        ${base}/mcp`,
      `  health              ${base}/healthz`,
      'Next: register and create an API key (README, "Walk-through"), or open the app in a browser.',
      '',
    ].join('\n'),
  );
}

/** A busy port or a refused address is one line saying what to do, not a stack trace. */
async function listenOrExplain(listen: () => Promise<unknown>, port: number): Promise<void> {
  try {
    await listen();
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'EADDRINUSE') {
      process.stderr.write(`Port ${port} is already in use (another TSFM or another server?): stop it, or start with PORT=<another port> npm start\n`);
      process.exit(1);
    }
    if (code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      process.stderr.write(`Cannot listen on port ${port} (${code}): choose another PORT, or HOST=127.0.0.1\n`);
      process.exit(1);
    }
    throw err;
  }
}

void main();
