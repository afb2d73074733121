import { AppError } from './errors.ts';

/**
 * The client of a call closed its connection before the answer was sent (REST: the response's
 * connection closed before it finished; MCP: the HTTP request carrying the tool call). The
 * boundary aborts the call's signal (`Caller.signal`); the engine drops a queued job and stops a
 * running one, and the metered services throw this instead of committing: the hold is released,
 * nothing is charged or recorded as succeeded (ADR 0040). Nobody reads the error itself.
 */
export class ClientGone extends AppError {
  constructor() {
    super('request_error', 'The client closed the connection before the answer was sent; nothing was charged');
    this.name = 'ClientGone';
  }
}

/** Throws ClientGone when the call's client has left. */
export function throwIfGone(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ClientGone();
}
