// The operator's endpoints (spec/operator.yaml): liveness, readiness and Prometheus metrics.
// Mounted before request logging, the HTTPS rule, the rate limit and the API key: load balancers
// and scrapers call them without a key, often over plain HTTP inside the private network.
import { Router } from "express";
import type { Database } from "../db/database.ts";
import { metricsRegistry } from "../metrics.ts";
import { MethodNotAllowedError } from "./errors.ts";
import { readiness, type StartupProgress } from "./starting.ts";

/** The operator's paths (spec/operator.yaml), each GET (and so HEAD) only. */
const OPERATOR_PATHS = ["/healthz", "/readyz", "/metrics"];

/** `progress`: the service's start-up (server/main.ts); without it, readiness is the database alone. */
export function operatorRoutes(db: Pick<Database, "ping">, progress?: StartupProgress): Router {
  const router = Router();
  // The process answers: nothing else is checked, so a database outage does not get it restarted.
  router.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  // Ready for traffic when the database answers (and the start-up is done); a load balancer takes the instance out otherwise.
  router.get("/readyz", async (_req, res) => {
    const { ready, body } = readiness(await db.ping(), progress);
    res.status(ready ? 200 : 503).json(body);
  });
  router.get("/metrics", async (_req, res) => {
    res.type(metricsRegistry.contentType).send(await metricsRegistry.metrics());
  });
  // Their other methods: 405 with Allow, as the partner paths' (they need no key: never a 401).
  router.all(OPERATOR_PATHS, (_req, _res, next) => next(new MethodNotAllowedError("GET, HEAD")));
  return router;
}
