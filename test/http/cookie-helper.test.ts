import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';

const SRC = join(import.meta.dirname, '..', '..', 'src');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Cookies are set and cleared in one place (src/http/cookies.ts), so their flags cannot drift apart. */
describe('one cookie helper', () => {
  test('no file but src/http/cookies.ts calls setCookie or clearCookie', () => {
    const offenders = files(SRC)
      .filter((f) => !f.endsWith(join('http', 'cookies.ts')))
      .filter((f) => /\.(setCookie|clearCookie)\(/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(SRC, f));
    assert.deepEqual(offenders, []);
  });
});
