/**
 * A small reader for the safetensors format (https://github.com/huggingface/safetensors):
 * 8-byte little-endian header length, a UTF-8 JSON header `{name: {dtype, shape, data_offsets}}`
 * (offsets relative to the data section), then the raw little-endian tensor bytes.
 *
 * Hand-written because no well-kept npm package reads safetensors in Node without pulling a
 * runtime with it; the format is simple enough that validating it fully is a few dozen lines.
 * F32 and F64 come back as zero-copy views when the data is aligned (a copy otherwise);
 * F16 and BF16 are widened to Float32Array.
 */

export type SafetensorsDtype = 'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'I16' | 'I8' | 'U64' | 'U32' | 'U16' | 'U8' | 'BOOL';

const DTYPE_BYTES: Record<SafetensorsDtype, number> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U64: 8,
  U32: 4,
  U16: 2,
  U8: 1,
  BOOL: 1,
};

export interface TensorInfo {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** Absolute byte range in the file. */
  begin: number;
  end: number;
}

export class SafetensorsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SafetensorsError';
  }
}

/** Largest header the reader accepts (the reference implementation uses 100 MB). */
const MAX_HEADER_BYTES = 100_000_000;

export class SafetensorsFile {
  readonly bytes: Uint8Array;
  readonly metadata: Record<string, string>;
  readonly tensors: ReadonlyMap<string, TensorInfo>;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    const parsed = parseHeader(bytes);
    this.metadata = parsed.metadata;
    this.tensors = parsed.tensors;
  }

  info(name: string): TensorInfo {
    const t = this.tensors.get(name);
    if (!t) throw new SafetensorsError(`tensor not found: ${name}`);
    return t;
  }

  /**
   * The tensor as float32. F32 is returned as a view when aligned; F16/BF16 are widened.
   * `shape`, when given, must match exactly.
   */
  float32(name: string, shape?: readonly number[]): Float32Array {
    const t = this.info(name);
    if (shape) checkShape(t, shape);
    const n = numel(t.shape);
    if (t.dtype === 'F32') return viewOrCopy(this.bytes, t.begin, n, 4, Float32Array);
    if (t.dtype === 'F16' || t.dtype === 'BF16') {
      const dv = new DataView(this.bytes.buffer, this.bytes.byteOffset + t.begin, n * 2);
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        const h = dv.getUint16(i * 2, true);
        out[i] = t.dtype === 'F16' ? halfToFloat(h) : bf16ToFloat(h);
      }
      return out;
    }
    throw new SafetensorsError(`tensor ${name} has dtype ${t.dtype}, expected a float type`);
  }

  float64(name: string, shape?: readonly number[]): Float64Array {
    const t = this.info(name);
    if (shape) checkShape(t, shape);
    if (t.dtype === 'F64') return viewOrCopy(this.bytes, t.begin, numel(t.shape), 8, Float64Array);
    return Float64Array.from(this.float32(name));
  }
}

export function readSafetensors(bytes: Uint8Array): SafetensorsFile {
  return new SafetensorsFile(bytes);
}

function parseHeader(bytes: Uint8Array): { metadata: Record<string, string>; tensors: Map<string, TensorInfo> } {
  if (bytes.byteLength < 8) throw new SafetensorsError('file too short for a safetensors header');
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = Number(dv.getBigUint64(0, true));
  if (headerLen > MAX_HEADER_BYTES || 8 + headerLen > bytes.byteLength) {
    throw new SafetensorsError(`header length ${headerLen} does not fit in a ${bytes.byteLength}-byte file`);
  }
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + headerLen)));
  } catch (err) {
    throw new SafetensorsError(`header is not valid UTF-8 JSON: ${(err as Error).message}`);
  }
  if (!isRecord(json)) throw new SafetensorsError('header is not a JSON object');
  const dataStart = 8 + headerLen;
  const dataLen = bytes.byteLength - dataStart;
  const tensors = new Map<string, TensorInfo>();
  let metadata: Record<string, string> = {};
  const ranges: [number, number][] = [];
  for (const [name, raw] of Object.entries(json)) {
    if (name === '__metadata__') {
      if (!isRecord(raw)) throw new SafetensorsError('__metadata__ must be an object');
      metadata = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, String(v)]));
      continue;
    }
    if (!isRecord(raw)) throw new SafetensorsError(`entry ${name} is not an object`);
    const { dtype, shape, data_offsets: offsets } = raw;
    if (typeof dtype !== 'string' || !(dtype in DTYPE_BYTES)) {
      throw new SafetensorsError(`tensor ${name}: unsupported dtype ${String(dtype)}`);
    }
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new SafetensorsError(`tensor ${name}: bad shape`);
    }
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && o >= 0)) {
      throw new SafetensorsError(`tensor ${name}: bad data_offsets`);
    }
    const [b, e] = offsets as [number, number];
    const dt = dtype as SafetensorsDtype;
    const dims = shape as number[];
    if (e < b || e > dataLen) throw new SafetensorsError(`tensor ${name}: data_offsets [${b}, ${e}) outside the data section`);
    if (e - b !== numel(dims) * DTYPE_BYTES[dt]) {
      throw new SafetensorsError(`tensor ${name}: ${e - b} bytes for shape [${dims.join(',')}] of ${dt}`);
    }
    ranges.push([b, e]);
    tensors.set(name, { name, dtype: dt, shape: dims, begin: dataStart + b, end: dataStart + e });
  }
  ranges.sort((x, y) => x[0] - y[0]);
  for (let i = 1; i < ranges.length; i++) {
    if (ranges[i]![0] < ranges[i - 1]![1]) throw new SafetensorsError('tensors overlap in the data section');
  }
  return { metadata, tensors };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function checkShape(t: TensorInfo, shape: readonly number[]): void {
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    throw new SafetensorsError(`tensor ${t.name} has shape [${t.shape.join(',')}], expected [${shape.join(',')}]`);
  }
}

type TypedCtor<T> = { new (buffer: ArrayBufferLike, byteOffset: number, length: number): T; new (length: number): T };

function viewOrCopy<T extends Float32Array | Float64Array>(bytes: Uint8Array, begin: number, n: number, size: number, Ctor: TypedCtor<T>): T {
  const abs = bytes.byteOffset + begin;
  if (abs % size === 0) return new Ctor(bytes.buffer, abs, n);
  const copy = new Uint8Array(n * size);
  copy.set(bytes.subarray(begin, begin + n * size));
  return new Ctor(copy.buffer, 0, n);
}

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

const bf16Scratch = new DataView(new ArrayBuffer(4));
function bf16ToFloat(h: number): number {
  bf16Scratch.setUint32(0, h << 16, false);
  return bf16Scratch.getFloat32(0, false);
}
