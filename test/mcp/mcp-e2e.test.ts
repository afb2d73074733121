import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { createKey, DB_KIND, registerUser, type TestUser } from '../helpers/app.ts';
import { createListeningApp, RecordingMeter, type ListeningApp } from '../helpers/listen.ts';
import { submitAuthorize } from '../oauth/flow.ts';

const REDIRECT = 'http://127.0.0.1:65531/oauth/callback';

/** An in-memory OAuth client provider; `redirectToAuthorization` only remembers where to go. */
class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | null = null;
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'SDK test client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    return 'sdk-state-123';
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(i: OAuthClientInformationMixed) {
    this.info = i;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(t: OAuthTokens) {
    this.saved = t;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

const SERIES = { model: 'echo-last', inputs: [{ target: [1, 2, 3, 4], item_id: 'a' }], parameters: { prediction_length: 3 } };

describe(`MCP end to end with the SDK client (${DB_KIND})`, () => {
  let t: ListeningApp;
  let meter: RecordingMeter;
  let u: TestUser;
  before(async () => {
    meter = new RecordingMeter();
    t = await createListeningApp({ overrides: { meter } });
    u = await registerUser(t);
  });
  after(() => t.close());

  test('discover, register, authorize (user approves), PKCE exchange, list tools, call forecast; usage source mcp', async () => {
    const provider = new MemoryProvider();
    const mcpUrl = new URL(`${t.baseUrl}/mcp`);
    const first = new Client({ name: 'test', version: '1' });
    // 1. No token: the server answers 401 + resource_metadata; the SDK discovers and registers, then
    //    sends the user to the authorization page.
    await assert.rejects(first.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider })), UnauthorizedError);
    assert.ok(provider.info?.client_id, 'dynamic registration happened');
    const authUrl = provider.authorizationUrl;
    assert.ok(authUrl, 'the client was sent to the authorization endpoint');
    assert.equal(authUrl.origin + authUrl.pathname, `${t.baseUrl}/oauth/authorize`);
    assert.equal(authUrl.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(authUrl.searchParams.get('resource'), `${t.baseUrl}/mcp`);

    // 2. The user opens the page: a sign-in and consent form naming the client.
    const page = await fetch(authUrl);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('cache-control'), 'no-store');
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    const html = await page.text();
    assert.match(html, /SDK test client/);
    assert.match(html, /name="password"/);

    // 3. The user signs in and approves: the form posts back and redirects with code and state.
    const p = authUrl.searchParams;
    const res = await submitAuthorize(t.baseUrl, {
      client_id: p.get('client_id') ?? '',
      redirect_uri: p.get('redirect_uri') ?? '',
      code_challenge: p.get('code_challenge') ?? '',
      code_challenge_method: 'S256',
      scope: p.get('scope') ?? 'mcp',
      state: p.get('state') ?? '',
      resource: p.get('resource') ?? '',
      action: 'approve',
      email: u.email,
      password: u.password,
    });
    assert.equal(res.status, 303, res.text);
    const back = new URL(res.location ?? '');
    assert.equal(back.origin + back.pathname, REDIRECT);
    assert.equal(back.searchParams.get('state'), 'sdk-state-123');
    const code = back.searchParams.get('code');
    assert.match(code ?? '', /^tsfc_/);

    // 4. The client exchanges the code with its PKCE verifier.
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await transport.finishAuth(code as string);
    assert.match(provider.saved?.access_token ?? '', /^tsfo_/);
    assert.match(provider.saved?.refresh_token ?? '', /^tsfrt_/);

    // 5. Connected: tools are the API's operation ids; forecast runs and is metered as `mcp`.
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    const { tools } = await client.listTools();
    const names = tools.map((x) => x.name).sort();
    for (const n of [
      'forecast',
      'forecastBatch',
      'forecastEnsemble',
      'listModels',
      'getModelById',
      'getUsageSummary',
      'getBillingSummary',
      'validateCredential',
    ])
      assert.ok(names.includes(n), n);
    const fc = tools.find((x) => x.name === 'forecast');
    assert.equal(fc?.inputSchema.type, 'object');
    assert.equal(fc?.outputSchema, undefined, 'results are JSON text (+ structuredContent); no output schema to mismatch');

    const before = meter.committed.length;
    const r = await client.callTool({ name: 'forecast', arguments: SERIES });
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    const sc = r.structuredContent as Record<string, any>;
    assert.equal(sc.model, 'echo-last');
    assert.deepEqual(sc.outputs[0].mean, [[4], [4], [4]]);
    assert.deepEqual(sc.outputs[0].metadata, { item_id: 'a' });
    const text = (r.content as { type: string; text: string }[])[0];
    assert.equal(text?.type, 'text');
    assert.match(text?.text ?? '', /echo-last/);
    // The numbers are in the text block too, for hosts that show only text.
    assert.deepEqual(JSON.parse((text?.text ?? '').split('\n').slice(1).join('\n')).outputs[0].mean, [[4], [4], [4]]);
    const ev = meter.committed.slice(before);
    assert.equal(ev.length, 1);
    assert.equal(ev[0]?.source, 'mcp');
    assert.equal(ev[0]?.userId, u.id);
    assert.equal(ev[0]?.kind, 'oauth');

    const v = await client.callTool({ name: 'validateCredential', arguments: {} });
    assert.deepEqual(v.structuredContent, { valid: true, auth_type: 'oauth', user: u.id });
    await client.close();
  });

  test('the same with an API key as Bearer: no OAuth at all', async () => {
    const key = await createKey(t, u, 'mcp');
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key.key}` } } }));
    const before = meter.committed.length;
    const r = await client.callTool({ name: 'forecast', arguments: SERIES });
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    assert.equal(meter.committed.slice(before)[0]?.source, 'mcp');
    assert.equal(meter.committed.slice(before)[0]?.kind, 'api_key');
    const models = await client.callTool({ name: 'listModels', arguments: { q: 'echo' } });
    assert.deepEqual((models.structuredContent as { models: { id: string }[] }).models.map((m) => m.id).sort(), ['echo-last', 'echo-short']);
    const one = await client.callTool({ name: 'getModelById', arguments: { modelId: 'nope' } });
    assert.equal(one.isError, true);
    assert.equal(one.structuredContent, undefined);
    assert.match((one.content as { text: string }[])[0]?.text ?? '', /^Error model_not_found \(HTTP 404\): /);
    const v = await client.callTool({ name: 'validateCredential', arguments: {} });
    assert.deepEqual(v.structuredContent, { valid: true, auth_type: 'api_key', user: u.id, key: key.id });
    const usage = await client.callTool({ name: 'getUsageSummary', arguments: {} });
    assert.notEqual(usage.isError, true, JSON.stringify(usage.content));
    assert.ok('totals' in (usage.structuredContent as object));
    const badWindow = await client.callTool({ name: 'getUsageSummary', arguments: { start: 'not-a-date' } });
    assert.equal(badWindow.isError, true);
    const billing = await client.callTool({ name: 'getBillingSummary', arguments: {} });
    assert.notEqual(billing.isError, true, JSON.stringify(billing.content));
    assert.equal((billing.structuredContent as { free_credits: { granted: number } }).free_credits.granted, 80000);
    await client.close();
  });
});
