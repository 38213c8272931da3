// The operator's endpoints (spec/operator.yaml): liveness, readiness and Prometheus metrics.
// Mounted before request logging, the HTTPS rule, the rate limit and the API key: load balancers
// and scrapers call them without a key, often over plain HTTP inside the private network.
import { Router } from "express";
import type { Database } from "../db/database.ts";
import { metricsRegistry } from "../metrics.ts";

export function operatorRoutes(db: Pick<Database, "ping">): Router {
  const router = Router();
  // The process answers: nothing else is checked, so a database outage does not get it restarted.
  router.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  // Ready for traffic when the database answers; a load balancer takes the instance out otherwise.
  router.get("/readyz", async (_req, res) => {
    const database = await db.ping();
    res.status(database ? 200 : 503).json({ status: database ? "ready" : "unavailable", checks: { database } });
  });
  router.get("/metrics", async (_req, res) => {
    res.type(metricsRegistry.contentType).send(await metricsRegistry.metrics());
  });
  return router;
}
