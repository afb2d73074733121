import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** The error a body arriving too slowly is refused with (answered by the client error handler, src/http/framework-errors.ts). */
export const BODY_TOO_SLOW = 'ERR_TSFM_BODY_TOO_SLOW';

/**
 * Cuts a request whose body brings fewer than `minBytesPerSecond` over a window of `windowMs`
 * (a body that stops midway, or one trickled a byte at a time, held its buffered part in memory
 * until the client left: 100 unfinished 9 MB bodies were 900 MB of RSS). Node's `requestTimeout`
 * bounds the whole request; this frees a stalled one sooner. Progress is read from the socket's
 * byte count, so the body stream is left as it is. `refuse` answers 408 and closes the connection.
 */
export function watchBodyRate(
  req: FastifyRequest,
  reply: FastifyReply,
  opts: { minBytesPerSecond: number; windowMs: number },
  refuse: (socket: Socket) => void,
): void {
  const socket = req.raw.socket;
  if (!socket || req.raw.complete || opts.minBytesPerSecond <= 0) return;
  const minBytes = Math.ceil((opts.minBytesPerSecond * opts.windowMs) / 1000);
  let last = socket.bytesRead;
  const stop = () => {
    clearInterval(timer);
    req.raw.off('end', stop);
    reply.raw.off('close', stop);
  };
  const timer = setInterval(() => {
    if (req.raw.complete || socket.destroyed) return stop();
    const now = socket.bytesRead;
    if (now - last < minBytes) {
      stop();
      refuse(socket);
      return;
    }
    last = now;
  }, opts.windowMs);
  timer.unref();
  req.raw.once('end', stop);
  reply.raw.once('close', stop);
}
