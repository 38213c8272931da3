// User Management: HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";

export function userRoutes({ users }: Services): {
  updateUserName: Handler<"updateUserName">;
  addUser: Handler<"addUser">;
  resendInvite: Handler<"resendInvite">;
  listUsers: Handler<"listUsers">;
} {
  return {
    updateUserName: async ({ auth, path, body }) => {
      await users.rename(auth.accountId, path.userId, body.name);
      return { status: 204 };
    },
    addUser: async ({ auth, query, body }) => {
      await users.addMember(auth.accountId, query.email, body);
      return { status: 204 };
    },
    resendInvite: async ({ auth, path, query }) => {
      await users.resendInvitation(auth.accountId, query.email, path.userId);
      return { status: 204 };
    },
    listUsers: async ({ auth, query }) => ({ status: 200, body: await users.list(auth.accountId, query.email, query) }),
  };
}
