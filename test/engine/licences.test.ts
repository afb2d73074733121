import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { BUILTIN_MODELS } from '../../src/engine/registry.ts';

// ADR 0033: a port carries the licence of the code it was translated from. The table in
// docs/models-statistical.md ("Licences") is what users read; the registry must say the same.
test('every statistical model declares the licence its documentation gives it', () => {
  const doc = readFileSync(new URL('../../docs/models-statistical.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## Licences'), doc.indexOf('## Why these libraries'));
  const table = new Map([...section.matchAll(/^\| `([a-z-]+)` \| `([^`]+)` \|/gm)].map((m) => [m[1]!, m[2]!]));
  const statistical = BUILTIN_MODELS.filter((m) => m.info.kind === 'statistical');
  assert.ok(statistical.length >= 9);
  for (const m of statistical) {
    assert.equal(m.info.license, table.get(m.info.id), `${m.info.id}: registry ${m.info.license}, docs ${table.get(m.info.id)}`);
  }
  assert.equal(table.size, statistical.length, 'the docs list a model the registry does not have');
  // The R ports are not MIT.
  for (const id of ['auto-ets', 'auto-arima', 'mstl', 'combo']) assert.equal(table.get(id), 'GPL-3.0-only');
  assert.equal(table.get('ces'), 'LGPL-2.1-only');
});
