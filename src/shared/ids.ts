import { v7 as uuidv7 } from 'uuid';

/** Prefixed, time-sortable identifiers (`usr_…`, `key_…`): UUIDv7 without dashes. */
export function newId(prefix: string): string {
  return `${prefix}_${uuidv7().replaceAll('-', '')}`;
}
