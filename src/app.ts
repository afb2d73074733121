import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Deps } from './deps-types.ts';
import { createHttpServer } from './http/app.ts';
import { registerRoutes } from './routes.ts';

/** The whole service: the HTTP layer (src/http) plus every feature's routes and operations. */
export async function buildApp(deps: Deps): Promise<FastifyInstance> {
  const app = await createHttpServer(deps);
  await registerRoutes(app.withTypeProvider<ZodTypeProvider>(), deps);
  return app;
}
