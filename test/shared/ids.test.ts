import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse, validate, version } from 'uuid';
import { newId } from '../../src/shared/ids.ts';

describe('newId', () => {
  it('is the prefix and a UUIDv7 without dashes, time-ordered and unique', () => {
    const ids = Array.from({ length: 5000 }, () => newId('req'));
    for (const id of ids.slice(0, 50)) {
      assert.match(id, /^req_[0-9a-f]{32}$/);
      const hex = id.slice(4);
      const dashed = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
      assert.ok(validate(dashed), dashed);
      assert.equal(version(dashed), 7);
      // The first 48 bits are the creation time in milliseconds.
      const ms = parse(dashed)
        .slice(0, 6)
        .reduce((a, b) => a * 256 + b, 0);
      assert.ok(Math.abs(ms - Date.now()) < 60_000, `${ms}`);
    }
    assert.deepEqual([...ids].sort(), ids, 'each id sorts after the one before');
    assert.equal(new Set(ids).size, ids.length);
  });
});
