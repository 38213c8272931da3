// Refusals that depend on how a request arrived, not on who sent it: they come before the rate
// limit and the API key.
import type { RequestHandler } from "express";
import { BadRequestError, HttpsRequiredError } from "./errors.ts";

/**
 * Plain HTTP is refused (403 `https_required`). `req.secure` is true for TLS terminated here, and
 * for `X-Forwarded-Proto: https` only when the sending proxy is trusted (`trust proxy`), so a
 * client cannot claim HTTPS by setting the header itself.
 */
export function requireHttps(): RequestHandler {
  return (req, _res, next) => {
    if (!req.secure) throw new HttpsRequiredError();
    next();
  };
}

/** A request target (path and query) longer than `maxLength` characters: 400 `url_too_long`. */
export function urlLengthLimit(maxLength: number): RequestHandler {
  return (req, _res, next) => {
    if (req.originalUrl.length > maxLength) {
      const location = req.originalUrl.includes("?") ? "query" : "path";
      throw new BadRequestError(
        `The URL is longer than ${maxLength} characters`,
        [{ location, field: "(url)", message: `must not be longer than ${maxLength} characters` }],
        "url_too_long",
      );
    }
    next();
  };
}
