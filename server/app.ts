// createApp: request context -> API key -> JSON body -> contract validation -> operations -> errors.
// No listen here: tests drive the app directly.
import express from "express";
import * as OpenApiValidator from "express-openapi-validator";
import type { Database } from "./db/database.ts";
import { apiKeyAuth } from "./http/auth.ts";
import { errorHandler } from "./http/errors.ts";
import { operationMatcher, registerOperations } from "./http/operations.ts";
import { responseChecker } from "./http/response-check.ts";
import { requestContext, type ResponseObserver } from "./http/request-context.ts";
import { createLogger, type Logger } from "./logging.ts";
import { createHandlers } from "./routes/index.ts";
import { createServices } from "./services/index.ts";
import { loadSpec } from "./spec.ts";

export interface AppOptions {
  db: Database;
  logger?: Logger;
  /** Check every response against the spec (a violation becomes a 500 and is logged). */
  validateResponses?: boolean;
  /** Called with each finished request's operationId and status (the contract-coverage report). */
  observe?: ResponseObserver;
  /** The clock of charges and idempotency keys (tests move it across a month's end). */
  now?: () => Date;
}

export function createApp({ db, logger = createLogger(), validateResponses = true, observe, now }: AppOptions) {
  const spec = loadSpec();
  const services = createServices(db.prisma, { now });
  const app = express();
  app.disable("x-powered-by");
  const operationOf = operationMatcher(spec);
  app.use(requestContext(logger, operationOf, observe));
  // The key is checked before the body is parsed: 401 and the licence's 403 win over a
  // malformed body's 400 (the spec's order of precedence), and anonymous bodies are not parsed.
  app.use(apiKeyAuth(services.accounts));
  app.use(express.json({ limit: "1mb" }));
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
