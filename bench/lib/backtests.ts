import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { calibrationOptions } from '../../src/engine/models/common.ts';
import { backtestForecasts, factorFromWindows } from '../../src/engine/stats/calibrate.ts';
import { FITTERS } from './fitters.ts';
import type { M3Series } from './m3.ts';

/** One backtest window: origin, signed errors and the sd the window's own forecast gave each (by the error's sign). */
export interface Win {
  o: number;
  e: number[];
  sdo: number[];
}
/** A model's uncalibrated forecast of a series' test part and its backtest windows. */
export interface Case {
  mean: number[];
  sdLow: number[];
  sdHigh: number[];
  w: Win[];
}

/**
 * A model's fit and backtests on each series, as the service runs them (the refits or, where the
 * model has one, the search again: ADR 0036), cached in `cacheDir` under `<model>-<tag>.json`.
 */
export function fitCases(model: string, series: readonly M3Series[], cacheDir: string, tag: string): Case[] {
  const fit = FITTERS[model];
  if (!fit) throw new Error(`unknown model ${model}`);
  mkdirSync(cacheDir, { recursive: true });
  const file = path.join(cacheDir, `${model}-${tag}.json`);
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Case[];
  const t0 = performance.now();
  const cases = series.map((s): Case => {
    const fc = fit(s.train, { horizon: s.horizon, seasonLength: s.seasonality });
    const refit = fc.refit ?? ((train: number[], h: number) => fit(train, { horizon: h, seasonLength: s.seasonality }));
    const opts = calibrationOptions(4, s.seasonality);
    // As the service (ADR 0036): the search again where the model has one, the refits if every search failed.
    let bf = fc.research ? backtestForecasts(s.train, s.horizon, fc.research, opts) : [];
    if (bf.length === 0) bf = backtestForecasts(s.train, s.horizon, refit, opts);
    const w = bf.map(({ origin, fc: b }) => {
      const e: number[] = [];
      const sdo: number[] = [];
      for (let t = 0; t < b.mean.length; t++) {
        const err = s.train[origin + t]! - b.mean[t]!;
        e.push(err);
        sdo.push(err >= 0 ? b.sdHigh[t]! : b.sdLow[t]!);
      }
      return { o: origin, e, sdo };
    });
    return { mean: fc.mean, sdLow: fc.sdLow, sdHigh: fc.sdHigh, w };
  });
  writeFileSync(file, JSON.stringify(cases));
  console.error(`${model}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return cases;
}

/** The service's calibration factor of a case (stats/calibrate.ts: each error over its own forecast's sd); 1 without a window. */
export function serviceFactor(c: Case, horizon: number): number {
  const windows = c.w.map((w) => ({ origin: w.o, z: w.e.map((e, t) => Math.abs(e / w.sdo[t]!)).map((z) => (Number.isFinite(z) ? z : Number.NaN)) }));
  return factorFromWindows(windows, horizon)?.factor ?? 1;
}
