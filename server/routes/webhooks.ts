// Webhooks: HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";
import * as webhooks from "../services/webhooks.ts";

export function webhookRoutes(services: Services): {
  listWebhookEndpoints: Handler<"listWebhookEndpoints">;
  createWebhookEndpoint: Handler<"createWebhookEndpoint">;
  getWebhookEndpoint: Handler<"getWebhookEndpoint">;
  updateWebhookEndpoint: Handler<"updateWebhookEndpoint">;
  deleteWebhookEndpoint: Handler<"deleteWebhookEndpoint">;
  rotateWebhookSecret: Handler<"rotateWebhookSecret">;
  sendWebhookTestEvent: Handler<"sendWebhookTestEvent">;
  listWebhookDeliveries: Handler<"listWebhookDeliveries">;
  replayWebhookDelivery: Handler<"replayWebhookDelivery">;
  replayWebhookDeliveries: Handler<"replayWebhookDeliveries">;
} {
  return {
    listWebhookEndpoints: async ({ auth, query }) => ({ status: 200, body: await webhooks.list(services, auth.accountId, query) }),
    createWebhookEndpoint: async ({ auth, body }) => ({ status: 201, body: await webhooks.create(services, auth.accountId, body) }),
    getWebhookEndpoint: async ({ auth, path }) => ({ status: 200, body: await webhooks.get(services, auth.accountId, path.endpointId) }),
    updateWebhookEndpoint: async ({ auth, path, body }) => ({ status: 200, body: await webhooks.update(services, auth.accountId, path.endpointId, body) }),
    deleteWebhookEndpoint: async ({ auth, path }) => {
      await webhooks.remove(services, auth.accountId, path.endpointId);
      return { status: 204 };
    },
    rotateWebhookSecret: async ({ auth, path }) => ({ status: 200, body: await webhooks.rotateSecret(services, auth.accountId, path.endpointId) }),
    sendWebhookTestEvent: async ({ auth, path }) => ({ status: 202, body: await webhooks.sendTest(services, auth.accountId, path.endpointId) }),
    listWebhookDeliveries: async ({ auth, path, query }) => ({
      status: 200,
      body: await webhooks.listDeliveries(services, auth.accountId, path.endpointId, query),
    }),
    replayWebhookDelivery: async ({ auth, path }) => ({
      status: 202,
      body: await webhooks.replay(services, auth.accountId, path.endpointId, path.deliveryId),
    }),
    replayWebhookDeliveries: async ({ auth, path, body }) => ({
      status: 202,
      body: await webhooks.replayRange(services, auth.accountId, path.endpointId, body),
    }),
  };
}
