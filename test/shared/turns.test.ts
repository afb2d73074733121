import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TurnBudget, yieldTurn } from '../../src/shared/turns.ts';

const busy = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end) {}
};

test('yieldTurn: concurrent tasks resume one per loop iteration, in turn, so a timer runs between their slices', async () => {
  const order: string[] = [];
  let resumed = 0;
  let timerAt = -1;
  await Promise.all(
    Array.from({ length: 64 }, async (_, k) => {
      await yieldTurn();
      resumed++;
      // Set from the first slice: it can only run once that slice has given the loop back.
      if (k === 0)
        setTimeout(() => {
          timerAt = resumed;
        }, 1);
      order.push(`a${k}`);
      busy(0.5);
      await yieldTurn();
      order.push(`b${k}`);
    }),
  );
  assert.ok(timerAt >= 0 && timerAt < 16, `the timer ran after ${timerAt} of 64 slices (setImmediate each: after all 64)`);
  // First slices in the order the tasks yielded, and all of them before any second slice.
  assert.deepEqual(
    order.slice(0, 64),
    Array.from({ length: 64 }, (_, k) => `a${k}`),
  );
  assert.deepEqual(
    order.slice(64),
    Array.from({ length: 64 }, (_, k) => `b${k}`),
  );
});

test('TurnBudget: spent after its budget of elapsed time, fresh after next()', async () => {
  const t = new TurnBudget(2);
  assert.equal(t.spent, false);
  busy(3);
  assert.equal(t.spent, true);
  await t.next();
  assert.equal(t.spent, false);
});
