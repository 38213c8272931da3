// A request id on every response, a child logger carrying it (res.locals.log, made when first used), and one log line
// per request through pino-http (never its query string, body or headers: they carry e-mail
// addresses and keys). The operation is known once routing has reached it (res.locals.operationId).
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Request, RequestHandler, Response } from "express";
import { pinoHttp } from "pino-http";
import type { Logger } from "../logging.ts";

const acceptableId = /^[A-Za-z0-9._-]{8,128}$/;

export type ResponseObserver = (operationId: string | undefined, status: number) => void;

/** The fields of the request line (its requestId comes from pino-http's binding, once). */
function requestLine(req: IncomingMessage, res: ServerResponse, durationMs: number) {
  const { locals } = res as Response;
  return {
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

export function requestContext(logger: Logger, observe?: ResponseObserver): RequestHandler[] {
  const httpLog = pinoHttp({
    logger: logger.pino,
    quietReqLogger: true,
    // The line holds requestLine's fields only: pino-http's own req/res objects carry the query
    // string and the headers (keys, forwarded client addresses).
    wrapSerializers: false,
    serializers: { req: () => undefined, res: () => undefined },
    customAttributeKeys: { reqId: "requestId" },
    genReqId(req, res) {
      const incoming = req.headers["x-request-id"];
      const requestId = typeof incoming === "string" && acceptableId.test(incoming) ? incoming : randomUUID();
      (res as Response).locals.requestId = requestId;
      res.setHeader("X-Request-Id", requestId);
      return requestId;
    },
    customLogLevel: () => "info",
    customSuccessMessage: () => "request",
    customErrorMessage: () => "request",
    customSuccessObject: (req, res, val: { responseTime: number }) => requestLine(req, res, val.responseTime),
    customErrorObject: (req, res, _error, val: { responseTime: number }) => requestLine(req, res, val.responseTime),
  });
  return [
    httpLog,
    (_req, res, next) => {
      requestLogger(res, logger);
      if (observe) res.on("finish", () => observe(res.locals.operationId, res.statusCode));
      next();
    },
  ];
}
