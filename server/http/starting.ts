// What the service answers while it starts (the database being created or migrated, the IP data
// loading): the operator's liveness and readiness and the API reference at once, every other
// request 503 with Retry-After. A first start takes from seconds to minutes; meanwhile a person or
// an orchestrator sees that the process is alive and what it still waits for (GET /readyz).
import express, { type Express } from "express";
import { docsRoutes, serviceIndex } from "./docs.ts";
import { securityHeaders } from "./security-headers.ts";

/** What the service has done of its start-up; `step` is what it does now. */
export interface StartupProgress {
  database: boolean;
  ipData: boolean;
  /** Only when the demo account is seeded (outside production). */
  demo?: boolean;
  step: string;
}

/** The readiness body (spec/operator.yaml, Readiness) from the database's answer and the progress. */
export function readiness(database: boolean, progress?: StartupProgress) {
  const checks = progress
    ? { database, ipData: progress.ipData, ...(progress.demo === undefined ? {} : { demo: progress.demo }) }
    : { database };
  const ready = Object.values(checks).every(Boolean);
  return { ready, body: { status: ready ? "ready" : "unavailable", checks, ...(!ready && progress ? { starting: progress.step } : {}) } };
}

/** How long a client is told to wait before it asks again while the service starts. */
const RETRY_AFTER_SECONDS = 5;

export function startingApp(progress: StartupProgress): Express {
  const app = express();
  app.disable("x-powered-by");
  app.use(securityHeaders());
  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/readyz", (_req, res) => {
    // what is done so far, and never ready: this app answers until the service's own takes over
    res.status(503).json({ ...readiness(progress.database, progress).body, status: "unavailable", starting: progress.step });
  });
  app.use(docsRoutes());
  app.get("/", serviceIndex());
  app.use((_req, res) => {
    res
      .status(503)
      .set("Retry-After", String(RETRY_AFTER_SECONDS))
      .json({ error: "service_unavailable", message: `The service is starting (${progress.step}); retry after the Retry-After seconds` });
  });
  return app;
}
