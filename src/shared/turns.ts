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
    await yieldTurn();
    this.since = performance.now();
  }
}

const waiting: (() => void)[] = [];
let scheduled = false;
function release(): void {
  const next = waiting.shift();
  if (waiting.length > 0) setImmediate(release);
  else scheduled = false;
  next?.();
}

/**
 * A turn of the event loop shared fairly by every task that yields: one waiting task resumes per
 * loop iteration, in the order they yielded. With `setImmediate` each, every task that had yielded
 * resumed in the same iteration: 64 batch items serialising at once ran 64 slices back to back
 * (30–40 ms) between two chances for any other request. The slices of concurrent tasks now
 * alternate with I/O, and one task alone runs as before (one slice per iteration).
 */
export function yieldTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!scheduled) {
      scheduled = true;
      setImmediate(release);
    }
  });
}
