/**
 * The grids the clients' step functions are held to the service's with (sdk/src/frequency.ts and
 * clients/python/tsfm_client/frequency.py against src/forecasting/frequency.ts): every kind of
 * code, anchored and not, from starts on and off the period boundaries.
 */
export const GRID_CODES = [
  'D',
  '3D',
  'B',
  'W',
  'W-WED',
  'W-SUN',
  'h',
  '15min',
  's',
  'MS',
  '2MS',
  'M',
  'ME',
  'QS',
  'QS-FEB',
  'QS-MAR',
  'Q',
  'Q-NOV',
  'QE-OCT',
  'YS',
  'YS-JUL',
  'AS-JUL',
  'Y',
  'Y-JUN',
  'YE-JUN',
  'A-FEB',
  '2YS-JUL',
];
export const GRID_STARTS = ['2021-02-01', '2021-02-28', '2020-07-01', '2021-06-30', '2024-01-06', '2024-02-29T10:30:00Z', '1999-12-31'];
