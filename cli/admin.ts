/**
 * Operator commands that must work before any administrator exists, so they talk to the
 * database directly (the one exception to "CLIs go through the HTTP API").
 *   npm run admin -- promote <email>   give an account the administrator role
 *   npm run admin -- demote <email>    take it back
 */
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';
import { normaliseEmail } from '../src/accounts/users.ts';

const [command, email] = process.argv.slice(2);
if ((command !== 'promote' && command !== 'demote') || !email) {
  process.stderr.write('usage: npm run admin -- promote|demote <email>\n');
  process.exit(2);
}
const config = loadConfig();
const database = await openDatabase(config.database);
try {
  const r = await database.db
    .updateTable('users')
    .set({ role: command === 'promote' ? 'admin' : 'user', updated_at: Date.now() })
    .where('email', '=', normaliseEmail(email))
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) {
    process.stderr.write(`no account with e-mail ${normaliseEmail(email)}\n`);
    process.exitCode = 1;
  } else {
    process.stdout.write(`${normaliseEmail(email)} is now ${command === 'promote' ? 'an administrator' : 'a regular user'}\n`);
  }
} finally {
  await database.close();
}
