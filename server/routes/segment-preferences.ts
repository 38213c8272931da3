// Segment Preference: HTTP in, service call, HTTP out.
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";
import * as segmentPreferences from "../services/segment-preferences.ts";

export function segmentPreferenceRoutes(services: Services): {
  getSegmentPreference: Handler<"getSegmentPreference">;
  setSegmentPreference: Handler<"setSegmentPreference">;
  deleteSegmentPreference: Handler<"deleteSegmentPreference">;
} {
  return {
    getSegmentPreference: async ({ auth, query }) => ({
      status: 200,
      body: { data: await segmentPreferences.usersOf(services, auth.accountId, query.email, query.segmentId, query.datasetId) },
    }),
    setSegmentPreference: async ({ auth, query, body }) => {
      await segmentPreferences.set(services, auth.accountId, query.email, body);
      return { status: 204 };
    },
    deleteSegmentPreference: async ({ auth, query }) => {
      await segmentPreferences.remove(services, auth.accountId, query.email, query.datasetId);
      return { status: 204 };
    },
  };
}
