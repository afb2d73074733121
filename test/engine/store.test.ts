import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { TTM_R2_FILES, ttmR2 } from '../../src/engine/neural/ttm/model.ts';
import { modelAvailability, modelDir, modelFilePath, pullModel, recordedHash, StoreError, verifyModel } from '../../src/engine/store/index.ts';
import type { PullProgress } from '../../src/engine/store/index.ts';
import type { ModelFiles } from '../../src/engine/types.ts';
import { modelsDir as sharedModels, repoRoot, skipWithoutWeights } from './ttm-fixtures.ts';

/** A stand-in for the hub: serves SHARED_DIR/models as `/<org>/<repo>/resolve/main/<file>`. */
interface Hub {
  url: string;
  requests: { path: string; headers: IncomingHttpHeaders }[];
  /** Files (repo-relative) served with one byte flipped. */
  corrupt: Set<string>;
  /** Answer resolve URLs with a 302 to /cdn/..., like the real hub. */
  redirect: boolean;
  server: Server;
}

async function startHub(): Promise<Hub> {
  const hub: Omit<Hub, 'url'> & { url: string } = {
    url: '',
    requests: [],
    corrupt: new Set(),
    redirect: false,
    server: createServer(),
  };
  hub.server.on('request', (req, res) => {
    const url = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    hub.requests.push({ path: url, headers: req.headers });
    const cdn = url.startsWith('/cdn/');
    const m = /^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/.exec(cdn ? url.slice(4) : url);
    const file = m ? path.join(sharedModels, m[1]!, m[2]!) : '';
    if (!m || !file.startsWith(sharedModels + path.sep) || !existsSync(file)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Entry not found');
      return;
    }
    if (hub.redirect && !cdn) {
      res.writeHead(302, { location: `/cdn${url}` }).end();
      return;
    }
    const body = readFileSync(file);
    if (hub.corrupt.has(`${m[1]}/${m[2]}`)) body[body.length >> 1] = body[body.length >> 1]! ^ 0xff;
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => hub.server.listen(0, '127.0.0.1', resolve));
  hub.url = `http://127.0.0.1:${(hub.server.address() as AddressInfo).port}`;
  return hub;
}

const made: string[] = [];
const freshDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'models-'));
  made.push(dir);
  return dir;
};
const repo = TTM_R2_FILES.repo;

describe('model store', { skip: skipWithoutWeights }, () => {
  let hub: Hub;
  before(async () => {
    hub = await startHub();
  });
  after(async () => {
    await new Promise<void>((resolve) => hub.server.close(() => resolve()));
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  });

  it('downloads, verifies and installs every file, reporting progress; a re-run skips them', async () => {
    const dir = freshDir();
    assert.equal(
      (await verifyModel(TTM_R2_FILES, dir)).files.every((f) => f.status === 'missing'),
      true,
    );
    const progress: PullProgress[] = [];
    const first = await pullModel(ttmR2, { modelsDir: dir, endpoint: hub.url, onProgress: (p) => progress.push(p) });
    assert.deepEqual(
      first.map((f) => [f.path, f.status]),
      [
        ['model.safetensors', 'downloaded'],
        ['config.json', 'downloaded'],
      ],
    );
    assert.equal(first[0]!.bytes, 3_240_592);
    const st = progress.filter((p) => p.file === 'model.safetensors' && p.phase === 'downloading');
    assert.ok(st.length > 1 && st.at(-1)!.received === 3_240_592 && st.at(-1)!.total === 3_240_592);
    const check = await verifyModel(TTM_R2_FILES, dir);
    assert.equal(check.ok, true);
    assert.deepEqual(
      check.files.map((f) => f.status),
      ['verified', 'verified'],
    );
    assert.deepEqual(await modelAvailability(ttmR2, dir), { available: true });
    assert.deepEqual(readdirSync(path.join(dir, repo)).sort(), ['config.json', 'model.safetensors']);

    const before2 = hub.requests.length;
    const second = await pullModel(ttmR2, { modelsDir: dir, endpoint: hub.url });
    assert.deepEqual(
      second.map((f) => f.status),
      ['skipped', 'skipped'],
    );
    assert.equal(hub.requests.length, before2, 'nothing is fetched again');
  });

  it('follows the hub redirect and sends HF_TOKEN as a Bearer token', async () => {
    const dir = freshDir();
    hub.redirect = true;
    hub.requests.length = 0;
    try {
      await pullModel(TTM_R2_FILES, { modelsDir: dir, endpoint: hub.url, token: 'hf_secret' });
    } finally {
      hub.redirect = false;
    }
    const resolves = hub.requests.filter((r) => r.path.includes('/resolve/') && !r.path.startsWith('/cdn/'));
    assert.equal(resolves.length, 2);
    for (const r of resolves) assert.equal(r.headers.authorization, 'Bearer hf_secret');
    assert.deepEqual(
      resolves.map((r) => r.path),
      [`/${repo}/resolve/main/model.safetensors`, `/${repo}/resolve/main/config.json`],
    );
    assert.equal((await verifyModel(TTM_R2_FILES, dir)).ok, true);
  });

  it('sends no Authorization header without a token', async () => {
    hub.requests.length = 0;
    await pullModel(TTM_R2_FILES, { modelsDir: freshDir(), endpoint: hub.url });
    assert.ok(hub.requests.length > 0);
    for (const r of hub.requests) assert.equal(r.headers.authorization, undefined);
  });

  it('rejects a download whose hash is wrong and leaves no file behind', async () => {
    const dir = freshDir();
    hub.corrupt.add(`${repo}/model.safetensors`);
    try {
      await assert.rejects(
        pullModel(ttmR2, { modelsDir: dir, endpoint: hub.url }),
        (err: unknown) =>
          err instanceof StoreError && err.kind === 'hash_mismatch' && err.file === 'model.safetensors' && /does not match the pinned/.test(err.message),
      );
    } finally {
      hub.corrupt.clear();
    }
    const folder = path.join(dir, repo);
    assert.deepEqual(existsSync(folder) ? readdirSync(folder) : [], [], 'no final file and no temporary file');
    const avail = await modelAvailability(ttmR2, dir);
    assert.equal(avail.available, false);
    assert.match(avail.unavailableReason ?? '', /npm run models -- pull ibm-granite\/granite-timeseries-ttm-r2/);
  });

  it('reports a corrupted local file, removes it and replaces it with a verified one', async () => {
    const dir = freshDir();
    await pullModel(ttmR2, { modelsDir: dir, endpoint: hub.url });
    const file = modelFilePath(dir, repo, 'model.safetensors');
    const bytes = readFileSync(file);
    bytes[100] = bytes[100]! ^ 1;
    writeFileSync(file, bytes);
    const check = await verifyModel(TTM_R2_FILES, dir);
    assert.equal(check.ok, false);
    assert.equal(check.files[0]!.status, 'corrupt');
    assert.equal(check.files[1]!.status, 'verified');
    const again = await pullModel(ttmR2, { modelsDir: dir, endpoint: hub.url });
    assert.deepEqual(
      again.map((f) => f.status),
      ['downloaded', 'skipped'],
    );
    assert.equal((await verifyModel(TTM_R2_FILES, dir)).ok, true);
  });

  it('reports a 404 clearly and installs nothing', async () => {
    const dir = freshDir();
    const missing: ModelFiles = { repo, revision: 'main', files: [{ path: 'no-such-file.bin', sha256: null }] };
    await assert.rejects(
      pullModel(missing, { modelsDir: dir, endpoint: hub.url, trustOnFirstUse: true }),
      (err: unknown) => err instanceof StoreError && err.kind === 'not_found' && /404/.test(err.message),
    );
    assert.equal(existsSync(modelFilePath(dir, repo, 'no-such-file.bin')), false);
    const otherRepo: ModelFiles = { repo: 'nobody/nothing', revision: 'main', files: [{ path: 'model.safetensors', sha256: null }] };
    await assert.rejects(pullModel(otherRepo, { modelsDir: dir, endpoint: hub.url, trustOnFirstUse: true }), /404/);
  });

  it('records the hash of an unpinned file at its first download (when trust on first use is asked for) and holds later pulls to it', async () => {
    const dir = freshDir();
    const unpinned: ModelFiles = { repo, revision: 'main', files: [{ path: 'config.json', sha256: null }] };
    assert.equal((await verifyModel(unpinned, dir)).files[0]!.status, 'missing');
    await assert.rejects(pullModel(unpinned, { modelsDir: dir, endpoint: hub.url }), (err: unknown) => err instanceof StoreError && err.kind === 'unpinned');
    const [first] = await pullModel(unpinned, { modelsDir: dir, endpoint: hub.url, trustOnFirstUse: true });
    assert.equal(first!.status, 'downloaded');
    assert.equal((await recordedHash(modelDir(dir, repo), 'main', 'config.json'))?.sha256, TTM_R2_FILES.files[1]!.sha256);
    assert.equal((await verifyModel(unpinned, dir)).files[0]!.status, 'verified');
    assert.equal((await pullModel(unpinned, { modelsDir: dir, endpoint: hub.url }))[0]!.status, 'skipped');
    // The local copy is damaged, and the hub now serves different bytes: both are refused.
    writeFileSync(modelFilePath(dir, repo, 'config.json'), '{"tampered": true}');
    assert.equal((await verifyModel(unpinned, dir)).files[0]!.status, 'corrupt');
    hub.corrupt.add(`${repo}/config.json`);
    try {
      await assert.rejects(pullModel(unpinned, { modelsDir: dir, endpoint: hub.url }), /recorded at its first download/);
    } finally {
      hub.corrupt.clear();
    }
    assert.equal(existsSync(modelFilePath(dir, repo, 'config.json')), false);
    assert.equal((await pullModel(unpinned, { modelsDir: dir, endpoint: hub.url }))[0]!.status, 'downloaded');
  });

  it('refuses file names that would escape the models folder', () => {
    assert.throws(() => modelFilePath('/m', repo, '../../etc/passwd'), /unsafe/);
    assert.throws(() => modelFilePath('/m', '../x', 'a'), /unsafe/);
  });

  it('npm run models -- pull / verify / list work from the environment', async () => {
    const dir = freshDir();
    const run = (...args: string[]) =>
      promisify(execFile)(process.execPath, [path.join(repoRoot, 'cli', 'models.ts'), ...args], {
        env: { ...process.env, MODELS_DIR: dir, HF_ENDPOINT: hub.url, HF_TOKEN: 'hf_cli' },
      });
    hub.requests.length = 0;
    const pulled = await run('pull', repo);
    assert.match(pulled.stderr, /model\.safetensors:.*sha256 verified/);
    assert.equal(hub.requests[0]?.headers.authorization, 'Bearer hf_cli');
    const verified = await run('verify', repo);
    assert.match(verified.stdout, /ibm-granite\/granite-timeseries-ttm-r2: verified/);
    const listed = await run('list');
    assert.match(listed.stdout, /granite-timeseries-ttm-r2 {2}available/);
    await assert.rejects(run('pull', 'nobody/unknown'), /unknown model/);
  });
});
