import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as seasonsModule from '@bsull/augurs/seasons';

/**
 * @bsull/augurs is built by wasm-bindgen for the web: its default initialiser fetch()es the
 * .wasm file, which Node cannot do for file URLs. In Node (main thread or worker thread) we read
 * the bytes ourselves and call `initSync` once per module per thread (each worker thread has its
 * own module instances, so each initialises its own copy on first use).
 */
const require = createRequire(import.meta.url);
let initialised = false;

interface SyncInitialisable {
  initSync(module: { module: Uint8Array }): unknown;
}

function initOne(mod: SyncInitialisable, specifier: string): void {
  const jsPath = require.resolve(specifier);
  mod.initSync({ module: readFileSync(jsPath.replace(/\.js$/, '_bg.wasm')) });
}

export function augurs(): { seasons: typeof seasonsModule } {
  if (!initialised) {
    initOne(seasonsModule, '@bsull/augurs/seasons');
    initialised = true;
  }
  return { seasons: seasonsModule };
}
