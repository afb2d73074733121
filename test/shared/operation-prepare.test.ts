import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { timesOf } from '../../src/forecasting/frequency.ts';
import { operations } from '../../src/operations.ts';
import { defineOperation, type OperationArgs } from '../../src/shared/operation.ts';

test("a declaration's prepare runs, and is awaited, before run and runSerialised", async () => {
  const seen: string[] = [];
  const op = defineOperation({
    id: 'probe',
    method: 'POST',
    path: '/probe',
    tags: [],
    summary: 'probe',
    description: 'probe',
    input: z.object({ n: z.number() }),
    output: z.object({ n: z.number() }),
    auth: 'public',
    errors: [],
    spendsCredits: false,
    example: { request: { n: 1 } },
    prepare: async (input) => {
      await new Promise((r) => setTimeout(r, 5));
      seen.push(`prepare ${input.n}`);
    },
    run: async ({ input }) => {
      seen.push(`run ${input.n}`);
      return input;
    },
    runSerialised: async ({ input }) => {
      seen.push(`serialised ${input.n}`);
      return { chunks: [JSON.stringify(input)], bytes: 7 };
    },
    summarize: () => '',
  });
  const args = (n: number) => ({ input: { n } }) as unknown as OperationArgs<unknown>;
  await op.run(args(1));
  await op.runSerialised?.(args(2));
  assert.deepEqual(seen, ['prepare 1', 'run 1', 'prepare 2', 'serialised 2']);
});

test('the forecast operations parse large sent timestamps ahead (prepare), on every boundary that runs them', async () => {
  const times = Array.from({ length: 2000 }, (_, j) => new Date(Date.UTC(2024, 0, 1) + j * 3_600_000).toISOString());
  const input = { inputs: [{ target: times.map(() => 1), timestamps: times }] };
  for (const id of ['forecast', 'forecastBatch', 'forecastEnsemble', 'quoteForecast']) {
    const op = operations.find((o) => o.id === id);
    assert.ok(op?.prepare, `${id} declares prepare`);
    const raw = [...times];
    const shaped =
      id === 'forecastBatch'
        ? { requests: [{ inputs: [{ timestamps: raw }] }] }
        : id === 'quoteForecast'
          ? { request: { inputs: [{ timestamps: raw }] } }
          : { ...input, inputs: [{ timestamps: raw }] };
    await op.prepare(shaped as never);
    // Parsed ahead: planning gets the same array of epoch ms back instead of parsing again.
    assert.equal(timesOf(raw), timesOf(raw), id);
    assert.equal(timesOf(raw)[1], Date.UTC(2024, 0, 1) + 3_600_000);
  }
});
