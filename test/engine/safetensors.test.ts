import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { readSafetensors, SafetensorsError } from '../../src/engine/neural/safetensors.ts';
import { skipWithoutWeights, weightsPath } from './ttm-fixtures.ts';

/** Builds a safetensors file from tensors given as raw little-endian bytes. */
function build(entries: Record<string, { dtype: string; shape: number[]; bytes: Uint8Array }>, pad = 0): Uint8Array {
  let offset = 0;
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  for (const [name, e] of Object.entries(entries)) {
    header[name] = { dtype: e.dtype, shape: e.shape, data_offsets: [offset, offset + e.bytes.length] };
    offset += e.bytes.length;
  }
  const json = new TextEncoder().encode(JSON.stringify(header) + ' '.repeat(pad));
  const out = new Uint8Array(8 + json.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const e of Object.values(entries)) {
    out.set(e.bytes, at);
    at += e.bytes.length;
  }
  return out;
}

const f32 = (xs: number[]) => new Uint8Array(new Float32Array(xs).buffer);

describe('safetensors reader', () => {
  it('reads F32 tensors with shapes and metadata, aligned or not', () => {
    for (const pad of [0, 1, 2, 3]) {
      const file = readSafetensors(build({ a: { dtype: 'F32', shape: [2, 2], bytes: f32([1, 2, 3, 4.5]) } }, pad));
      assert.deepEqual(file.metadata, { format: 'pt' });
      assert.deepEqual(file.info('a').shape, [2, 2]);
      assert.deepEqual(Array.from(file.float32('a', [2, 2])), [1, 2, 3, 4.5]);
    }
  });

  it('widens F16 and BF16 to float32', () => {
    const half = new Uint8Array([0x00, 0x3c, 0x00, 0xc0, 0x00, 0x35]); // 1, -2, 0.3125
    const bf = new Uint8Array([0x80, 0x3f, 0x40, 0xc0]); // 1, -3
    const file = readSafetensors(
      build({
        h: { dtype: 'F16', shape: [3], bytes: half },
        b: { dtype: 'BF16', shape: [2], bytes: bf },
      }),
    );
    assert.deepEqual(Array.from(file.float32('h')), [1, -2, 0.3125]);
    assert.deepEqual(Array.from(file.float32('b')), [1, -3]);
  });

  it('rejects a wrong shape, a wrong dtype and a missing tensor', () => {
    const file = readSafetensors(
      build({
        a: { dtype: 'F32', shape: [4], bytes: f32([1, 2, 3, 4]) },
        i: { dtype: 'I32', shape: [1], bytes: new Uint8Array(4) },
      }),
    );
    assert.throws(() => file.float32('a', [2, 2]), /expected \[2,2\]/);
    assert.throws(() => file.float32('i'), /dtype I32/);
    assert.throws(() => file.float32('nope'), SafetensorsError);
  });

  it('rejects malformed files', () => {
    assert.throws(() => readSafetensors(new Uint8Array(4)), /too short/);
    const good = build({ a: { dtype: 'F32', shape: [2], bytes: f32([1, 2]) } });
    assert.throws(() => readSafetensors(good.subarray(0, good.length - 4)), /outside the data section/);
    const huge = good.slice();
    new DataView(huge.buffer).setBigUint64(0, 1n << 40n, true);
    assert.throws(() => readSafetensors(huge), /does not fit/);
    assert.throws(() => readSafetensors(build({ a: { dtype: 'F32', shape: [3], bytes: f32([1, 2]) } })), /bytes for shape/);
    assert.throws(() => readSafetensors(build({ a: { dtype: 'Q4', shape: [1], bytes: new Uint8Array(1) } })), /unsupported dtype/);
  });

  it('reads the TTM R2 checkpoint header', { skip: skipWithoutWeights }, () => {
    const file = readSafetensors(new Uint8Array(readFileSync(weightsPath)));
    assert.equal(file.tensors.size, 134);
    assert.deepEqual(file.info('head.base_forecast_block.weight').shape, [96, 1024]);
    assert.equal(file.info('head.base_forecast_block.weight').dtype, 'F32');
  });
});
