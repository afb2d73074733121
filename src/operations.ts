import { analyticsOperations } from './analytics/operations.ts';
import { billingOperations } from './billing/operations.ts';
import { catalogOperations } from './catalog/operations.ts';
import { ensembleOperations } from './ensemble/operations.ts';
import { forecastOperations } from './forecasting/operations.ts';
import { keyOperations } from './keys/operations.ts';
import type { Operation } from './shared/operation.ts';
import { usageOperations } from './usage/operations.ts';
import { seriesOperations } from './series/operations.ts';
import { scheduleOperations } from './schedules/operations.ts';

/**
 * Every operation declared once (each feature's operations.ts). REST registers each as a route,
 * MCP as a tool named by its operation id.
 */
export const operations: readonly Operation[] = [
  ...forecastOperations,
  ...ensembleOperations,
  ...analyticsOperations,
  ...catalogOperations,
  ...keyOperations,
  ...usageOperations,
  ...billingOperations,
  ...seriesOperations,
  ...scheduleOperations,
];
