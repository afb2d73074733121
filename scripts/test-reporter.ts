import { relative } from 'node:path';
import { spec } from 'node:test/reporters';

/**
 * `npm test`'s reporter: node's own `spec` reporter, plus the list of what was skipped and why,
 * printed just before node's closing counts ("ℹ tests N … ℹ pass N ℹ fail N …"), so those stay
 * the last lines a CI reads. A skipped suite counts once (not each of its tests); a test skipped
 * inside a running suite (`ctx.skip(reason)`) counts as itself.
 */
interface TestEvent {
  type: string;
  data: { name?: string; nesting?: number; file?: string; skip?: string | boolean; message?: string; details?: { type?: string } };
}

export default async function* reporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string | Buffer> {
  const out = new spec();
  const skipped: { where: string; reason: string; suite: boolean }[] = [];
  let summarised = false;
  const feed = (async () => {
    for await (const ev of source) {
      if ((ev.type === 'test:pass' || ev.type === 'test:fail') && ev.data.skip !== undefined && ev.data.skip !== false) {
        const file = ev.data.file ? relative(process.cwd(), ev.data.file) : '?';
        const reason = typeof ev.data.skip === 'string' && ev.data.skip !== '' ? ev.data.skip : 'no reason given';
        // A skipped suite is one event (its tests do not run and are not reported).
        const suite = ev.data.details?.type === 'suite';
        skipped.push({ where: `${file} › ${ev.data.name ?? '?'}`, reason, suite });
      }
      if (!summarised && ev.type === 'test:diagnostic' && ev.data.nesting === 0 && /^tests \d+$/.test(ev.data.message ?? '')) {
        summarised = true;
        for (const message of skipSummary(skipped)) out.write({ type: 'test:diagnostic', data: { nesting: 0, message } });
      }
      out.write(ev);
    }
    out.end();
  })();
  for await (const chunk of out) yield chunk as string | Buffer;
  await feed;
}

function skipSummary(skipped: readonly { where: string; reason: string; suite: boolean }[]): string[] {
  const suites = skipped.filter((s) => s.suite).length;
  if (skipped.length === 0) return ['skipped suites 0 (nothing skipped)'];
  const lines = [`skipped suites ${suites}, skipped tests outside them ${skipped.length - suites}; why:`];
  for (const s of skipped) lines.push(`  ${s.suite ? 'suite' : 'test'} ${s.where}: ${s.reason}`);
  return lines;
}
