import type { z } from 'zod';
import { locate, zodIssues, type ValidationIssue } from '../shared/errors.ts';

/** Where a request part shows up in `loc`, FastAPI-style. */
export const LOC_ROOT: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

/** Raised by the schema validator; carries zod's issues and the data they point into. */
export class SchemaValidationError extends Error {
  readonly part: string;
  readonly issues: z.core.$ZodIssue[];
  readonly data: unknown;
  constructor(part: string, issues: z.core.$ZodIssue[], data: unknown) {
    super('Request validation failed');
    this.name = 'SchemaValidationError';
    this.part = part;
    this.issues = issues;
    this.data = data;
  }
}

/** A body that is not JSON at all (before any schema runs). */
export class BodyParseError extends Error {
  /** The JSON parser's own words (Node's name the line and column). */
  readonly detail: string;
  constructor(detail = 'JSON decode error') {
    super('JSON decode error');
    this.name = 'BodyParseError';
    this.detail = detail;
  }
}

export function issuesToDetail(root: string, issues: z.core.$ZodIssue[], data: unknown): ValidationIssue[] {
  return locate(zodIssues(issues, data), [root]);
}
