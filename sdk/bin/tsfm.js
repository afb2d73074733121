#!/usr/bin/env node
// The `tsfm` command. An installed package runs the compiled CLI (dist/, built when the package is
// packed); inside the repository, where dist/ is not built, it runs the TypeScript source directly
// (Node 24 strips the types; `npx tsfm` in the repository runs the project's own Node 24).
import { existsSync } from 'node:fs';

const built = new URL('../dist/cli.js', import.meta.url);
const { main } = await import(existsSync(built) ? built.href : new URL('../src/cli.ts', import.meta.url).href);
process.exitCode = await main(process.argv);
