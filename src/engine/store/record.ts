import { randomBytes } from 'node:crypto';
import { readFile, rename, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * Trust on first use for files the catalog cannot pin yet (`sha256: null`): the store records the
 * sha256 and size of the first complete download in `<modelsDir>/<repo>/.tsfm-store.json`, keyed by
 * revision and path, and every later check or pull must match it.
 */

export interface RecordedFile {
  sha256: string;
  size: number;
  recordedAt: string;
}

type RecordFile = Record<string, RecordedFile>;

const NAME = '.tsfm-store.json';
const key = (revision: string, file: string) => `${revision}:${file}`;

async function load(dir: string): Promise<RecordFile> {
  try {
    const parsed: unknown = JSON.parse(await readFile(path.join(dir, NAME), 'utf8'));
    return typeof parsed === 'object' && parsed !== null ? (parsed as RecordFile) : {};
  } catch {
    return {};
  }
}

export async function recordedHash(modelDir: string, revision: string, file: string): Promise<RecordedFile | null> {
  return (await load(modelDir))[key(revision, file)] ?? null;
}

export async function recordHash(modelDir: string, revision: string, file: string, sha256: string, size: number): Promise<void> {
  await mkdir(modelDir, { recursive: true });
  const all = await load(modelDir);
  all[key(revision, file)] = { sha256, size, recordedAt: new Date().toISOString() };
  const tmp = path.join(modelDir, `${NAME}.${randomBytes(4).toString('hex')}`);
  await writeFile(tmp, `${JSON.stringify(all, null, 2)}\n`);
  await rename(tmp, path.join(modelDir, NAME));
}
