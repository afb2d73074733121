import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { OutboundConfig } from '../../src/config.ts';
import { refusedAddress } from '../../src/outbound/address.ts';
import { createFetcher, OutboundError, type Resolver } from '../../src/outbound/fetcher.ts';

const base: OutboundConfig = { allowHttp: true, allowLoopback: true, timeoutMs: 2000, maxBytes: 1000, maxRedirects: 2 };

/** A resolver stub: no DNS traffic leaves the machine; records what was asked. */
function stub(answers: Record<string, string[]>): Resolver & { asked: string[] } {
  const asked: string[] = [];
  const r = (async (host: string) => {
    asked.push(host);
    const list = answers[host];
    if (!list) throw Object.assign(new Error(`no such host ${host}`), { code: 'ENOTFOUND' });
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  }) as Resolver & { asked: string[] };
  r.asked = asked;
  return r;
}

async function refusal(p: Promise<unknown>): Promise<OutboundError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof OutboundError, `expected an OutboundError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a refusal');
}

describe('refusedAddress', () => {
  const policy = { allowLoopback: false };
  for (const a of [
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '127.0.0.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254',
    '::ffff:10.0.0.1',
    '::ffff:127.0.0.1',
    '64:ff9b::a00:1',
    '2002:a00:1::',
  ]) {
    it(`refuses ${a}`, () => assert.ok(refusedAddress(a, policy)));
  }
  it('lets public unicast through', () => {
    assert.equal(refusedAddress('93.184.216.34', policy), null);
    assert.equal(refusedAddress('2606:4700:4700::1111', policy), null);
  });
  it('lets loopback through only when the operator allows it, and never private ranges', () => {
    assert.equal(refusedAddress('127.0.0.1', { allowLoopback: true }), null);
    assert.equal(refusedAddress('::1', { allowLoopback: true }), null);
    assert.ok(refusedAddress('10.0.0.1', { allowLoopback: true }));
    assert.ok(refusedAddress('169.254.169.254', { allowLoopback: true }));
  });
});

describe('outbound fetcher', () => {
  let server: Server;
  let port = 0;
  let hits = 0;
  before(async () => {
    server = createServer((req, res) => {
      hits += 1;
      if (req.url === '/big') {
        res.writeHead(200, { 'content-type': 'text/csv' });
        res.end('x'.repeat(5000));
      } else if (req.url === '/to-private') {
        res.writeHead(302, { location: 'http://10.0.0.7/secret' });
        res.end();
      } else if (req.url === '/to-http-name') {
        res.writeHead(302, { location: `http://rebind.test:${port}/ok` });
        res.end();
      } else if (req.url === '/loop') {
        res.writeHead(302, { location: '/loop' });
        res.end();
      } else if (req.url === '/slow') {
        setTimeout(() => res.end('late'), 5000).unref();
      } else {
        res.writeHead(200, { 'content-type': 'text/csv' });
        res.end('ds,y\n2024-01-01,1\n');
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('fetches from a loopback server when the operator allows loopback and http', async () => {
    const f = createFetcher(base);
    const r = await f.fetch(`http://127.0.0.1:${port}/ok`);
    assert.equal(r.status, 200);
    assert.match(r.body.toString(), /2024-01-01/);
    await f.close();
  });

  it('refuses http:// by default and loopback by default, before any traffic', async () => {
    const before = hits;
    const strict = createFetcher({ ...base, allowHttp: false, allowLoopback: false });
    assert.match((await refusal(strict.fetch(`http://127.0.0.1:${port}/ok`))).message, /only https/);
    const noLoop = createFetcher({ ...base, allowLoopback: false });
    const e = await refusal(noLoop.fetch(`http://127.0.0.1:${port}/ok`));
    assert.equal(e.kind, 'refused');
    assert.match(e.message, /loopback/);
    assert.equal((await refusal(noLoop.fetch(`http://[::ffff:127.0.0.1]:${port}/ok`))).kind, 'refused');
    assert.equal((await refusal(noLoop.fetch(`http://localhost:${port}/ok`))).kind, 'refused');
    assert.equal((await refusal(noLoop.fetch('ftp://example.com/x'))).kind, 'refused');
    assert.equal((await refusal(noLoop.fetch('https://user:pw@example.com/x'))).kind, 'refused');
    assert.equal(hits, before, 'the server was never contacted');
    await Promise.all([strict.close(), noLoop.close()]);
  });

  it('refuses a name that resolves to a private or metadata address, at connect time (stub resolver, no traffic)', async () => {
    for (const address of ['10.1.2.3', '169.254.169.254', 'fd00::1', '::ffff:192.168.0.1']) {
      const resolver = stub({ 'evil.test': [address] });
      const f = createFetcher({ ...base, allowLoopback: false }, resolver);
      const e = await refusal(f.fetch('http://evil.test/latest/meta-data'));
      assert.equal(e.kind, 'refused', `${address}: ${e.message}`);
      assert.deepEqual(resolver.asked, ['evil.test'], 'the check ran in the connection lookup');
      await f.close();
    }
  });

  it('refuses a name whose answer mixes a public and a private address', async () => {
    const f = createFetcher({ ...base, allowLoopback: false }, stub({ 'mixed.test': ['93.184.216.34', '10.0.0.1'] }));
    assert.equal((await refusal(f.fetch('http://mixed.test/'))).kind, 'refused');
    await f.close();
  });

  it('DNS rebinding: the address checked is the one connected to, on every connection', async () => {
    // First answer loopback (allowed here), then a private address: the second connection is refused.
    let n = 0;
    const resolver: Resolver = async () => [{ address: n++ === 0 ? '127.0.0.1' : '10.0.0.1', family: 4 }];
    const f = createFetcher(base, resolver);
    const ok = await f.fetch(`http://rebind.test:${port}/ok`, { headers: { connection: 'close' } });
    assert.equal(ok.status, 200);
    await f.close();
    const g = createFetcher(base, resolver);
    assert.equal((await refusal(g.fetch(`http://rebind.test:${port}/ok`))).kind, 'refused');
    await g.close();
  });

  it('re-checks every redirect hop and caps their number', async () => {
    const f = createFetcher(base, stub({ 'rebind.test': ['127.0.0.1'] }));
    const e = await refusal(f.fetch(`http://127.0.0.1:${port}/to-private`));
    assert.equal(e.kind, 'refused');
    assert.match(e.message, /10\.0\.0\.7/);
    const followed = await f.fetch(`http://127.0.0.1:${port}/to-http-name`);
    assert.equal(followed.status, 200);
    assert.match(followed.url, /rebind\.test/);
    assert.match((await refusal(f.fetch(`http://127.0.0.1:${port}/loop`))).message, /redirects/);
    await f.close();
  });

  it('caps the response size and the time', async () => {
    const f = createFetcher({ ...base, timeoutMs: 300 });
    assert.equal((await refusal(f.fetch(`http://127.0.0.1:${port}/big`))).kind, 'too_large');
    assert.equal((await refusal(f.fetch(`http://127.0.0.1:${port}/slow`))).kind, 'timeout');
    await f.close();
  });
});
