import type { Selectable } from 'kysely';
import { Webhook } from 'standardwebhooks';
import type { ScheduleRunsTable, SchedulesTable } from '../db/schema.ts';
import type { Deps } from '../deps-types.ts';
import { OutboundError } from '../outbound/fetcher.ts';
import { openSecret } from './secrets.ts';

/** A delivery the callback did not accept (status is its HTTP answer, null when it never answered). */
export class DeliveryError extends Error {
  readonly status: number | null;
  constructor(message: string, status: number | null) {
    super(message);
    this.name = 'DeliveryError';
    this.status = status;
  }
}

/** The callback's answer body is not used: at most this much of it is read. */
const ANSWER_BYTES = 64 * 1024;

/**
 * POSTs a run's payload to the schedule's callback, signed per Standard Webhooks: `webhook-id` is
 * the run's (the same on every re-delivery), `webhook-timestamp` the time of this attempt,
 * `webhook-signature` `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under the schedule's secret
 * (the standardwebhooks library signs). Through the outbound fetcher: private networks refused,
 * redirects not followed, time capped. Any 2xx is success; its status is returned.
 */
export async function deliverWebhook(
  deps: Pick<Deps, 'fetcher' | 'clock' | 'config'>,
  schedule: Pick<Selectable<SchedulesTable>, 'callback_url' | 'secret'>,
  run: Pick<Selectable<ScheduleRunsTable>, 'webhook_id'>,
  payload: string,
): Promise<number> {
  const secret = openSecret(schedule.secret, deps.config.schedules.secretKey);
  const at = new Date(deps.clock.now());
  const signature = new Webhook(secret).sign(run.webhook_id, at, payload);
  let status: number;
  try {
    const res = await deps.fetcher.fetch(schedule.callback_url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': run.webhook_id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body: payload,
      maxBytes: ANSWER_BYTES,
      discardBody: true,
    });
    status = res.status;
  } catch (err) {
    if (err instanceof OutboundError) throw new DeliveryError(`delivery failed: ${err.message}`, null);
    throw err;
  }
  if (status < 200 || status >= 300) throw new DeliveryError(`the callback answered HTTP ${status}`, status);
  return status;
}
