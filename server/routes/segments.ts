// Segments: HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";
import * as segments from "../services/segments.ts";

export function segmentRoutes(services: Services): {
  getSegments: Handler<"getSegments">;
  createSegment: Handler<"createSegment">;
  updateSegment: Handler<"updateSegment">;
  deleteSegment: Handler<"deleteSegment">;
  updateSegmentUser: Handler<"updateSegmentUser">;
} {
  return {
    getSegments: async ({ auth, query }) => ({ status: 200, body: await segments.list(services, auth.accountId, query) }),
    createSegment: async ({ auth, query, body }) => ({
      status: 200,
      body: { id: await segments.create(services, auth.accountId, query.email, body) },
    }),
    updateSegment: async ({ auth, path, query, body }) => {
      await segments.update(services, auth.accountId, path.segmentId, query.segmentName, body);
      return { status: 204 };
    },
    deleteSegment: async ({ auth, path }) => {
      await segments.remove(services, auth.accountId, path.segmentId);
      return { status: 204 };
    },
    updateSegmentUser: async ({ auth, body }) => {
      await segments.setUser(services, auth.accountId, body.segmentId, body.userId);
      return { status: 204 };
    },
  };
}
