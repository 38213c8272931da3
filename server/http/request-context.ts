// A request id on every response, a child logger carrying it (res.locals.log, made when first used),
// the request metrics (request-metrics.ts) and one log line per request through pino (never its
// query string, body or headers: they carry e-mail addresses and keys). The operation is known
// once routing has reached it (res.locals.operationId).
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Request, RequestHandler, Response } from "express";
import type { Logger } from "../logging.ts";
import type { RequestMeter } from "./request-metrics.ts";

const acceptableId = /^[A-Za-z0-9._-]{8,128}$/;

export type ResponseObserver = (operationId: string | undefined, status: number) => void;

/** The fields of the request line (the requestId first and once, where pino-http wrote it as a binding). */
function requestLine(req: IncomingMessage, res: ServerResponse, durationMs: number) {
  const { locals } = res as Response;
  return {
    requestId: locals.requestId as string,
    method: req.method,
    path: (req as Request).path,
    operationId: locals.operationId as string | undefined,
    status: res.statusCode,
    durationMs,
    accountId: locals.accountId as string | undefined,
  };
}

/**
 * res.locals.log: a child logger with the request id and, once routing has reached it, the
 * operationId. Made on first use: most requests log nothing but their request line.
 */
function requestLogger(res: Response, logger: Logger): void {
  let child: Logger | undefined;
  Object.defineProperty(res.locals, "log", {
    enumerable: true,
    get: () => (child ??= logger.child({ requestId: res.locals.requestId, operationId: res.locals.operationId })),
  });
}

export function requestContext(logger: Logger, meter: RequestMeter, observe?: ResponseObserver): RequestHandler {
  // One line per request written through pino itself, as pino-http wrote it (its requestId binding
  // first, then requestLine's fields, "request"), without pino-http's two child loggers and three
  // listeners per request: the line is the only thing this service used it for (res.locals.log
  // is made on first use, below).
  const pino = logger.pino;
  return (req, res, next) => {
    const startedAt = performance.now();
    const incoming = req.headers["x-request-id"];
    const requestId = typeof incoming === "string" && acceptableId.test(incoming) ? incoming : randomUUID();
    res.locals.requestId = requestId;
    res.setHeader("X-Request-Id", requestId);
    requestLogger(res, logger);
    meter.started();
    // one listener for the metrics and the line: "close" comes after "finish" for every answer,
    // and also for one the client did not wait for
    res.once("close", () => {
      const durationMs = performance.now() - startedAt;
      meter.finished(res.locals.operationId, res.statusCode, durationMs / 1000);
      if (observe && res.writableFinished) observe(res.locals.operationId, res.statusCode);
      pino.info(requestLine(req, res, Math.round(durationMs)), "request");
    });
    next();
  };
}
