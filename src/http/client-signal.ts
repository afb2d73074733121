import type { ServerResponse } from 'node:http';

/**
 * A signal aborted when the client leaves before its answer is complete: the response's connection
 * closed before the response finished. (Not the request's 'close': Node emits that as soon as the
 * body has been read.) Once the answer has been sent in full, a later close aborts nothing.
 */
export function clientLeftSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  if (res.destroyed || res.socket?.destroyed === true) {
    controller.abort();
    return controller.signal;
  }
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
