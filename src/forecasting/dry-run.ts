import { z } from 'zod';
import { serialiseJson } from '../shared/json.ts';
import { principalOf, type Operation, type OperationArgs } from '../shared/operation.ts';
import { parseTimestampsAhead } from './frequency.ts';
import { ForecastQuote, type ForecastQuoteT, type QuotedOperation, quoteCall, quoteSummary } from './quote.ts';

const isDryRun = (input: unknown): boolean => (input as { dry_run?: unknown } | null)?.dry_run === true;
const isQuote = (out: unknown): out is ForecastQuoteT => (out as { object?: unknown } | null)?.object === 'forecast_quote';

/**
 * `dry_run: true` on a forecast operation: the body is priced by the quote (the same planning code
 * as the call) and the answer is a ForecastQuote; nothing runs, nothing is charged.
 */
export function withDryRun(op: Operation, operation: QuotedOperation): Operation {
  const { runSerialised } = op;
  const quote = async ({ deps, caller, input }: OperationArgs<unknown>) => {
    const { dry_run: _dry, ...request } = input as Record<string, unknown>;
    await parseTimestampsAhead(request);
    return quoteCall(deps, principalOf(caller), operation, request, []);
  };
  return {
    ...op,
    output: z.union([op.output, ForecastQuote]),
    run: (args) => (isDryRun(args.input) ? quote(args) : op.run(args)),
    ...(runSerialised
      ? { runSerialised: async (args: OperationArgs<unknown>) => (isDryRun(args.input) ? serialiseJson(await quote(args)) : runSerialised(args)) }
      : {}),
    summarize: (out) => (isQuote(out) ? quoteSummary(out) : op.summarize(out)),
  };
}
