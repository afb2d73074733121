import type { SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { isAddressLimited } from '../ratelimit/hook.ts';
import type { AuthMode } from './auth.ts';
import { finishDocument, type RouteDoc } from './openapi-document.ts';

/** An operation's worked example in the OpenAPI document (checked against the route's own schemas by test/http/openapi-quality.test.ts). */
export interface OperationExample {
  /** The request: its JSON body, or its query/path parameters by name. */
  request?: unknown;
  /** The success answer (JSON). */
  response?: unknown;
}

declare module 'fastify' {
  interface FastifySchema {
    /** OpenAPI: a worked example of the call. Every documented operation has one (request, response or both). */
    example?: OperationExample;
    /** OpenAPI: the route answers a redirect (302 or 303) to a page elsewhere; the description says where and when. */
    redirect?: { status: 302 | 303; description: string };
    /**
     * OpenAPI: the error statuses a browser page's route answers with an HTML page, each with when;
     * `alsoJson` when API clients of the route (a JSON body) get `{error, code}` for it instead.
     * A status implied as JSON for every route is documented with both media types too.
     */
    htmlErrors?: Partial<Record<number, HtmlError>>;
    /** OpenAPI: the route's own error handler answers every error as a page: only `htmlErrors` are documented, none of the JSON errors implied for every route. */
    onlyHtmlErrors?: boolean;
  }
  interface FastifyContextConfig {
    /**
     * OpenAPI only: the body as documented, when it is more precise than the schema the route
     * validates with (a batch validates its items one by one, so it takes `unknown[]`).
     */
    openapiBody?: z.ZodType;
    /** OpenAPI only: a public route that reads a credential when one is sent (its `security` lists "none" and bearer). */
    optionalCredential?: boolean;
  }
}

/** When a route answers an error status with a page, and whether it answers it as JSON too. */
export type HtmlError = string | { when: string; alsoJson: true };

/** What the document says about the service besides its routes. */
export interface ApiInfo {
  publicBaseUrl: string;
}

/**
 * The @fastify/swagger options: zod → JSON Schema per route (fastify-type-provider-zod), then
 * finishDocument gives every operation what the project's rules require by construction
 * (security, error and rate-limit responses, headers, descriptions, examples) and leaves one
 * schema per concept. ADR 0017.
 */
export function openApiTransforms(): { transform: SwaggerTransform; transformObject: SwaggerTransformObject } {
  const routes = new Map<string, RouteDoc>();
  const transform: SwaggerTransform = (args) => {
    const { route, schema } = args;
    const config = route.config ?? {};
    if (schema?.operationId && !schema.hide) {
      const auth: AuthMode = config.auth ?? 'public';
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      routes.set(schema.operationId, {
        auth: config.optionalCredential ? 'optional' : auth,
        rateLimited: auth !== 'public' || methods.some((m) => isAddressLimited(route.url, String(m))),
        hasSecurity: schema.security !== undefined,
        example: schema.example,
        redirect: schema.redirect,
        html: schema.produces?.includes('text/html') ?? false,
        htmlErrors: schema.htmlErrors ?? {},
        onlyHtmlErrors: schema.onlyHtmlErrors ?? false,
        methods: methods.map(String),
      });
    }
    const body = config.openapiBody;
    const out = jsonSchemaTransform(body ? { ...args, schema: { ...schema, body } } : args);
    // The headers a route's 200 answer documents (`config.responseHeaders`: cost, idempotent replay).
    const headers = config.responseHeaders;
    const ok = (out.schema?.response as Record<string, Record<string, unknown>> | undefined)?.['200'];
    if (headers && ok) ok.headers = headers;
    return out;
  };
  const transformObject: SwaggerTransformObject = (args) => finishDocument(jsonSchemaTransformObject(args) as Record<string, unknown>, routes);
  return { transform, transformObject };
}

/** The OpenAPI document the app serves (what /openapi.json answers). */
export function openApiDocument(app: FastifyInstance): Record<string, unknown> {
  return app.swagger() as unknown as Record<string, unknown>;
}
