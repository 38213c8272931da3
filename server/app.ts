// createApp: security headers -> POST /collect (request context and metrics, the collector);
// for the partner API's paths, request context and metrics -> the operations; for the others,
// operator endpoints -> request context and metrics -> ACME challenges -> tracking -> invitations
// -> the operations. Per operation (server/http/operations.ts): operation context -> HTTPS -> rate
// limit -> API key -> URL length -> JSON body -> contract validation -> handler; then one fallback
// (the same guard, then 404) -> errors.
// No listen here (server/listen.ts): tests drive the app directly.
import express from "express";
import { type Config, loadConfig, type TrackingConfig } from "./config.ts";
import type { Database } from "./db/database.ts";
import { apiKeyAuth } from "./http/auth.ts";
import { errorHandler } from "./http/errors.ts";
import { operatorRoutes } from "./http/operator.ts";
import type { StartupProgress } from "./http/starting.ts";
import { noOperation, type OperationChain, registerOperations, undecodablePath } from "./http/operations.ts";
import { docsRoutes, serviceIndex } from "./http/docs.ts";
import { rateLimit } from "./http/rate-limit.ts";
import { requestMetrics } from "./http/request-metrics.ts";
import { responseChecker } from "./http/response-check.ts";
import { requestContext, type ResponseObserver } from "./http/request-context.ts";
import { securityHeaders } from "./http/security-headers.ts";
import { requireHttps, urlLengthLimit } from "./http/transport.ts";
import { createLogger, type Logger } from "./logging.ts";
import { memoryRateLimiter, type RateLimiter } from "./rate-limiter.ts";
import { ACME_CHALLENGE_PATH, acmeChallenge } from "./routes/custom-tracking-domains.ts";
import { createHandlers } from "./routes/index.ts";
import type { Services } from "./services/index.ts";
import * as networks from "./services/networks.ts";
import * as users from "./services/users.ts";
import { invitationRoutes } from "./http/invitations.ts";
import { loadContract } from "./contract.ts";
import { collectorRoutes } from "./http/collector.ts";
import type { IngestLog } from "./tracking/log/ingest-log.ts";
import { trackedDatasets } from "./tracking/collect/datasets.ts";
import { sharedResolver } from "./tracking/ipdata/resolver.ts";

export interface AppOptions {
  db: Database;
  logger?: Logger;
  /** Check every response against the spec (a violation becomes a 500 and is logged). */
  validateResponses?: boolean;
  /** Called with each finished request's operationId and status (the contract-coverage report). */
  observe?: ResponseObserver;
  /** Default: in memory with the configuration's default policy (600 requests per 60 s per key). */
  rateLimiter?: RateLimiter;
  /** Default: the configuration's defaults (1 MiB body, 4096-character URL). */
  limits?: Pick<Config["limits"], "bodyBytes" | "urlLength">;
  /** Refuse plain HTTP with 403 `https_required`. Default: off. */
  requireHttps?: boolean;
  /** Express's `trust proxy`. Default: off. */
  trustProxy?: Config["trustProxy"];
  /** The services to serve (server/services/index.ts, made from the configuration). */
  services: Services;
  /** The tracking collector (server/tracking): its settings, and whom to tell that events were queued. */
  tracking?: { config?: TrackingConfig; log?: IngestLog; onQueued?: () => void; now?: () => Date };
  /** The demo website's dataset, which `/` links (outside production; server/demo.ts `demoWebsiteDataset`). Default: no link. */
  demoDataset?: () => Promise<string | undefined>;
  /** The service's start-up (server/main.ts), which /readyz reports. Default: readiness is the database alone. */
  startup?: StartupProgress;
}

const defaults = loadConfig({});

export function createApp({
  db,
  logger = createLogger(),
  validateResponses = true,
  observe,
  rateLimiter = memoryRateLimiter(defaults.rateLimit),
  limits = defaults.limits,
  requireHttps: httpsOnly = false,
  trustProxy = false,
  services,
  tracking = {},
  demoDataset,
  startup,
}: AppOptions) {
  const contract = loadContract();
  const check = validateResponses ? responseChecker(contract) : undefined;
  const app = express();
  app.disable("x-powered-by");
  // no ETag (a hash of every body): the contract has no conditional requests, and a 304 is not a documented answer
  app.set("etag", false);
  app.set("trust proxy", trustProxy);
  app.use(securityHeaders()); // helmet's defaults, computed once
  const context = requestContext(logger, requestMetrics(), observe);
  const chain: OperationChain = {
    // The key is checked before the body is read: 401 and the licence's 403 win over a
    // malformed body's 400 (the spec's order of precedence), and anonymous bodies are not read.
    guard: [...(httpsOnly ? [requireHttps()] : []), rateLimit(rateLimiter), apiKeyAuth(services)],
    input: [urlLengthLimit(limits.urlLength), jsonBody(limits.bodyBytes)],
    check,
  };
  const operations = express.Router({ caseSensitive: true });
  operations.use(undecodablePath(contract, chain));
  // the paid look-up's paths first: the router tries routes in turn (the spec's order otherwise)
  registerOperations(operations, contract, createHandlers(services), chain, ["lookupEmail", "bulkLookupEmail"]);
  operations.use(noOperation(chain));
  // The other routers serve none of the partner API's paths: its requests go from the request
  // context straight to the operations, without being tried against each of their routes.
  const partnerSegments = new Set(contract.operations.map((op) => firstSegment(op.path)));
  const partnerApi: express.RequestHandler = (req, res, next) => context(req, res, () => operations(req, res, next));
  // Tracking (/t.js, /collect, /demo): public, keyed by dataset, described by spec/collector.yaml.
  const trackingConfig = tracking.config ?? defaults.tracking;
  const collector = collectorRoutes({
    db: db.prisma,
    datasets: trackedDatasets(db.prisma, trackingConfig.settingsTtlSeconds),
    resolver: sharedResolver,
    networkOverrides: () => networks.current(services),
    config: trackingConfig,
    log: tracking.log,
    onQueued: tracking.onQueued,
    now: tracking.now,
  });
  // The collector's batches, the busiest path, go first: past no router that does not serve them,
  // with the same request line and metrics. Its router answers every POST /collect (never next()).
  app.post("/collect", context, collector);
  const others = express.Router();
  others.use(operatorRoutes(db, startup));
  others.use(docsRoutes()); // the API reference and the contract documents, without a key
  others.get("/", serviceIndex({ demoDataset })); // where to start, instead of 401
  others.use(context);
  // The certificate authority fetches HTTP-01 challenges over plain HTTP and without a key.
  others.get(ACME_CHALLENGE_PATH, acmeChallenge(services));
  others.use(collector);
  // The invited person's accept page (no key: the link's token is the credential); outside the partner spec.
  others.use(invitationRoutes({ open: (token) => users.openInvitation(services, token), accept: (token) => users.acceptInvitation(services, token) }));
  others.use(operations); // a path nobody serves: the guard, then 404
  app.use((req, res, next) => (partnerSegments.has(firstSegment(req.path)) ? partnerApi : others)(req, res, next));
  app.use(errorHandler({ logger, contract, check }));
  return app;
}

/** `/v1/email-lookup` -> `v1` */
function firstSegment(path: string): string {
  const end = path.indexOf("/", 1);
  return end < 0 ? path.slice(1) : path.slice(1, end);
}

/** Any JSON value (null, 42 and "x" too: the contract says what the body must be); counts the bytes read. */
function jsonBody(limitBytes: number): express.RequestHandler {
  return express.json({
    limit: limitBytes,
    strict: false,
    verify: (_req, res, buffer) => {
      (res as express.Response).locals.bodyBytes = buffer.length;
    },
  });
}
