import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { ModelFiles, ModelImpl } from '../types.ts';
import { recordedHash } from './record.ts';

/**
 * Models with weights live under MODELS_DIR laid out like the Hugging Face hub:
 * `<modelsDir>/<org>/<repo>/<file>`. A file is `verified` when its sha256 equals the pinned value
 * (or, for a file the catalog cannot pin yet, the value recorded at its first download: trust on
 * first use, see record.ts), `present` when it exists but there is nothing to compare with,
 * `corrupt` when its hash or size differs, and `missing` otherwise.
 */

export type FileStatus = 'verified' | 'present' | 'corrupt' | 'missing';

export interface FileCheck {
  path: string;
  status: FileStatus;
  size: number | null;
  expectedSha256: string | null;
  sha256: string | null;
}

export interface ModelCheck {
  repo: string;
  revision: string;
  /** Every file verified (or present where no hash is pinned). */
  ok: boolean;
  files: FileCheck[];
}

/** Where a model file lives. Rejects paths that would escape the model's folder. */
export function modelFilePath(modelsDir: string, repo: string, file: string): string {
  const root = path.resolve(modelsDir, repo);
  const full = path.resolve(root, file);
  if (!repo.includes('/') || repo.split('/').some((p) => p === '' || p === '.' || p === '..') || !full.startsWith(root + path.sep)) {
    throw new Error(`unsafe model path: ${repo}/${file}`);
  }
  return full;
}

/** The folder of one model repository under MODELS_DIR. */
export function modelDir(modelsDir: string, repo: string): string {
  return path.dirname(modelFilePath(modelsDir, repo, '_'));
}

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export async function checkFile(modelsDir: string, files: Pick<ModelFiles, 'repo' | 'revision'>, f: ModelFiles['files'][number]): Promise<FileCheck> {
  const full = modelFilePath(modelsDir, files.repo, f.path);
  const recorded = f.sha256 ? null : await recordedHash(modelDir(modelsDir, files.repo), files.revision, f.path);
  const expected = f.sha256 ?? recorded?.sha256 ?? null;
  const expectedSize = f.size ?? recorded?.size;
  const base = { path: f.path, expectedSha256: expected };
  let size: number;
  try {
    const st = await stat(full);
    if (!st.isFile()) return { ...base, status: 'missing', size: null, sha256: null };
    size = st.size;
  } catch {
    return { ...base, status: 'missing', size: null, sha256: null };
  }
  if (expectedSize !== undefined && expectedSize !== size) return { ...base, status: 'corrupt', size, sha256: null };
  if (!expected) return { ...base, status: 'present', size, sha256: null };
  const sha256 = await sha256File(full);
  return { ...base, status: sha256 === expected ? 'verified' : 'corrupt', size, sha256 };
}

export async function verifyModel(files: ModelFiles, modelsDir: string): Promise<ModelCheck> {
  const checks: FileCheck[] = [];
  for (const f of files.files) checks.push(await checkFile(modelsDir, files, f));
  return {
    repo: files.repo,
    revision: files.revision,
    ok: checks.every((c) => c.status === 'verified' || c.status === 'present'),
    files: checks,
  };
}

/** What the catalog says about a model: available, or how an operator makes it available. */
export async function modelAvailability(impl: ModelImpl, modelsDir: string): Promise<{ available: boolean; unavailableReason?: string }> {
  if (!impl.files) return { available: true };
  const check = await verifyModel(impl.files, modelsDir);
  if (check.ok) return { available: true };
  const bad = check.files.filter((f) => f.status === 'missing' || f.status === 'corrupt');
  const what = bad.map((f) => `${f.path} ${f.status === 'missing' ? 'not downloaded' : 'does not match its pinned sha256'}`);
  return { available: false, unavailableReason: `${what.join('; ')}: run \`npm run models -- pull ${impl.info.id}\`` };
}
