// Declared Networks: HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";
import * as declaredNetworks from "../services/declared-networks.ts";

export function declaredNetworkRoutes(services: Services): {
  listDeclaredNetworks: Handler<"listDeclaredNetworks">;
  declareNetwork: Handler<"declareNetwork">;
  removeDeclaredNetwork: Handler<"removeDeclaredNetwork">;
} {
  return {
    listDeclaredNetworks: async ({ auth, query }) => ({ status: 200, body: await declaredNetworks.list(services, auth.accountId, query) }),
    declareNetwork: async ({ auth, query, body }) => ({ status: 201, body: await declaredNetworks.declare(services, auth.accountId, query.email, body) }),
    removeDeclaredNetwork: async ({ auth, path, query }) => {
      await declaredNetworks.remove(services, auth.accountId, query.email, path.networkId);
      return { status: 204 };
    },
  };
}
