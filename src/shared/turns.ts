import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * A budget of event-loop time for a long loop on the main thread: check `spent` as often as is
 * cheap (a clock read, no await) and `await next()` when it is. Counting rows instead ("a turn every
 * 5,000 records") leaves the length of a turn to the cost of a row, which an input can choose
 * (issue #11: 5,000 CSV records were 35–60 ms of one turn).
 */
export class TurnBudget {
  private since = performance.now();
  private readonly budgetMs: number;
  constructor(budgetMs = 4) {
    this.budgetMs = budgetMs;
  }
  get spent(): boolean {
    return performance.now() - this.since >= this.budgetMs;
  }
  /** A turn of the event loop; the budget starts again after it. */
  async next(): Promise<void> {
    await nextTurn();
    this.since = performance.now();
  }
}
