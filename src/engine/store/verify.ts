import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { ModelFiles, ModelImpl } from '../types.ts';
import { recordedHash } from './record.ts';

/**
 * Models with weights live under MODELS_DIR laid out like the Hugging Face hub:
 * `<modelsDir>/<org>/<repo>/<file>`. A file is `verified` when its sha256 (and size) equal the
 * expected value, `present` when it exists but nothing says what it should be (never usable),
 * `corrupt` when its hash or size differs, and `missing` otherwise.
 *
 * The expected value, in order of trust: the catalog's pin; for the file a repo's
 * `manifest.json` describes (`artifact.filename`), the manifest's own `artifact.sha256` and
 * `artifact.bytes`, once the manifest itself is verified; and only for a pull the operator
 * explicitly allowed to trust on first use, the value recorded then (record.ts).
 */

export type FileStatus = 'verified' | 'present' | 'corrupt' | 'missing';

export interface FileCheck {
  path: string;
  status: FileStatus;
  size: number | null;
  expectedSha256: string | null;
  /** Where the expected value comes from. */
  expectedFrom: ExpectedFrom | null;
  sha256: string | null;
}

export type ExpectedFrom = 'pin' | 'manifest' | 'recorded';

export interface Expected {
  sha256: string;
  size: number | undefined;
  from: ExpectedFrom;
}

export interface ModelCheck {
  repo: string;
  revision: string;
  /** Every file verified. */
  ok: boolean;
  files: FileCheck[];
}

/** The manifest a repo may carry: what its main artifact is (sktime's exporter writes this). */
export const MANIFEST_FILE = 'manifest.json';
const artifactSchema = z.object({
  artifact: z
    .object({
      filename: z.string(),
      bytes: z.number().int().nonnegative().optional(),
      sha256: z
        .string()
        .regex(/^[0-9a-f]{64}$/)
        .optional(),
    })
    .optional(),
});
export type ManifestArtifact = NonNullable<z.infer<typeof artifactSchema>['artifact']>;

/** The artifact a (verified) manifest file describes; null when it names none or cannot be read. */
export async function manifestArtifact(file: string): Promise<ManifestArtifact | null> {
  try {
    const parsed = artifactSchema.safeParse(JSON.parse(await readFile(file, 'utf8')));
    return parsed.success ? (parsed.data.artifact ?? null) : null;
  } catch {
    return null;
  }
}

/** What a file must hash to, or null when nothing says (see the order above). */
export async function expectedOf(
  modelsDir: string,
  files: Pick<ModelFiles, 'repo' | 'revision'>,
  f: ModelFiles['files'][number],
  artifact: ManifestArtifact | null,
): Promise<Expected | null> {
  if (f.sha256) return { sha256: f.sha256, size: f.size, from: 'pin' };
  if (artifact?.sha256 && artifact.filename === f.path) return { sha256: artifact.sha256, size: artifact.bytes, from: 'manifest' };
  const recorded = await recordedHash(modelDir(modelsDir, files.repo), files.revision, f.path);
  return recorded ? { sha256: recorded.sha256, size: recorded.size, from: 'recorded' } : null;
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

export async function checkFile(
  modelsDir: string,
  files: Pick<ModelFiles, 'repo' | 'revision'>,
  f: ModelFiles['files'][number],
  artifact: ManifestArtifact | null = null,
): Promise<FileCheck> {
  const full = modelFilePath(modelsDir, files.repo, f.path);
  const expected = await expectedOf(modelsDir, files, f, artifact);
  const base = { path: f.path, expectedSha256: expected?.sha256 ?? null, expectedFrom: expected?.from ?? null };
  let size: number;
  try {
    const st = await stat(full);
    if (!st.isFile()) return { ...base, status: 'missing', size: null, sha256: null };
    size = st.size;
  } catch {
    return { ...base, status: 'missing', size: null, sha256: null };
  }
  if (!expected) return { ...base, status: 'present', size, sha256: null };
  if (expected.size !== undefined && expected.size !== size) return { ...base, status: 'corrupt', size, sha256: null };
  const sha256 = await sha256File(full);
  return { ...base, status: sha256 === expected.sha256 ? 'verified' : 'corrupt', size, sha256 };
}

/** The manifest first: once it is verified, its artifact's sha256 and size are what the graph must match. */
export const manifestFirst = <T extends { path: string }>(list: T[]): T[] => [
  ...list.filter((f) => f.path === MANIFEST_FILE),
  ...list.filter((f) => f.path !== MANIFEST_FILE),
];

export async function verifyModel(files: ModelFiles, modelsDir: string): Promise<ModelCheck> {
  const checks: FileCheck[] = [];
  let artifact: ManifestArtifact | null = null;
  for (const f of manifestFirst(files.files)) {
    const c = await checkFile(modelsDir, files, f, artifact);
    if (f.path === MANIFEST_FILE && c.status === 'verified') artifact = await manifestArtifact(modelFilePath(modelsDir, files.repo, f.path));
    checks.push(c);
  }
  const order = new Map(files.files.map((f, i) => [f.path, i]));
  checks.sort((a, b) => (order.get(a.path) ?? 0) - (order.get(b.path) ?? 0));
  return { repo: files.repo, revision: files.revision, ok: checks.every((c) => c.status === 'verified'), files: checks };
}

/** What the catalog says about a model: available, or how an operator makes it available. */
export async function modelAvailability(impl: ModelImpl, modelsDir: string): Promise<{ available: boolean; unavailableReason?: string }> {
  if (!impl.files) return { available: true };
  const check = await verifyModel(impl.files, modelsDir);
  if (check.ok) return { available: true };
  const bad = check.files.filter((f) => f.status !== 'verified');
  const source = { pin: 'pinned', manifest: "manifest's", recorded: 'recorded' } as const;
  const why = (f: FileCheck) =>
    f.status === 'missing'
      ? 'not downloaded'
      : f.status === 'present'
        ? 'cannot be verified (no pinned sha256)'
        : `does not match its ${f.expectedFrom ? source[f.expectedFrom] : 'expected'} sha256`;
  const what = bad.map((f) => `${f.path} ${why(f)}`);
  return { available: false, unavailableReason: `${what.join('; ')}: run \`npm run models -- pull ${impl.info.id}\`` };
}
