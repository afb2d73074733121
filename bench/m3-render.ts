/** Re-renders bench/results/m3-accuracy.md (or `node bench/m3-render.ts m3-accuracy-every5`) from its JSON (after editing the notes). */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './lib/m3.ts';
import { renderMarkdown } from './lib/m3-report.ts';

const dir = path.join(repoRoot, 'bench', 'results');
const base = process.argv[2] ?? 'm3-accuracy';
const report = JSON.parse(readFileSync(path.join(dir, `${base}.json`), 'utf8')) as Parameters<typeof renderMarkdown>[0];
writeFileSync(path.join(dir, `${base}.md`), renderMarkdown(report));
