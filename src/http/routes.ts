import { registerAccountRoutes } from '../accounts/routes.ts';
import { registerCatalogRoutes } from '../catalog/routes.ts';
import { registerForecastRoutes } from '../forecasting/routes.ts';
import { registerEnsembleRoutes } from '../ensemble/routes.ts';
import { registerContactRoutes } from '../contact/routes.ts';
import type { Deps } from '../deps.ts';
import { registerKeyRoutes } from '../keys/routes.ts';
import { registerSystemRoutes } from '../system/routes.ts';
import { registerOAuthRoutes } from '../oauth/routes.ts';
import { registerMcpRoutes } from '../mcp/routes.ts';
import { registerIdentityRoutes } from '../identity/routes.ts';
import { registerBillingRoutes } from '../billing/routes.ts';
import { registerUsageRoutes } from '../usage/routes.ts';
import { registerAdminRoutes } from '../admin/routes.ts';
import { registerWebRoutes } from '../web/routes.ts';
import type { ZApp } from './types.ts';

/** Every feature's routes, in one place. */
export async function registerRoutes(app: ZApp, deps: Deps): Promise<void> {
  registerSystemRoutes(app, deps);
  registerAccountRoutes(app, deps);
  registerKeyRoutes(app, deps);
  registerContactRoutes(app, deps);
  registerCatalogRoutes(app, deps);
  registerForecastRoutes(app, deps);
  registerEnsembleRoutes(app, deps);
  registerOAuthRoutes(app, deps);
  registerMcpRoutes(app, deps);
  registerIdentityRoutes(app, deps);
  registerUsageRoutes(app, deps);
  registerBillingRoutes(app, deps);
  registerAdminRoutes(app, deps);
  await registerWebRoutes(app, deps);
}
