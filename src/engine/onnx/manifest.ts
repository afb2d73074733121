import { readFile } from 'node:fs/promises';
import { z } from 'zod';

/**
 * The `manifest.json` the sktime export repos carry (schema_version 1): the artifact's file
 * name, size and sha256, and the graph contract with the output's quantile levels.
 */
const dim = z.union([z.number().int(), z.string()]);
const manifestSchema = z.object({
  schema_version: z.number().int(),
  artifact: z
    .object({
      filename: z.string(),
      bytes: z.number().int().optional(),
      sha256: z.string().optional(),
    })
    .optional(),
  contract: z.object({
    inputs: z.array(z.object({ name: z.string(), dtype: z.string(), shape: z.array(dim) })),
    output: z.object({
      name: z.string(),
      dtype: z.string(),
      shape: z.array(dim),
      levels: z.array(z.number()).nullable().optional(),
    }),
  }),
});

export type OnnxManifest = z.infer<typeof manifestSchema>;

/** Reads `manifest.json` beside the graph; null when absent. A malformed one is an error. */
export async function readManifest(path: string): Promise<OnnxManifest | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const parsed = manifestSchema.safeParse(JSON.parse(text));
  if (!parsed.success) {
    throw new Error(`${path}: not a schema_version 1 manifest (${parsed.error.issues[0]?.message ?? 'invalid'})`);
  }
  if (parsed.data.schema_version !== 1) {
    throw new Error(`${path}: manifest schema_version ${parsed.data.schema_version} is not supported`);
  }
  return parsed.data;
}
