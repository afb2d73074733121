/**
 * Operator commands that must work before any administrator exists, so they talk to the
 * database directly (the one exception to "CLIs go through the HTTP API").
 *   npm run admin -- promote <email>   give an account the administrator role
 *   npm run admin -- demote <email>    take it back
 *   npm run admin -- verify <email>    confirm the account's e-mail (as its mailed link would):
 *                                      free credits (FREE_CREDITS_ON=verify), ADMIN_EMAILS role
 */
import { normaliseEmail } from '../src/accounts/users.ts';
import { markVerified } from '../src/accounts/verification.ts';
import { emailVerifiedHooksFor } from '../src/billing/free-credits.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';

const COMMANDS = ['promote', 'demote', 'verify'] as const;
const [command, email] = process.argv.slice(2);
if (!COMMANDS.includes(command as (typeof COMMANDS)[number]) || !email) {
  process.stderr.write('usage: npm run admin -- promote|demote|verify <email>\n');
  process.exit(2);
}
const config = loadConfig();
const database = await openDatabase(config.database);
const address = normaliseEmail(email);
try {
  const user = await database.db.selectFrom('users').select(['id']).where('email', '=', address).executeTakeFirst();
  if (!user) {
    process.stderr.write(`no account with e-mail ${address}\n`);
    process.exitCode = 1;
  } else if (command === 'verify') {
    const now = Date.now();
    const changed = await database.db
      .transaction()
      .execute((trx) => markVerified({ config, emailVerifiedHooks: emailVerifiedHooksFor(config) }, trx, user.id, now));
    process.stdout.write(changed ? `${address} is now confirmed\n` : `${address} was already confirmed\n`);
  } else {
    await database.db
      .updateTable('users')
      .set({ role: command === 'promote' ? 'admin' : 'user', updated_at: Date.now() })
      .where('id', '=', user.id)
      .execute();
    process.stdout.write(`${address} is now ${command === 'promote' ? 'an administrator' : 'a regular user'}\n`);
  }
} finally {
  await database.close();
}
