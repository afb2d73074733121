/** Re-renders bench/results/m3-accuracy.md from its JSON (after editing the notes). */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './lib/m3.ts';
import { renderMarkdown } from './lib/m3-report.ts';

const dir = path.join(repoRoot, 'bench', 'results');
const report = JSON.parse(readFileSync(path.join(dir, 'm3-accuracy.json'), 'utf8')) as Parameters<typeof renderMarkdown>[0];
writeFileSync(path.join(dir, 'm3-accuracy.md'), renderMarkdown(report));
