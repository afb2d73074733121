import { statSync } from 'node:fs';
import path from 'node:path';
import type { ModelImpl } from './types.ts';

export const NOT_DOWNLOADED = (id: string): string => `not downloaded: run npm run models -- pull ${id}`;

/**
 * Whether every file a model needs exists under MODELS_DIR, laid out like the hub
 * (`<modelsDir>/<org>/<repo>/<file>`). Only presence is checked here; sha256 verification belongs
 * to the model store. Models without files (the built-ins) are always present.
 */
export function filesPresent(impl: ModelImpl, modelsDir: string): boolean {
  if (!impl.files) return true;
  const root = path.resolve(modelsDir, impl.files.repo);
  return impl.files.files.every((f) => {
    const full = path.resolve(root, f.path);
    if (!full.startsWith(root + path.sep)) return false;
    try {
      return statSync(full).isFile();
    } catch {
      return false;
    }
  });
}

/**
 * A cheap fingerprint of a model's files on disk (paths, sizes, modification times), or null when
 * one is missing: a changed fingerprint means the files must be verified again.
 */
export function filesStamp(impl: ModelImpl, modelsDir: string): string | null {
  if (!impl.files) return '';
  const root = path.resolve(modelsDir, impl.files.repo);
  const parts: string[] = [];
  for (const f of impl.files.files) {
    const full = path.resolve(root, f.path);
    if (!full.startsWith(root + path.sep)) return null;
    try {
      const st = statSync(full);
      if (!st.isFile()) return null;
      parts.push(`${f.path}:${st.size}:${st.mtimeMs}`);
    } catch {
      return null;
    }
  }
  return parts.join('|');
}
