import type { z } from 'zod';
import type { ValidationIssue } from './errors.ts';

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

function valueAt(data: unknown, path: PropertyKey[]): unknown {
  let cur: unknown = data;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key as string];
  }
  return cur;
}

const CTX_KEYS = ['minimum', 'maximum', 'expected', 'values', 'format', 'origin', 'inclusive', 'keys'] as const;

export function issuesToDetail(root: string, issues: z.core.$ZodIssue[], data: unknown): ValidationIssue[] {
  return issues.map((issue) => {
    const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
    const input = valueAt(data, path);
    const missing = issue.code === 'invalid_type' && input === undefined;
    const ctx: Record<string, unknown> = {};
    for (const k of CTX_KEYS) {
      const v = (issue as unknown as Record<string, unknown>)[k];
      if (v !== undefined) ctx[k] = typeof v === 'bigint' ? Number(v) : v;
    }
    const out: ValidationIssue = {
      loc: [root, ...path],
      msg: missing ? 'Field required' : issue.message,
      type: missing ? 'missing' : issue.code,
    };
    if (!missing && input !== undefined && isSmall(input)) out.input = input;
    if (Object.keys(ctx).length > 0) out.ctx = ctx;
    return out;
  });
}

// Echo small inputs only: a 10 MB series must not come back inside an error.
function isSmall(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return typeof v !== 'string' || v.length <= 256;
  try {
    return JSON.stringify(v).length <= 256;
  } catch {
    return false;
  }
}
