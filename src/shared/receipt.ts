/** What one settled debit took, for the cost headers (`x-credits-charged`, …). */
export interface Charge {
  /** Credits debited (free + metered). */
  credits: number;
  /** The debit's price in nano-USD (credits × CREDIT_PRICE_NANO_USD). */
  costNanoUsd: number;
  /** The account's prepaid (free) credit balance right after the debit; null when unknown. */
  balanceAfter: number | null;
}

/**
 * What a call was charged, summed over its debits (a batch has one per item). The boundary makes
 * one per call; the service adds each settled debit; the boundary reads it into the cost headers
 * (REST) or the result's `_meta` (MCP). `replayed`: the answer is an idempotent replay (nothing charged).
 */
export class Receipt {
  credits = 0;
  costNanoUsd = 0;
  creditsRemaining: number | null = null;
  replayed = false;
  add(c: Charge | undefined): void {
    if (!c) return;
    this.credits += c.credits;
    this.costNanoUsd += c.costNanoUsd;
    // Debits settle in order: the last one seen is the newest balance.
    if (c.balanceAfter !== null) this.creditsRemaining = c.balanceAfter;
  }
}
