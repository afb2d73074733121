import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { operations } from '../../src/operations.ts';
import { defineOperation, type OperationDef } from '../../src/shared/operation.ts';

// ADR 0037: an operation that spends credits is never open to a key that was not given the scope
// for it (a usage:read key ran cross-validations, anomaly detection and imputation).
test('every declared operation that spends credits declares the scope a key needs for it', () => {
  const open = operations.filter((op) => op.spendsCredits && !op.scope).map((op) => `${op.id} (${op.method} ${op.path})`);
  assert.deepEqual(open, [], `operations that spend credits without a scope: ${open.join(', ')}`);
});

test('defineOperation refuses a declaration that spends credits without a scope', () => {
  const declaration = {
    id: 'probe',
    method: 'POST',
    path: '/probe',
    tags: [],
    summary: 'probe',
    description: 'probe',
    input: z.object({}),
    output: z.object({}),
    auth: ['api_key'],
    errors: [],
    spendsCredits: true,
    example: { request: {} },
    run: async () => ({}),
    summarize: () => '',
  };
  // The declaration type already makes this a type error; the cast stands for a declaration built
  // around it (a spread, a helper), which the check at definition still catches.
  assert.throws(() => defineOperation(declaration as unknown as OperationDef<z.ZodObject, z.ZodType>), /probe spends credits but declares no scope/);
});
