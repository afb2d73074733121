import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { modelAvailability, modelDir, pullModel, recordedHash, StoreError, verifyModel } from '../../src/engine/store/index.ts';
import type { ModelFiles, ModelImpl } from '../../src/engine/types.ts';

/**
 * Issue #12.14: every file is verified against a pin (catalog, or the verified manifest's own
 * sha256 for the graph it describes); trust on first use only when the operator asks for it;
 * downloads are capped, whether or not the server announces their length.
 */
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

interface Hub {
  url: string;
  server: Server;
  /** Paths answered as an endless stream without Content-Length. */
  endless: Set<string>;
  requests: string[];
}

async function startHub(root: string): Promise<Hub> {
  const hub: Hub = { url: '', server: createServer(), endless: new Set(), requests: [] };
  hub.server.on('request', (req, res) => {
    const url = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    hub.requests.push(url);
    const m = /^\/([^/]+\/[^/]+)\/resolve\/[^/]+\/(.+)$/.exec(url);
    if (m && hub.endless.has(`${m[1]}/${m[2]}`)) {
      // Chunked, no Content-Length, never ends on its own.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 1);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      res.on('close', () => res.removeAllListeners('drain'));
      pump();
      return;
    }
    const file = m ? path.resolve(root, m[1] ?? '', m[2] ?? '') : '';
    if (!m || !file.startsWith(root + path.sep) || !existsSync(file)) {
      res.writeHead(404).end('Entry not found');
      return;
    }
    res.end(readFileSync(file));
  });
  await new Promise<void>((resolve) => hub.server.listen(0, '127.0.0.1', resolve));
  hub.url = `http://127.0.0.1:${(hub.server.address() as AddressInfo).port}`;
  return hub;
}

describe('model store: pins, manifest chain and size caps', () => {
  const hubDir = mkdtempSync(path.join(tmpdir(), 'pin-hub-'));
  const made: string[] = [];
  const freshDir = () => {
    const d = mkdtempSync(path.join(tmpdir(), 'pin-models-'));
    made.push(d);
    return d;
  };
  let hub: Hub;
  const graph = Buffer.from('pretend ONNX graph bytes '.repeat(100));
  const publish = (repo: string, files: Record<string, Buffer | string>) => {
    mkdirSync(path.join(hubDir, repo), { recursive: true });
    for (const [name, body] of Object.entries(files)) writeFileSync(path.join(hubDir, repo, name), body);
  };
  const manifestFor = (bytes: Buffer, filename = 'model.onnx') =>
    JSON.stringify({ schema_version: 1, artifact: { filename, bytes: bytes.length, sha256: sha(bytes) } });
  const filesOf = (repo: string, pins: Record<string, string | null> = {}): ModelFiles => ({
    repo,
    revision: 'main',
    files: ['model.onnx', 'manifest.json', 'LICENSE'].map((p) => ({ path: p, sha256: pins[p] ?? null })),
  });

  before(async () => {
    hub = await startHub(hubDir);
    publish('org/good', { 'model.onnx': graph, 'manifest.json': manifestFor(graph), LICENSE: 'Apache-2.0\n' });
    // A manifest that does not describe the graph served beside it.
    const other = Buffer.from(graph);
    other[7] = 0x21;
    publish('org/swapped', { 'model.onnx': other, 'manifest.json': manifestFor(graph), LICENSE: 'x\n' });
    publish('org/endless', { 'manifest.json': '{"schema_version":1}', LICENSE: 'x\n' });
    hub.endless.add('org/endless/model.onnx');
  });
  after(async () => {
    hub.server.closeAllConnections();
    await new Promise<void>((resolve) => hub.server.close(() => resolve()));
    for (const d of [hubDir, ...made]) rmSync(d, { recursive: true, force: true });
  });

  it('refuses a model nothing pins unless trust on first use is asked for, downloading nothing', async () => {
    const dir = freshDir();
    await assert.rejects(
      pullModel(filesOf('org/good'), { modelsDir: dir, endpoint: hub.url }),
      (e: unknown) => e instanceof StoreError && e.kind === 'unpinned' && e.file === 'manifest.json' && /--trust-on-first-use/.test(e.message),
    );
    assert.equal(existsSync(path.join(dir, 'org/good')), false);
  });

  it("with a pinned manifest, the graph is verified against the manifest's own sha256 (no trust on first use)", async () => {
    const dir = freshDir();
    const manifest = manifestFor(graph);
    const files = filesOf('org/good', { 'manifest.json': sha(manifest), LICENSE: sha('Apache-2.0\n') });
    const pulled = await pullModel(files, { modelsDir: dir, endpoint: hub.url });
    assert.deepEqual(
      pulled.map((f) => [f.path, f.status]),
      [
        ['model.onnx', 'downloaded'],
        ['manifest.json', 'downloaded'],
        ['LICENSE', 'downloaded'],
      ],
    );
    // Nothing was recorded on trust: every file had a pin or a verified manifest behind it.
    assert.equal(existsSync(path.join(modelDir(dir, 'org/good'), '.tsfm-store.json')), false);
    const check = await verifyModel(files, dir);
    assert.equal(check.ok, true);
    assert.equal(check.files.find((f) => f.path === 'model.onnx')?.expectedFrom, 'manifest');
    // A graph changed on disk no longer matches the manifest.
    writeFileSync(path.join(dir, 'org/good/model.onnx'), Buffer.concat([graph, Buffer.from('x')]));
    const impl = { info: { id: 'org/good' }, files } as unknown as ModelImpl;
    const av = await modelAvailability(impl, dir);
    assert.equal(av.available, false);
    assert.match(av.unavailableReason ?? '', /model\.onnx does not match its manifest's sha256/);
  });

  it('a manifest that does not match its pin is refused, and so is a graph that does not match the manifest', async () => {
    const dir = freshDir();
    await assert.rejects(
      pullModel(filesOf('org/good', { 'manifest.json': sha('something else') }), { modelsDir: dir, endpoint: hub.url }),
      (e: unknown) => e instanceof StoreError && e.kind === 'hash_mismatch' && e.file === 'manifest.json',
    );
    assert.equal(existsSync(path.join(dir, 'org/good/manifest.json')), false);
    // Even trusting the manifest on first use, the graph must match what the manifest says.
    const dir2 = freshDir();
    await assert.rejects(
      pullModel(filesOf('org/swapped'), { modelsDir: dir2, endpoint: hub.url, trustOnFirstUse: true }),
      (e: unknown) => e instanceof StoreError && e.kind === 'hash_mismatch' && e.file === 'model.onnx' && /manifest\.json/.test(e.message),
    );
    assert.equal(existsSync(path.join(dir2, 'org/swapped/model.onnx')), false);
    assert.deepEqual(
      readdirSync(path.join(dir2, 'org/swapped')).filter((n) => n.includes('.part-')),
      [],
    );
  });

  it('trust on first use, when asked for, records the manifest and checks later pulls against it', async () => {
    const dir = freshDir();
    await pullModel(filesOf('org/good'), { modelsDir: dir, endpoint: hub.url, trustOnFirstUse: true });
    const rec = await recordedHash(modelDir(dir, 'org/good'), 'main', 'manifest.json');
    assert.equal(rec?.sha256, sha(manifestFor(graph)));
    // The graph is not recorded on trust: the manifest vouches for it.
    assert.equal(await recordedHash(modelDir(dir, 'org/good'), 'main', 'model.onnx'), null);
    const again = await pullModel(filesOf('org/good'), { modelsDir: dir, endpoint: hub.url });
    assert.ok(again.every((f) => f.status === 'skipped'));
  });

  it('a file present on disk that nothing pins is not usable', async () => {
    const dir = freshDir();
    mkdirSync(path.join(dir, 'org/good'), { recursive: true });
    for (const n of ['model.onnx', 'manifest.json', 'LICENSE']) writeFileSync(path.join(dir, 'org/good', n), 'copied by hand');
    const check = await verifyModel(filesOf('org/good'), dir);
    assert.equal(check.ok, false);
    assert.ok(check.files.every((f) => f.status === 'present'));
  });

  it('a download of unknown length is stopped at the cap and leaves nothing behind', async () => {
    const dir = freshDir();
    const files = filesOf('org/endless', { 'manifest.json': sha('{"schema_version":1}'), LICENSE: sha('x\n') });
    await assert.rejects(
      pullModel(files, { modelsDir: dir, endpoint: hub.url, trustOnFirstUse: true, maxFileBytes: 1024 * 1024 }),
      (e: unknown) => e instanceof StoreError && e.kind === 'too_large' && e.file === 'model.onnx',
    );
    assert.deepEqual(readdirSync(path.join(dir, 'org/endless')).sort(), ['manifest.json']);
  });

  it('an announced Content-Length above the expected size is refused before the body is read', async () => {
    const dir = freshDir();
    // The pin says 10 bytes; the hub serves the whole graph with its Content-Length.
    const files: ModelFiles = { repo: 'org/good', revision: 'main', files: [{ path: 'model.onnx', sha256: sha(graph), size: 10 }] };
    await assert.rejects(
      pullModel(files, { modelsDir: dir, endpoint: hub.url }),
      (e: unknown) => e instanceof StoreError && e.kind === 'too_large' && /announced/.test(e.message),
    );
  });
});
