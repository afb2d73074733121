import { registerAccountRoutes } from './accounts/routes.ts';
import { registerCatalogRoutes } from './catalog/routes.ts';
import { registerContactRoutes } from './contact/routes.ts';
import type { Deps } from './deps-types.ts';
import { registerKeyRoutes } from './keys/routes.ts';
import { registerSystemRoutes } from './system/routes.ts';
import { registerMetricsRoute } from './metrics/http.ts';
import { registerOAuthRoutes } from './oauth/routes.ts';
import { registerMcpRoutes } from './mcp/routes.ts';
import { registerIdentityRoutes } from './identity/routes.ts';
import { registerBillingRoutes } from './billing/routes.ts';
import { registerUsageRoutes } from './usage/routes.ts';
import { registerAdminRoutes } from './admin/routes.ts';
import { registerOperations } from './http/operations.ts';
import type { ZApp } from './http/types.ts';
import { operations } from './operations.ts';
import { registerWebRoutes } from './web/routes.ts';
import { registerSeriesRoutes } from './series/routes.ts';

/** Every feature's routes and every declared operation, in one place (the composition layer, above http/). */
export async function registerRoutes(app: ZApp, deps: Deps): Promise<void> {
  registerSystemRoutes(app, deps);
  registerMetricsRoute(app, deps);
  registerAccountRoutes(app, deps);
  registerKeyRoutes(app, deps);
  registerContactRoutes(app, deps);
  registerCatalogRoutes(app, deps);
  registerSeriesRoutes(app, deps);
  registerOperations(app, deps, operations);
  registerOAuthRoutes(app, deps);
  registerMcpRoutes(app, deps);
  registerIdentityRoutes(app, deps);
  registerUsageRoutes(app, deps);
  registerBillingRoutes(app, deps);
  registerAdminRoutes(app, deps);
  await registerWebRoutes(app, deps);
}
