import { createServer } from 'node:net';
import type { Principal } from '../../src/accounts/credentials.ts';
import type { ChargeRequest, Meter } from '../../src/forecasting/metering.ts';
import { createTestApp, type TestApp, type TestAppOptions } from './app.ts';

/** A free loopback port (the OS picks it; released at once so the app can bind it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface ListeningApp extends TestApp {
  baseUrl: string;
}

/** The app listening on 127.0.0.1 with PUBLIC_BASE_URL set to where it really is (for real clients). */
export async function createListeningApp(opts: TestAppOptions = {}): Promise<ListeningApp> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const t = await createTestApp({ ...opts, env: { PUBLIC_BASE_URL: baseUrl, ...opts.env } });
  await t.app.listen({ port, host: '127.0.0.1' });
  return { ...t, baseUrl };
}

/** A meter that charges nothing and remembers every committed charge (the usage events of a test). */
export class RecordingMeter implements Meter {
  readonly committed: (Omit<ChargeRequest, 'principal'> & { userId: string; kind: Principal['kind'] })[] = [];
  async checkModelAccess(): Promise<void> {}
  async hold(req: ChargeRequest) {
    return {
      commit: async () => {
        this.committed.push({
          requestId: req.requestId,
          source: req.source,
          model: req.model,
          usage: req.usage,
          credits: req.credits,
          userId: req.principal.user.id,
          kind: req.principal.kind,
        });
        return undefined;
      },
      release: async () => {},
    };
  }
}
