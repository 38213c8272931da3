// User Management: HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";
import * as users from "../services/users.ts";

export function userRoutes(services: Services): {
  updateUserName: Handler<"updateUserName">;
  addUser: Handler<"addUser">;
  resendInvite: Handler<"resendInvite">;
  listUsers: Handler<"listUsers">;
} {
  return {
    updateUserName: async ({ auth, path, body }) => {
      await users.rename(services, auth.accountId, path.userId, body.name);
      return { status: 204 };
    },
    addUser: async ({ auth, query, body }) => {
      await users.addMember(services, auth.accountId, query.email, body);
      return { status: 204 };
    },
    resendInvite: async ({ auth, path, query }) => {
      await users.resendInvitation(services, auth.accountId, query.email, path.userId);
      return { status: 204 };
    },
    listUsers: async ({ auth, query }) => ({ status: 200, body: await users.list(services, auth.accountId, query.email, query) }),
  };
}
