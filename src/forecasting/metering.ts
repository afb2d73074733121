import type { Principal } from '../accounts/credentials.ts';
import type { Charge } from '../shared/receipt.ts';

export type { Charge, Receipt } from '../shared/receipt.ts';

/**
 * The one metering hook every forecast goes through (HTTP, batch items, ensemble, MCP, playground).
 * The forecasting service computes the exact price before inference (tokens follow from the request,
 * see docs/forecasting.md), asks the meter to hold it, runs the model, then commits or releases.
 * The billing feature provides the real implementation; `unmeteredMeter` charges nothing.
 */
export type UsageSource = 'api' | 'batch' | 'ensemble' | 'mcp' | 'playground' | 'schedule';

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

export interface ChargeRequest {
  principal: Principal;
  requestId: string;
  source: UsageSource;
  model: string;
  usage: Usage;
  /** Price of the call in credits (integer >= 0). */
  credits: number;
  /**
   * The work runs inline and costs microseconds (trivial models on small jobs, ADR 0014): nothing
   * is reserved now; `commit` reserves and debits in one transaction, and throws the refusals
   * `hold` would (402 billing_required, key_budget_exceeded) when the account cannot pay.
   * Meters may ignore it and reserve at once.
   */
  chargeAtCommit?: boolean;
}

export interface Hold {
  /**
   * Inference succeeded: debit and write the usage event, in one transaction, before answering
   * (a `chargeAtCommit` hold reserves in that transaction too, and may refuse).
   * `credits`/`usage` give the actual amount when it is below what was held (an ensemble whose
   * candidate failed); the difference is released.
   * `status: 'timed_out'`: the call failed and what is charged is its jobs that ran for the engine's
   * whole time limit (ADR 0039); the usage event says so.
   */
  commit(outcome: { latencyMs: number; credits?: number; usage?: Usage; status?: 'succeeded' | 'timed_out' }): Promise<Charge | undefined>;
  /** Inference failed: give the reservation back; nothing is charged. */
  release(reason: string): Promise<void>;
}

export interface Meter {
  /** Throws AppError('no_model_access') when the account may not use the model. */
  checkModelAccess(principal: Principal, model: string): Promise<void>;
  /** Reserves the credits with a guarded update, or throws AppError('billing_required'). */
  hold(req: ChargeRequest): Promise<Hold>;
  /**
   * What a hold of `credits` would take now, by the same payment rule, without reserving anything
   * (quotes): the free and metered parts, the prepaid balance, or the refusal the hold would throw.
   */
  preview?(principal: Principal, credits: number): Promise<PaymentPreview>;
}

export interface PaymentPreview {
  free: number;
  metered: number;
  /** Prepaid credits on the account now. */
  available: number;
  refusal: Error | null;
}

export const unmeteredMeter: Meter = {
  async checkModelAccess() {},
  async hold() {
    return { commit: async () => undefined, async release() {} };
  },
};
