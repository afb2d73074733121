import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { ModelFiles, ModelImpl } from '../types.ts';
import { recordHash } from './record.ts';
import { checkFile, modelDir, modelFilePath } from './verify.ts';

/**
 * Downloads a model's files from a Hugging Face-compatible hub:
 * `<endpoint>/<repo>/resolve/<revision>/<file>` (redirects followed; the token is sent as
 * `Authorization: Bearer` and, as fetch does, dropped on a redirect to another origin, which is
 * how the hub's signed CDN links expect it).
 *
 * Each file is streamed to a temporary file in the target folder while its sha256 is computed,
 * then renamed over the final name only if the hash (and size) match the pinned values (for a file
 * with no pin: the value recorded at its first download, see record.ts): a partial
 * or corrupt download is never visible under the real name. Files already present and verified are
 * skipped, so pulling again is safe and cheap.
 */

export const DEFAULT_HF_ENDPOINT = 'https://huggingface.co';

export interface PullProgress {
  file: string;
  /** Bytes received so far. */
  received: number;
  /** Expected bytes (from the pin or Content-Length), or null. */
  total: number | null;
  phase: 'checking' | 'skipped' | 'downloading' | 'done';
}

export interface PullOptions {
  modelsDir: string;
  /** Hub base URL; default HF_ENDPOINT's usual value, the public hub. */
  endpoint?: string;
  /** Sent as `Authorization: Bearer <token>` when set. */
  token?: string;
  onProgress?: (p: PullProgress) => void;
  signal?: AbortSignal;
}

export interface PulledFile {
  path: string;
  status: 'downloaded' | 'skipped';
  bytes: number;
  sha256: string | null;
}

export type StoreErrorKind = 'not_found' | 'unauthorized' | 'http' | 'hash_mismatch' | 'size_mismatch' | 'network';

export class StoreError extends Error {
  readonly kind: StoreErrorKind;
  readonly file: string;
  constructor(kind: StoreErrorKind, file: string, message: string) {
    super(message);
    this.name = 'StoreError';
    this.kind = kind;
    this.file = file;
  }
}

export async function pullModel(target: ModelImpl | ModelFiles, opts: PullOptions): Promise<PulledFile[]> {
  const files = 'info' in target ? target.files : target;
  if (!files) return [];
  const endpoint = (opts.endpoint ?? DEFAULT_HF_ENDPOINT).replace(/\/+$/, '');
  const out: PulledFile[] = [];
  for (const f of files.files) {
    opts.onProgress?.({ file: f.path, received: 0, total: f.size ?? null, phase: 'checking' });
    const check = await checkFile(opts.modelsDir, files, f);
    if (check.status === 'verified') {
      opts.onProgress?.({ file: f.path, received: check.size ?? 0, total: check.size, phase: 'skipped' });
      out.push({ path: f.path, status: 'skipped', bytes: check.size ?? 0, sha256: check.sha256 });
      continue;
    }
    // A corrupt file is unusable: remove it now, so a failed re-download cannot leave it in place.
    if (check.status === 'corrupt') await rm(modelFilePath(opts.modelsDir, files.repo, f.path), { force: true });
    out.push(await downloadFile(endpoint, files, f, check.expectedSha256, opts));
  }
  return out;
}

function fileUrl(endpoint: string, files: ModelFiles, file: string): string {
  const enc = (p: string) => p.split('/').map(encodeURIComponent).join('/');
  return `${endpoint}/${enc(files.repo)}/resolve/${encodeURIComponent(files.revision)}/${enc(file)}`;
}

async function downloadFile(
  endpoint: string,
  files: ModelFiles,
  f: ModelFiles['files'][number],
  expected: string | null,
  opts: PullOptions,
): Promise<PulledFile> {
  const dest = modelFilePath(opts.modelsDir, files.repo, f.path);
  const url = fileUrl(endpoint, files, f.path);
  const headers: Record<string, string> = { 'user-agent': 'tsfm-service model store' };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let res: Response;
  try {
    res = await fetch(url, { headers, redirect: 'follow', signal: opts.signal });
  } catch (err) {
    throw new StoreError('network', f.path, `cannot reach ${url}: ${(err as Error).message}`);
  }
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    if (res.status === 404) throw new StoreError('not_found', f.path, `${url}: 404 not found (check the repo, revision and file name)`);
    if (res.status === 401 || res.status === 403) {
      throw new StoreError('unauthorized', f.path, `${url}: ${res.status}; a gated or private model needs HF_TOKEN`);
    }
    throw new StoreError('http', f.path, `${url}: HTTP ${res.status}`);
  }
  const length = Number(res.headers.get('content-length'));
  const total = f.size ?? (Number.isFinite(length) && length > 0 ? length : null);

  await mkdir(path.dirname(dest), { recursive: true });
  const tmp = `${dest}.part-${process.pid}-${randomBytes(4).toString('hex')}`;
  const hash = createHash('sha256');
  let received = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      received += chunk.length;
      opts.onProgress?.({ file: f.path, received, total, phase: 'downloading' });
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), meter, createWriteStream(tmp, { flags: 'wx' }), {
      signal: opts.signal,
    });
    const sha256 = hash.digest('hex');
    if (f.size !== undefined && received !== f.size) {
      throw new StoreError('size_mismatch', f.path, `${f.path}: received ${received} bytes, expected ${f.size}; not installed`);
    }
    if (expected && sha256 !== expected) {
      const what = f.sha256 ? 'the pinned' : 'the one recorded at its first download';
      throw new StoreError('hash_mismatch', f.path, `${f.path}: sha256 ${sha256} does not match ${what} ${expected}; not installed`);
    }
    await rename(tmp, dest);
    if (!expected) await recordHash(modelDir(opts.modelsDir, files.repo), files.revision, f.path, sha256, received);
    opts.onProgress?.({ file: f.path, received, total, phase: 'done' });
    return { path: f.path, status: 'downloaded', bytes: received, sha256 };
  } catch (err) {
    await rm(tmp, { force: true });
    if (err instanceof StoreError) throw err;
    throw new StoreError('network', f.path, `${url}: download failed: ${(err as Error).message}`);
  }
}
