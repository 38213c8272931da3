// credit-reporting-controller: HTTP in, service call, HTTP out. Errors are shaped as
// ParameterizedErrorVM / ErrorVM by the error handler (server/http/errors.ts) for /api paths.
import type { Handler } from "../http/operations.ts";
import * as creditReports from "../services/credit-reports.ts";
import type { Services } from "../services/index.ts";

export function creditReportRoutes(services: Services): {
  getCreditUsageTimeSeries: Handler<"getCreditUsageTimeSeries">;
  getCreditUsageSummary: Handler<"getCreditUsageSummary">;
} {
  return {
    getCreditUsageTimeSeries: async ({ auth, body: { granularity, ...period } }) => ({
      status: 200,
      body: await creditReports.timeSeries(services, auth.accountId, period, granularity),
    }),
    getCreditUsageSummary: async ({ auth, body }) => ({
      status: 200,
      body: await creditReports.summary(services, auth.accountId, body),
    }),
  };
}
