import { setTimeout as sleep } from 'node:timers/promises';
import { getBillingAccount } from '../billing/ledger.ts';
import { holdTtlMs } from '../billing/meter.ts';
import type { Config } from '../config.ts';
import type { Deps } from '../deps-types.ts';
import type { Hold, Meter } from '../forecasting/metering.ts';
import { AppError } from '../shared/errors.ts';
import { type JsonChunks, jsonText } from '../shared/json.ts';
import { principalOf, type Operation, type OperationArgs } from '../shared/operation.ts';
import { claimKey, completeKey, debitedRequestIds, dropIfExpired, type KeyRow, readKey, releaseKey, requestHash, sweepExpiredKeys, takeOver } from './store.ts';

/** How often a repeat looks again at a key whose first request is still running. */
const POLL_MS = 50;

/**
 * How long a claim stays with its attempt: longer than any attempt can run (the engine's queue
 * wait, the running timeout and the hold's grace), so only a dead attempt's claim is taken over.
 */
export const leaseMs = (config: Config): number => config.inference.queueWaitMs + holdTtlMs(config);

const isDryRun = (input: unknown): boolean => (input as { dry_run?: unknown } | null)?.dry_run === true;

/**
 * Makes a credit-spending operation idempotent on both surfaces (ADR 0015): with a key, the first
 * call claims (account, key) and stores its answer before it is sent; a repeat with the same
 * validated input gets the stored answer and is charged nothing, one with another input 422
 * idempotency_mismatch, one while the first still runs waits up to IDEMPOTENCY_WAIT_MS, then 409
 * idempotency_in_progress. A failed call (nothing charged) gives the key back.
 */
export function idempotent(op: Operation): Operation {
  const { runSerialised } = op;
  return {
    ...op,
    idempotent: true,
    run: (args) =>
      once(
        args,
        op.id,
        (deps) => op.run({ ...args, deps }),
        (out) => JSON.stringify(out),
        (text) => JSON.parse(text) as unknown,
      ),
    ...(runSerialised
      ? {
          runSerialised: (args: OperationArgs<unknown>) =>
            once<JsonChunks>(
              args,
              op.id,
              (deps) => runSerialised({ ...args, deps }),
              // Joined only when it will be kept (a 40 MB answer is not copied to be thrown away).
              (json) => (json.bytes <= args.deps.config.idempotency.maxBodyBytes ? jsonText(json) : null),
              (text) => ({ chunks: [text], bytes: Buffer.byteLength(text) }),
            ),
        }
      : {}),
  };
}

async function once<T>(
  { deps, caller, input }: OperationArgs<unknown>,
  operation: string,
  exec: (deps: Deps) => Promise<T>,
  encode: (out: T) => string | null,
  decode: (text: string) => T,
): Promise<T> {
  const key = caller.idempotencyKey;
  // A dry run charges nothing and runs nothing: there is nothing to make idempotent.
  if (!key || isDryRun(input)) return exec(deps);
  const db = deps.database.db;
  const accountId = principalOf(caller).user.id;
  const hash = requestHash(operation, input);
  const attempt = caller.requestId;
  const waitUntil = performance.now() + deps.config.idempotency.waitMs;
  let prior: string | null = null;
  for (;;) {
    const now = deps.clock.now();
    const claim = { accountId, key, operation, requestHash: hash, requestId: attempt, now, lockedUntil: now + leaseMs(deps.config) };
    if (await claimKey(db, { ...claim, expiresAt: now + deps.config.idempotency.ttlMs })) break;
    const row = await readKey(db, accountId, key);
    if (row && row.expires_at <= now) {
      await dropIfExpired(db, accountId, key, now);
      continue;
    }
    if (row && (row.operation !== operation || row.request_hash !== hash)) {
      throw new AppError(
        'idempotency_mismatch',
        `This Idempotency-Key was already used with a different request (${row.operation === operation ? 'another body' : `operation ${row.operation}`}); ` +
          'send the same request to get its answer again, or use a new key for a new request',
      );
    }
    if (row?.status === 'done') return replay(deps, caller.receipt, accountId, row, decode);
    if (row && row.locked_until <= now && (await takeOver(db, row, attempt, claim.lockedUntil))) {
      prior = row.request_id;
      break;
    }
    if (performance.now() >= waitUntil) {
      throw new AppError(
        'idempotency_in_progress',
        'A request with this Idempotency-Key is still running; retry with the same key after it finishes to get its answer',
        { 'retry-after': '1' },
      );
    }
    // The row vanished (its call failed and gave the key back) or is still running: look again.
    if (row) await sleep(POLL_MS);
  }
  // An attempt that died after its debit and before storing its answer: run again, unpaid for what was paid.
  const paid = prior === null ? new Set<string>() : await debitedRequestIds(db, accountId, prior);
  const runDeps = prior !== null && paid.size > 0 ? { ...deps, meter: alreadyPaid(deps.meter, paid, prior, attempt) } : deps;
  let out: T;
  try {
    out = await exec(runDeps);
  } catch (err) {
    // Nothing was charged (a failed call releases its hold), or only jobs that ran for the engine's
    // whole time limit (ADR 0039), which a retry runs, and pays, again: the key is free for the
    // retry. If even that fails, the claim's lease runs out and a repeat takes it over.
    await releaseKey(db, accountId, key, attempt).catch(() => undefined);
    throw err;
  }
  const text = encode(out);
  const body = text !== null && Buffer.byteLength(text) <= deps.config.idempotency.maxBodyBytes ? text : null;
  await completeKey(db, accountId, key, attempt, { statusCode: 200, body, credits: caller.receipt?.credits ?? 0 });
  return out;
}

async function replay<T>(
  deps: Deps,
  receipt: OperationArgs<unknown>['caller']['receipt'],
  accountId: string,
  row: KeyRow,
  decode: (text: string) => T,
): Promise<T> {
  if (row.response_body === null) {
    throw new AppError(
      'conflict',
      `The first request with this Idempotency-Key succeeded (charged ${row.credits_charged ?? 0} credits) but its answer was larger than ` +
        'IDEMPOTENCY_MAX_BODY_BYTES and was not kept; send it with a new key to run it again',
    );
  }
  if (receipt) {
    receipt.replayed = true;
    receipt.creditsRemaining = (await getBillingAccount(deps.database.db, accountId))?.balance ?? null;
  }
  return decode(row.response_body);
}

/** The meter for a re-run of a dead attempt: what the ledger shows paid (same request id, or item) is not held again. */
function alreadyPaid(meter: Meter, paid: Set<string>, prior: string, attempt: string): Meter {
  const free: Hold = { commit: async () => undefined, release: async () => undefined };
  const wrapped = Object.create(meter) as Meter;
  wrapped.hold = async (req) => {
    const original = req.requestId.startsWith(attempt) ? prior + req.requestId.slice(attempt.length) : req.requestId;
    return paid.has(original) ? free : meter.hold(req);
  };
  return wrapped;
}

/** Deletes expired keys on start-up and then every minute (timer unref'd). */
export function startIdempotencySweeper(ctx: Pick<Deps, 'database' | 'clock'>, onError: (err: unknown) => void, everyMs = 60_000): { stop(): void } {
  const run = () => sweepExpiredKeys(ctx.database.db, ctx.clock.now()).then(() => undefined, onError);
  void run();
  const timer = setInterval(run, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
