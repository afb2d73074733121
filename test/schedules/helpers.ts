import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Delivery {
  headers: IncomingMessage['headers'];
  body: string;
}

/**
 * A local receiver (127.0.0.1, port 0) for webhook deliveries and a CSV source: records what it
 * gets; `answer` picks the status of the next deliveries; `hold` keeps a delivery hanging.
 */
export class LocalEndpoints {
  readonly deliveries: Delivery[] = [];
  sourceHits = 0;
  answer = 200;
  hold = false;
  csv = 'ds,y\n2024-01-01,1\n2024-01-02,2\n2024-01-03,3\n';
  private server: Server | null = null;
  base = '';
  onDelivery: (() => void) | null = null;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/source.csv') {
        this.sourceHits += 1;
        res.writeHead(200, { 'content-type': 'text/csv' });
        res.end(this.csv);
        return;
      }
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => {
        body += c;
      });
      req.on('end', () => {
        this.deliveries.push({ headers: req.headers, body });
        this.onDelivery?.();
        if (this.hold) return; // never answers (a replica dies meanwhile)
        res.writeHead(this.answer, { 'content-type': 'text/plain' });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()));
  }
}

/** A clock the test moves by hand (starts at the real time: webhook timestamps stay verifiable). */
/**
 * A clock the test moves by hand. It starts half-way through the current minute (near real time, so
 * webhook timestamps verify), never at a random phase: a test that advances it by a minute plus a few
 * seconds must cross the same number of cron instants on every run.
 */
export class ManualClock {
  t = Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

export const LOOPBACK_ENV = { OUTBOUND_ALLOW_HTTP: 'true', OUTBOUND_ALLOW_LOOPBACK: 'true', SCHEDULER: 'off' };
