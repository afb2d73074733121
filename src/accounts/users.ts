import type { Kysely } from 'kysely';
import type { DB, UsersTable } from '../db/schema.ts';
import { iso } from '../shared/clock.ts';

export type UserRow = UsersTable;

export interface PublicUser {
  id: string;
  email: string;
  name: string | null;
  role: 'user' | 'admin';
  email_verified: boolean;
  created_at: string;
}

export const toPublicUser = (u: UserRow): PublicUser => ({
  id: u.id,
  email: u.email,
  name: u.name,
  role: u.role,
  email_verified: u.email_verified_at !== null,
  created_at: iso(u.created_at),
});

/** E-mails are compared in one canonical form: trimmed and lower-cased. */
export const normaliseEmail = (email: string): string => email.trim().toLowerCase();

export function findUserById(db: Kysely<DB>, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findUserByEmail(db: Kysely<DB>, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', normaliseEmail(email)).executeTakeFirst();
}
