import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.ts';
import { m0001_accounts } from './0001_accounts.ts';
import { m0002_billing } from './0002_billing.ts';
import { m0003_oauth } from './0003_oauth.ts';
import { m0004_verification } from './0004_verification.ts';
import { m0005_idempotency } from './0005_idempotency.ts';
import { m0006_key_limits } from './0006_key_limits.ts';
import { m0007_schedules } from './0007_schedules.ts';
import { m0008_credential_notify } from './0008_credential_notify.ts';
import { m0009_password_reset_index } from './0009_password_reset_index.ts';

export interface DialectMigration {
  // biome-ignore lint: migrations run against a schema that is still changing
  up(db: Kysely<any>, dialect: Dialect): Promise<void>;
}

/** One migration set for both dialects; names sort in the order they run. */
export const migrations: Record<string, DialectMigration> = {
  '0001_accounts': m0001_accounts,
  '0002_billing': m0002_billing,
  '0003_oauth': m0003_oauth,
  '0004_verification': m0004_verification,
  '0005_idempotency': m0005_idempotency,
  '0006_key_limits': m0006_key_limits,
  '0007_schedules': m0007_schedules,
  '0008_credential_notify': m0008_credential_notify,
  '0009_password_reset_index': m0009_password_reset_index,
};
