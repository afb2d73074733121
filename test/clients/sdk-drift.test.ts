import assert from 'node:assert/strict';
import { test } from 'node:test';
import { staleFiles } from '../../scripts/sdk-generate.ts';

test('the SDK types and sdk/openapi.json match what the app serves (else: npm run sdk:generate)', async () => {
  const stale = await staleFiles();
  assert.deepEqual(stale, [], `stale: ${stale.join(', ')} — run \`npm run sdk:generate\` and commit the result`);
});
