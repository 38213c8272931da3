// Declared Networks: HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";

export function declaredNetworkRoutes({ declaredNetworks }: Services): {
  listDeclaredNetworks: Handler<"listDeclaredNetworks">;
  declareNetwork: Handler<"declareNetwork">;
  removeDeclaredNetwork: Handler<"removeDeclaredNetwork">;
} {
  return {
    listDeclaredNetworks: async ({ auth, query }) => ({ status: 200, body: await declaredNetworks.list(auth.accountId, query) }),
    declareNetwork: async ({ auth, query, body }) => ({ status: 201, body: await declaredNetworks.declare(auth.accountId, query.email, body) }),
    removeDeclaredNetwork: async ({ auth, path, query }) => {
      await declaredNetworks.remove(auth.accountId, query.email, path.networkId);
      return { status: 204 };
    },
  };
}
