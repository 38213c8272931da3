// A request id on every response, and one log line per request (never its query string,
// body or headers: they carry e-mail addresses and keys).
import { randomUUID } from "node:crypto";
import type { RequestHandler } from "express";
import type { Logger } from "../logging.ts";

const acceptableId = /^[A-Za-z0-9._-]{8,128}$/;

export type ResponseObserver = (operationId: string | undefined, status: number) => void;

export function requestContext(
  logger: Logger,
  operationOf: (method: string, path: string) => string | undefined,
  observe?: ResponseObserver,
): RequestHandler {
  return (req, res, next) => {
    const incoming = req.get("x-request-id");
    const requestId = incoming && acceptableId.test(incoming) ? incoming : randomUUID();
    res.locals.requestId = requestId;
    res.setHeader("X-Request-Id", requestId);
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      const operationId = operationOf(req.method, req.path);
      observe?.(operationId, res.statusCode);
      logger.info("request", {
        requestId,
        method: req.method,
        path: req.path,
        operationId,
        status: res.statusCode,
        durationMs: Number(process.hrtime.bigint() - started) / 1e6,
        accountId: res.locals.accountId,
      });
    });
    next();
  };
}
