import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import type { Socket } from 'node:net';
import { Agent, buildConnector, request } from 'undici';
import type { OutboundConfig } from '../config.ts';
import { ipLiteral, refusedAddress } from './address.ts';

/**
 * The one way this service fetches a URL a user gave it (series sources, schedule sources,
 * webhook callbacks). It cannot be pointed at the service's own network (ADR 0020):
 * - https only unless OUTBOUND_ALLOW_HTTP; no credentials in the URL;
 * - the DNS answer is checked inside the connection's own lookup, so the address checked is the
 *   address connected to (a name that resolves to a public address for a pre-check and to
 *   10.0.0.1 a moment later — DNS rebinding — is refused at connect time), and the connected
 *   socket's remote address is checked again before a byte is sent;
 * - redirects are followed by hand, each hop re-checked from the start; POSTs never follow;
 * - response size and total time are capped.
 */
export class OutboundError extends Error {
  /** `refused`: the target is not allowed (never contacted); `failed`: network or HTTP failure; `too_large`; `timeout`. */
  readonly kind: 'refused' | 'failed' | 'too_large' | 'timeout';
  constructor(kind: OutboundError['kind'], message: string) {
    super(message);
    this.name = 'OutboundError';
    this.kind = kind;
  }
}

export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export interface OutboundResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The URL that answered (after redirects). */
  url: string;
}

export interface OutboundRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Accept at most this many bytes of response (default: OUTBOUND_MAX_BYTES). */
  maxBytes?: number;
  /** Content types accepted (prefix match); others are refused before the body is read. */
  accept?: readonly string[];
  /** The body is not wanted (a webhook's answer): at most `maxBytes` of it are read, the rest is dropped, never an error. */
  discardBody?: boolean;
}

export interface Fetcher {
  fetch(url: string, req?: OutboundRequest): Promise<OutboundResponse>;
  /** Checks a URL's shape (scheme, credentials, IP literal) without any network traffic. */
  checkUrl(url: string): URL;
  close(): Promise<void>;
}

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export function createFetcher(config: OutboundConfig, resolver: Resolver = systemResolver): Fetcher {
  const policy = { allowLoopback: config.allowLoopback };

  // The lookup every socket of this agent uses: resolve, refuse the whole answer if any address is
  // refused (an attacker's name may mix a public and a private address), hand back what was checked.
  const lookup = (hostname: string, options: { all?: boolean; family?: number }, cb: (...args: unknown[]) => void): void => {
    resolver(hostname).then(
      (addresses) => {
        const usable = addresses.filter((a) => !options.family || a.family === options.family);
        if (usable.length === 0) return cb(Object.assign(new Error(`${hostname} did not resolve`), { code: 'ENOTFOUND' }));
        for (const a of usable) {
          const why = refusedAddress(a.address, policy);
          if (why) return cb(new OutboundError('refused', `${hostname} resolves to ${why}`));
        }
        if (options.all) cb(null, usable);
        else cb(null, usable[0]?.address, usable[0]?.family);
      },
      (err: unknown) => cb(err),
    );
  };
  const base = buildConnector({ lookup, timeout: config.timeoutMs } as buildConnector.BuildOptions);
  const dispatcher = new Agent({
    connect: (opts, cb) =>
      base(opts, (err, socket) => {
        if (err || !socket) return cb(err ?? new Error('no socket'), null);
        // The address actually connected to (an IP literal host skips lookup; this catches it too).
        const why = refusedAddress((socket as Socket).remoteAddress ?? '', policy);
        if (why) {
          socket.destroy();
          return cb(new OutboundError('refused', `connection to ${why}`), null);
        }
        cb(null, socket);
      }),
    headersTimeout: config.timeoutMs,
    bodyTimeout: config.timeoutMs,
    maxResponseSize: config.maxBytes,
  });

  const checkUrl = (raw: string): URL => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundError('refused', `'${raw.slice(0, 200)}' is not a URL`);
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && config.allowHttp)) {
      throw new OutboundError('refused', `only https:// URLs are fetched${config.allowHttp ? ' (or http://)' : ''}; got ${url.protocol}`);
    }
    if (url.username || url.password) throw new OutboundError('refused', 'URLs with credentials (user:password@) are not fetched');
    // Port 0 is no port: nothing can be connected to there.
    if (url.port === '0') throw new OutboundError('refused', 'port 0 is not a port a URL can be fetched from');
    const literal = ipLiteral(url.hostname);
    if (literal) {
      const why = refusedAddress(literal, policy);
      if (why) throw new OutboundError('refused', `${url.hostname}: ${why}`);
    } else if (/^localhost$|\.localhost$|\.internal$|\.local$/i.test(url.hostname) && !config.allowLoopback) {
      throw new OutboundError('refused', `${url.hostname} is a local name, which this service does not connect to`);
    }
    return url;
  };

  return {
    checkUrl,
    async fetch(raw, req = {}) {
      const method = req.method ?? 'GET';
      const maxBytes = Math.min(req.maxBytes ?? config.maxBytes, config.maxBytes);
      const signal = AbortSignal.timeout(config.timeoutMs);
      let url = checkUrl(raw);
      for (let hop = 0; ; hop++) {
        let res: Awaited<ReturnType<typeof request>>;
        try {
          res = await request(url, {
            dispatcher,
            method,
            headers: { 'user-agent': 'tsfm-service', ...req.headers },
            ...(req.body !== undefined ? { body: req.body } : {}),
            signal,
          });
        } catch (err) {
          throw asOutboundError(err, url, signal);
        }
        const location = res.headers.location;
        if (res.statusCode >= 300 && res.statusCode < 400 && typeof location === 'string' && method === 'GET') {
          await res.body.dump().catch(() => {});
          if (hop >= config.maxRedirects) throw new OutboundError('failed', `more than ${config.maxRedirects} redirects from ${raw}`);
          // Every hop is checked again, scheme and address alike.
          url = checkUrl(new URL(location, url).toString());
          continue;
        }
        const type = String(res.headers['content-type'] ?? '');
        if (req.accept && type !== '' && res.statusCode < 300 && !req.accept.some((a) => type.startsWith(a))) {
          await res.body.dump().catch(() => {});
          throw new OutboundError('failed', `${url.host} answered with content type '${type.slice(0, 100)}'; expected ${req.accept.join(', ')}`);
        }
        const declared = Number(res.headers['content-length']);
        if (req.discardBody) {
          await res.body.dump({ limit: maxBytes }).catch(() => {});
          return { status: res.statusCode, headers: res.headers, body: Buffer.alloc(0), url: url.toString() };
        }
        if (Number.isFinite(declared) && declared > maxBytes) {
          await res.body.dump().catch(() => {});
          throw new OutboundError('too_large', `${url.host} sent ${declared} bytes; at most ${maxBytes} are accepted`);
        }
        const chunks: Buffer[] = [];
        let size = 0;
        try {
          for await (const chunk of res.body) {
            size += (chunk as Buffer).length;
            if (size > maxBytes) {
              res.body.destroy();
              throw new OutboundError('too_large', `${url.host} sent more than ${maxBytes} bytes`);
            }
            chunks.push(chunk as Buffer);
          }
        } catch (err) {
          throw asOutboundError(err, url, signal);
        }
        return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), url: url.toString() };
      }
    },
    close: () => dispatcher.close(),
  };
}

function asOutboundError(err: unknown, url: URL, signal: AbortSignal): OutboundError {
  if (err instanceof OutboundError) return err;
  const cause = (err as { cause?: unknown })?.cause;
  if (cause instanceof OutboundError) return cause;
  if (signal.aborted) return new OutboundError('timeout', `${url.host} did not answer in time`);
  const code = (err as { code?: string })?.code;
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') return new OutboundError('too_large', `${url.host} sent too many bytes`);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new OutboundError('timeout', `${url.host} did not answer in time`);
  }
  return new OutboundError('failed', `could not fetch from ${url.host}: ${(err as Error)?.message ?? String(err)}`.slice(0, 300));
}
