// createApp: security headers -> operator endpoints -> request context and metrics -> ACME
// challenges -> HTTPS -> rate limit -> API key -> URL length -> JSON body -> contract validation -> operations -> errors.
// No listen here (server/listen.ts): tests drive the app directly.
import express from "express";
import * as OpenApiValidator from "express-openapi-validator";
import helmet from "helmet";
import { type Config, loadConfig } from "./config.ts";
import type { Database } from "./db/database.ts";
import { apiKeyAuth } from "./http/auth.ts";
import { errorHandler } from "./http/errors.ts";
import { operatorRoutes } from "./http/operator.ts";
import { operationMatcher, registerOperations } from "./http/operations.ts";
import { rateLimit } from "./http/rate-limit.ts";
import { requestMetrics } from "./http/request-metrics.ts";
import { responseChecker } from "./http/response-check.ts";
import { requestContext, type ResponseObserver } from "./http/request-context.ts";
import { requireHttps, urlLengthLimit } from "./http/transport.ts";
import { createLogger, type Logger } from "./logging.ts";
import { memoryRateLimiter, type RateLimiter } from "./rate-limiter.ts";
import { ACME_CHALLENGE_PATH, acmeChallenge } from "./routes/custom-tracking-domains.ts";
import { createHandlers } from "./routes/index.ts";
import { createServices, type Services } from "./services/index.ts";
import { loadSpec } from "./spec.ts";

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
  /** The services to serve (shared with the certificate worker); made from `db` when absent. */
  services?: Services;
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
  services: given,
}: AppOptions) {
  const spec = loadSpec();
  const services = given ?? createServices(db.prisma, { logger });
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", trustProxy);
  const operationOf = operationMatcher(spec);
  app.use(helmet());
  app.use(operatorRoutes(db));
  app.use(requestContext(logger, operationOf, observe));
  app.use(requestMetrics(operationOf));
  // The certificate authority fetches HTTP-01 challenges over plain HTTP and without a key.
  app.get(ACME_CHALLENGE_PATH, acmeChallenge(services));
  if (httpsOnly) app.use(requireHttps());
  app.use(rateLimit(rateLimiter));
  // The key is checked before the body is parsed: 401 and the licence's 403 win over a
  // malformed body's 400 (the spec's order of precedence), and anonymous bodies are not parsed.
  app.use(apiKeyAuth(services.accounts));
  app.use(urlLengthLimit(limits.urlLength));
  app.use(express.json({ limit: limits.bodyBytes }));
  app.use(
    ...(OpenApiValidator.middleware({
      apiSpec: loadSpec(),
      validateRequests: { allowUnknownQueryParameters: false },
      validateResponses,
      validateSecurity: false, // apiKeyAuth answers 401/403 with the specified bodies
    }) as express.RequestHandler[]),
  );
  const router = express.Router();
  registerOperations(router, spec, createHandlers(services));
  app.use(router);
  app.use(errorHandler({ logger, operationOf, check: validateResponses ? responseChecker(spec) : undefined }));
  return app;
}
