import { resolveCredential } from '../accounts/credentials.ts';
import { AppError } from '../shared/errors.ts';
import { defineOperation } from '../shared/operation.ts';
import { ValidateCredentialRequest, ValidateCredentialResponse } from './schemas.ts';

export const keyOperations = [
  defineOperation({
    id: 'validateCredential',
    method: 'POST',
    path: '/v1/validate',
    tags: ['auth'],
    summary: 'Validate a credential',
    description: 'Checks an API key (api_key), or without one the credential this call is made with.',
    input: ValidateCredentialRequest,
    output: ValidateCredentialResponse,
    optionalBody: true,
    // Public: the credential to check is the input (or the one the call presents), not a gate.
    auth: 'public',
    readsCredential: true,
    example: {
      request: {},
      response: { valid: true, auth_type: 'api_key', user: 'usr_0193b1f0c2d47a6e9b3f5c1d2e4f6a8b', key: 'key_0193b1f0d9e87c5a4b3f2e1d0c9b8a7f' },
    },
    errors: [400, 401, 422],
    spendsCredits: false,
    readOnly: true,
    run: async ({ deps, caller, input }) => {
      let p = caller.principal;
      const token = input.api_key ?? (p ? null : caller.credential());
      if (token) p = await resolveCredential(deps.database.db, token, deps.clock.now(), deps.credentialResolvers, deps.database);
      if (!p) throw new AppError('missing_credential', 'Send api_key in the body or an Authorization: Bearer header');
      return { valid: true, auth_type: p.kind, user: p.user.id, ...(p.kind === 'api_key' ? { key: p.credentialId } : {}) };
    },
    summarize: (r) => `Valid ${r.auth_type} credential of user ${r.user}.`,
  }),
];
