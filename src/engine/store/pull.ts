import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { ModelFiles, ModelImpl } from '../types.ts';
import { recordHash } from './record.ts';
import {
  checkFile,
  type Expected,
  expectedOf,
  MANIFEST_FILE,
  type ManifestArtifact,
  manifestArtifact,
  manifestFirst,
  modelDir,
  modelFilePath,
} from './verify.ts';

/**
 * Downloads a model's files from a Hugging Face-compatible hub:
 * `<endpoint>/<repo>/resolve/<revision>/<file>` (redirects followed; the token is sent as
 * `Authorization: Bearer` and, as fetch does, dropped on a redirect to another origin, which is
 * how the hub's signed CDN links expect it).
 *
 * Each file is streamed to a temporary file in the target folder while its sha256 is computed,
 * then renamed over the final name only if the hash and size match the expected values: a partial
 * or corrupt download is never visible under the real name. Files already present and verified are
 * skipped, so pulling again is safe and cheap.
 *
 * What a file must match (verify.ts): the catalog's pin; for the artifact a repo's
 * `manifest.json` names, the manifest's own sha256 and size (the manifest is pulled and verified
 * first); nothing else unless the operator allows trust on first use (`trustOnFirstUse`), which
 * records what was received (record.ts). Without any of these a file is refused before download.
 *
 * Size caps: a download stops as soon as it exceeds the expected size, or `maxFileBytes` when no
 * size is known, whether or not the server announced a Content-Length.
 */

/** Default cap on one file of unknown size (MODELS_MAX_FILE_BYTES). */
export const DEFAULT_MAX_FILE_BYTES = 4 * 1024 ** 3;

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
  /**
   * Accept files nothing pins (no catalog pin, not described by a verified manifest) and record
   * their sha256 for later checks. Off by default: a moving revision could serve anything.
   */
  trustOnFirstUse?: boolean;
  /** Largest file accepted when its size is not pinned (default DEFAULT_MAX_FILE_BYTES). */
  maxFileBytes?: number;
}

export interface PulledFile {
  path: string;
  status: 'downloaded' | 'skipped';
  bytes: number;
  sha256: string | null;
}

export type StoreErrorKind = 'not_found' | 'unauthorized' | 'http' | 'hash_mismatch' | 'size_mismatch' | 'too_large' | 'unpinned' | 'network';

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
  let artifact: ManifestArtifact | null = null;
  for (const f of manifestFirst(files.files)) {
    opts.onProgress?.({ file: f.path, received: 0, total: f.size ?? null, phase: 'checking' });
    const check = await checkFile(opts.modelsDir, files, f, artifact);
    if (check.status === 'verified') {
      opts.onProgress?.({ file: f.path, received: check.size ?? 0, total: check.size, phase: 'skipped' });
      out.push({ path: f.path, status: 'skipped', bytes: check.size ?? 0, sha256: check.sha256 });
    } else {
      const expected = await expectedOf(opts.modelsDir, files, f, artifact);
      if (!expected && !opts.trustOnFirstUse) {
        throw new StoreError(
          'unpinned',
          f.path,
          `${files.repo}/${f.path}: no pinned sha256 (catalog or verified ${MANIFEST_FILE}) at revision ${files.revision}; ` +
            'pin it in the catalog (docs/models-onnx.md), or accept what the hub serves now with --trust-on-first-use',
        );
      }
      // A corrupt or unverifiable file is unusable: remove it now, so a failed download cannot leave it in place.
      if (check.status === 'corrupt' || check.status === 'present') await rm(modelFilePath(opts.modelsDir, files.repo, f.path), { force: true });
      out.push(await downloadFile(endpoint, files, f, expected, opts));
    }
    if (f.path === MANIFEST_FILE) artifact = await manifestArtifact(modelFilePath(opts.modelsDir, files.repo, f.path));
  }
  const order = new Map(files.files.map((f, i) => [f.path, i]));
  return out.sort((a, b) => (order.get(a.path) ?? 0) - (order.get(b.path) ?? 0));
}

function fileUrl(endpoint: string, files: ModelFiles, file: string): string {
  const enc = (p: string) => p.split('/').map(encodeURIComponent).join('/');
  return `${endpoint}/${enc(files.repo)}/resolve/${encodeURIComponent(files.revision)}/${enc(file)}`;
}

async function downloadFile(
  endpoint: string,
  files: ModelFiles,
  f: ModelFiles['files'][number],
  expected: Expected | null,
  opts: PullOptions,
): Promise<PulledFile> {
  // The largest number of bytes accepted: the expected size when known, else the cap.
  const limit = expected?.size ?? opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
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
  const announced = res.headers.get('content-length') !== null && Number.isFinite(length) ? length : null;
  if (announced !== null && announced > limit) {
    await res.body.cancel();
    throw new StoreError('too_large', f.path, `${url}: ${announced} bytes announced, more than the ${limit} accepted; not downloaded`);
  }
  const total = expected?.size ?? (announced !== null && announced > 0 ? announced : null);

  await mkdir(path.dirname(dest), { recursive: true });
  const tmp = `${dest}.part-${process.pid}-${randomBytes(4).toString('hex')}`;
  const hash = createHash('sha256');
  let received = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      received += chunk.length;
      // Checked as bytes arrive: a server that sends no (or a false) Content-Length cannot fill the disk.
      if (received > limit) {
        done(new StoreError('too_large', f.path, `${url}: more than the ${limit} bytes accepted; download stopped`));
        return;
      }
      hash.update(chunk);
      opts.onProgress?.({ file: f.path, received, total, phase: 'downloading' });
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), meter, createWriteStream(tmp, { flags: 'wx' }), {
      signal: opts.signal,
    });
    const sha256 = hash.digest('hex');
    if (expected?.size !== undefined && received !== expected.size) {
      throw new StoreError('size_mismatch', f.path, `${f.path}: received ${received} bytes, expected ${expected.size}; not installed`);
    }
    if (expected && sha256 !== expected.sha256) {
      const what = { pin: 'the pinned', manifest: `the ${MANIFEST_FILE}`, recorded: 'the one recorded at its first download' }[expected.from];
      throw new StoreError('hash_mismatch', f.path, `${f.path}: sha256 ${sha256} does not match ${what} ${expected.sha256}; not installed`);
    }
    await rename(tmp, dest);
    if (!expected) await recordHash(modelDir(opts.modelsDir, files.repo), files.revision, f.path, sha256, received);
    opts.onProgress?.({ file: f.path, received, total, phase: 'done' });
    return { path: f.path, status: 'downloaded', bytes: received, sha256 };
  } catch (err) {
    await rm(tmp, { force: true });
    if (err instanceof StoreError) throw err;
    const cause = (err as { cause?: unknown }).cause;
    if (cause instanceof StoreError) throw cause;
    throw new StoreError('network', f.path, `${url}: download failed: ${(err as Error).message}`);
  }
}
