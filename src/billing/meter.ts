import type { Principal } from '../accounts/credentials.ts';
import type { Catalog, ModelAccess } from '../catalog/catalog.ts';
import type { Config } from '../config.ts';
import type { Database } from '../db/index.ts';
import type { ChargeRequest, Hold, Meter } from '../forecasting/metering.ts';
import { AppError } from '../shared/errors.ts';
import type { Clock } from '../shared/clock.ts';
import { assertKeyAllowsModel, monthStartUtc } from '../keys/policy.ts';
import type { LowBalance } from './alerts.ts';
import { createLedgerGroups, type HoldInput, keyBudgetCheck, keySpentThisMonth } from './group-commit.ts';
import { billingRequired, getBillingAccount, planPayment, sweepExpiredHolds } from './ledger.ts';

export interface MeterCtx {
  database: Database;
  clock: Clock;
  config: Config;
  catalog: Pick<Catalog, 'get'>;
  /** Called (not awaited) after a debit took the account below its low-balance threshold. */
  onLowBalance?: (alert: LowBalance) => Promise<void>;
}

/** The access map the catalog is built with: MODELS_BILLING_ONLY lists models reserved to billing accounts. */
export function modelAccessFromConfig(config: Config): Record<string, ModelAccess> {
  return Object.fromEntries(config.billing.billingOnlyModels.map((id) => [id, 'billing' as const]));
}

/** May this account use a model with this access rule? */
export async function assertModelAccess(ctx: Pick<MeterCtx, 'database'>, principal: Principal, model: string, access: ModelAccess): Promise<void> {
  if (access === 'all') return;
  const acct = await getBillingAccount(ctx.database.db, principal.user.id);
  if (!acct?.billing_active) {
    throw new AppError('no_model_access', `Model '${model}' is available to accounts with active billing only`);
  }
}

/** The key of an API-key call, and its monthly budget check when the key has a limit. */
function keyHoldFields(principal: Principal, now: number): Pick<HoldInput, 'keyId' | 'keyBudget'> {
  if (principal.kind !== 'api_key') return {};
  return {
    keyId: principal.credentialId,
    ...(principal.key?.monthlyCreditLimit != null ? { keyBudget: { monthStart: monthStartUtc(now) } } : {}),
  };
}

/** How long a hold may stay open before the sweeper treats its process as dead. */
export const holdTtlMs = (config: Config): number => config.inference.timeoutMs + config.billing.holdGraceMs;

/**
 * The real meter: reserve → run → settle (debit + usage event in one transaction) or release.
 * A hold settles or releases at most once; a second call is a no-op. Calls in flight share their
 * transactions (group commit, src/billing/group-commit.ts); each call is answered only after the
 * transaction holding its rows committed.
 */
export function createLedgerMeter(ctx: MeterCtx): Meter {
  const groups = createLedgerGroups(ctx.database.db, ctx.database.dialect, ctx.database.prepared, ctx.database.sqliteDirect);
  return {
    async checkModelAccess(principal, model) {
      assertKeyAllowsModel(principal, model);
      await assertModelAccess(ctx, principal, model, ctx.catalog.get(model).access);
    },
    async preview(principal, credits) {
      const acct = await getBillingAccount(ctx.database.db, principal.user.id);
      const available = acct?.balance ?? 0;
      const limit = principal.kind === 'api_key' ? (principal.key?.monthlyCreditLimit ?? null) : null;
      if (limit !== null) {
        const spent = await keySpentThisMonth(ctx.database.db, principal.credentialId, monthStartUtc(ctx.clock.now()));
        const over = keyBudgetCheck(limit, spent, credits);
        if (over) return { free: 0, metered: 0, available, refusal: over };
      }
      const plan = planPayment(available, acct?.billing_active ?? false, credits);
      return plan ? { ...plan, available, refusal: null } : { free: 0, metered: 0, available, refusal: billingRequired(credits, available) };
    },
    async hold(req: ChargeRequest): Promise<Hold> {
      if (!Number.isInteger(req.credits) || req.credits < 0) throw new Error(`invalid price ${req.credits}`);
      const reserve = (): HoldInput => ({
        userId: req.principal.user.id,
        requestId: req.requestId,
        credits: req.credits,
        now: ctx.clock.now(),
        ttlMs: holdTtlMs(ctx.config),
        ...keyHoldFields(req.principal, ctx.clock.now()),
      });
      const settlement = (outcome: Parameters<Hold['commit']>[0]) => ({
        principal: req.principal,
        requestId: req.requestId,
        source: req.source,
        model: req.model,
        usage: outcome.usage ?? req.usage,
        credits: outcome.credits ?? req.credits,
        latencyMs: outcome.latencyMs,
        ...(outcome.status ? { status: outcome.status } : {}),
        creditPriceNanoUsd: ctx.config.billing.creditPriceNanoUsd,
        now: ctx.clock.now(),
      });
      // Reserved at commit (inline work, ADR 0014): nothing to write now, nothing to release later.
      const row = req.chargeAtCommit ? null : await groups.hold(reserve());
      let done = false;
      return {
        async commit(outcome) {
          if (done) return undefined;
          done = true;
          try {
            const settled = row
              ? await groups.settle({ hold: row, settlement: settlement(outcome) })
              : // The reservation is taken for what is charged: a lower actual price needs no refund.
                await groups.charge({
                  reserve: { ...reserve(), credits: Math.max(0, Math.min(req.credits, Math.round(outcome.credits ?? req.credits))) },
                  settlement: settlement(outcome),
                });
            if (settled.lowBalance && ctx.onLowBalance) void ctx.onLowBalance(settled.lowBalance);
            return settled;
          } catch (err) {
            done = false; // nothing was debited: the caller's release must still give the credits back
            throw err;
          }
        },
        async release() {
          if (done) return;
          done = true;
          if (row) await groups.release({ hold: row, now: ctx.clock.now() });
        },
      };
    },
  };
}

/** Periodically releases holds left behind by a process that died mid-call. */
export function startHoldSweeper(
  ctx: MeterCtx,
  onError: (err: unknown) => void,
  /** After each run: holds released, or null when the run failed. */
  onSweep?: (released: number | null) => void,
): { stop(): void } {
  const every = Math.max(1000, Math.min(30_000, holdTtlMs(ctx.config)));
  const run = () =>
    sweepExpiredHolds(ctx.database.db, ctx.clock.now()).then(
      (released) => onSweep?.(released),
      (err: unknown) => {
        onSweep?.(null);
        onError(err);
      },
    );
  void run();
  const timer = setInterval(run, every);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
