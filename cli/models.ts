/**
 * Model store command line: `npm run models -- <command>`.
 *   list               every model of the registry, with the state of its files
 *   pull <model-id> [--trust-on-first-use]
 *                      download a model's files from the hub (HF_ENDPOINT, HF_TOKEN), each verified
 *                      against its pin or its verified manifest; files nothing pins are refused
 *                      unless --trust-on-first-use (which records their sha256 for later checks)
 *   verify [model-id]  re-hash the files of one or all models
 * Reads MODELS_DIR (default DATA_DIR/models, DATA_DIR default ./data), HF_ENDPOINT
 * (default https://huggingface.co), HF_TOKEN and MODELS_MAX_FILE_BYTES (largest file of unknown
 * size accepted, default 4 GiB) from the environment.
 */
import path from 'node:path';
import { MODEL_IMPLS } from '../src/engine/registry.ts';
import { DEFAULT_HF_ENDPOINT, DEFAULT_MAX_FILE_BYTES, pullModel, StoreError, verifyModel } from '../src/engine/store/index.ts';
import type { PullProgress } from '../src/engine/store/index.ts';
import type { ModelImpl } from '../src/engine/types.ts';

const env = process.env;
const nonEmpty = (v: string | undefined) => (v && v.trim() !== '' ? v.trim() : undefined);
const modelsDir = path.resolve(nonEmpty(env.MODELS_DIR) ?? path.join(nonEmpty(env.DATA_DIR) ?? './data', 'models'));
const endpoint = nonEmpty(env.HF_ENDPOINT) ?? DEFAULT_HF_ENDPOINT;
const token = nonEmpty(env.HF_TOKEN);
const maxFileBytes = nonEmpty(env.MODELS_MAX_FILE_BYTES) ? Number(env.MODELS_MAX_FILE_BYTES) : DEFAULT_MAX_FILE_BYTES;

const usage = `usage: npm run models -- list | pull <model-id> [--trust-on-first-use] | verify [model-id]
  MODELS_DIR=${modelsDir}
  MODELS_MAX_FILE_BYTES=${maxFileBytes}
  HF_ENDPOINT=${endpoint}${token ? '\n  HF_TOKEN is set' : ''}`;

function withFiles(): ModelImpl[] {
  return MODEL_IMPLS.filter((m) => m.files);
}

function find(id: string | undefined): ModelImpl {
  const impl = MODEL_IMPLS.find((m) => m.info.id === id);
  if (!id || !impl) {
    const ids = withFiles()
      .map((m) => `  ${m.info.id}`)
      .join('\n');
    throw new UsageError(`${id ? `unknown model ${id}` : 'a model id is needed'}; models with files:\n${ids}`);
  }
  if (!impl.files) throw new UsageError(`${id} needs no download (no weights)`);
  return impl;
}

class UsageError extends Error {}

const mb = (n: number) => (n / 1e6).toFixed(1);

function progressPrinter(): (p: PullProgress) => void {
  const tty = process.stderr.isTTY;
  let start = Date.now();
  let lastPrint = 0;
  return (p) => {
    if (p.phase === 'checking') {
      start = Date.now();
      return;
    }
    if (p.phase === 'skipped') {
      process.stderr.write(`  ${p.file}: already present and verified, skipped\n`);
      return;
    }
    const now = Date.now();
    const rate = p.received / Math.max(0.001, (now - start) / 1000);
    const pct = p.total ? ` ${((100 * p.received) / p.total).toFixed(0).padStart(3)} %` : '';
    const line = `  ${p.file}:${pct} ${mb(p.received)}${p.total ? `/${mb(p.total)}` : ''} MB, ${mb(rate)} MB/s`;
    if (p.phase === 'done') process.stderr.write(`${tty ? '\r' : ''}${line}, sha256 verified\n`);
    else if (tty && now - lastPrint > 100) {
      lastPrint = now;
      process.stderr.write(`\r${line}`);
    }
  };
}

async function list(): Promise<void> {
  console.log(`models in ${modelsDir}`);
  for (const impl of MODEL_IMPLS) {
    if (!impl.files) {
      console.log(`${impl.info.id}  built in (no download)`);
      continue;
    }
    const check = await verifyModel(impl.files, modelsDir);
    const state = check.ok ? 'available' : `not downloaded: npm run models -- pull ${impl.info.id}`;
    console.log(`${impl.info.id}  ${state}`);
    for (const f of check.files) console.log(`    ${f.path}  ${f.status}${f.size !== null ? `  ${f.size} B` : ''}`);
  }
}

async function pull(id: string | undefined, trustOnFirstUse: boolean): Promise<void> {
  const impl = find(id);
  if (!Number.isSafeInteger(maxFileBytes) || maxFileBytes < 1) throw new UsageError('MODELS_MAX_FILE_BYTES must be a positive integer');
  console.error(`pulling ${impl.info.id} (${impl.files!.revision}) from ${endpoint} into ${modelsDir}`);
  if (trustOnFirstUse) console.error('trust on first use: files nothing pins are accepted as served now, and their sha256 recorded');
  const files = await pullModel(impl, { modelsDir, endpoint, token, onProgress: progressPrinter(), trustOnFirstUse, maxFileBytes });
  const got = files.filter((f) => f.status === 'downloaded').length;
  console.error(`${impl.info.id}: ${got} downloaded, ${files.length - got} already present; all files verified`);
}

async function verify(id: string | undefined): Promise<boolean> {
  const impls = id ? [find(id)] : withFiles();
  let ok = true;
  for (const impl of impls) {
    const check = await verifyModel(impl.files!, modelsDir);
    ok &&= check.ok;
    console.log(`${impl.info.id}: ${check.ok ? 'verified' : 'NOT verified'}`);
    for (const f of check.files) console.log(`    ${f.path}  ${f.status}`);
  }
  return ok;
}

async function main(argv: string[]): Promise<number> {
  const flags = new Set(argv.filter((a) => a.startsWith('--')));
  const [cmd, arg] = argv.filter((a) => !a.startsWith('--'));
  const unknown = [...flags].filter((f) => f !== '--trust-on-first-use' && f !== '--help');
  if (unknown.length > 0) {
    console.error(`unknown option ${unknown.join(', ')}\n${usage}`);
    return 2;
  }
  try {
    switch (cmd) {
      case 'list':
        await list();
        return 0;
      case 'pull':
        await pull(arg, flags.has('--trust-on-first-use'));
        return 0;
      case 'verify':
        return (await verify(arg)) ? 0 : 1;
      default:
        console.error(usage);
        return cmd === undefined || cmd === 'help' ? 0 : 2;
    }
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`${err.message}\n${usage}`);
      return 2;
    }
    if (err instanceof StoreError) {
      console.error(`\nerror: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

process.exitCode = await main(process.argv.slice(2));
