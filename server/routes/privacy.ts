// Privacy: HTTP in, service call, HTTP out. The subject's address travels in bodies only (never
// in a URL, so never in a request log).
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";
import * as privacy from "../services/privacy.ts";

export function privacyRoutes(services: Services): {
  getPrivacySettings: Handler<"getPrivacySettings">;
  updatePrivacySettings: Handler<"updatePrivacySettings">;
  eraseDataSubject: Handler<"eraseDataSubject">;
  exportDataSubject: Handler<"exportDataSubject">;
  listErasures: Handler<"listErasures">;
} {
  return {
    getPrivacySettings: async ({ auth, path, query }) => ({ status: 200, body: await privacy.settings(services, auth.accountId, query.email, path.datasetId) }),
    updatePrivacySettings: async ({ auth, path, query, body }) => ({
      status: 200,
      body: await privacy.updateSettings(services, auth.accountId, query.email, path.datasetId, body),
    }),
    eraseDataSubject: async ({ auth, query, body }) => ({ status: 200, body: await privacy.erase(services, auth.accountId, query.email, body) }),
    exportDataSubject: async ({ auth, query, body }) => ({ status: 200, body: await privacy.exportSubject(services, auth.accountId, query.email, body) }),
    listErasures: async ({ auth, query }) => ({ status: 200, body: await privacy.erasures(services, auth.accountId, query) }),
  };
}
