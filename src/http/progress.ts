import type { ServerResponse } from 'node:http';
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

/**
 * Closes the connection of an answer that makes no progress for `timeoutMs`: nothing handed to the
 * socket (the client stopped reading, the kernel's buffers are full, the stream waits for a drain
 * that never comes). The answer is in memory until it is read (a forecast's is serialised whole
 * before its debit, ADR 0010); 60 unread answers were 2 GB of RSS. A slow reader that keeps reading
 * makes progress and is not cut; the time to compute the answer does not count (this starts with
 * it). A timer of its own, not the socket's timeout: Node gives that to keep-alive, and a pipelined
 * request computing its answer behind this one must not inherit it.
 */
export function watchSend(res: ServerResponse, timeoutMs: number, onStall: (written: number) => void): void {
  const socket = res.socket;
  if (!socket || timeoutMs <= 0 || res.writableFinished) return;
  let last = socket.bytesWritten;
  let lastProgress = performance.now();
  const stop = () => {
    clearInterval(timer);
    res.off('finish', stop);
    res.off('close', stop);
  };
  const timer = setInterval(
    () => {
      if (socket.destroyed) return stop();
      const now = socket.bytesWritten;
      if (now !== last) {
        last = now;
        lastProgress = performance.now();
      } else if (performance.now() - lastProgress >= timeoutMs) {
        stop();
        onStall(now);
        res.destroy();
      }
    },
    Math.max(50, Math.floor(timeoutMs / 4)),
  );
  timer.unref();
  res.once('finish', stop);
  res.once('close', stop);
}
