// Rate limit per API key, with the IETF RateLimit header fields on every response to a request
// that carries a key. It runs before the key is checked: invalid keys are counted too, so one
// client cannot make the server look up a bad key without limit.
import type { RequestHandler } from "express";
import { metrics } from "../metrics.ts";
import type { RateLimiter } from "../rate-limiter.ts";
import { hashApiKey } from "../services/accounts.ts";
import { RateLimitedError } from "./errors.ts";

export function rateLimit(limiter: RateLimiter): RequestHandler {
  const policy = `"default";q=${limiter.requests};w=${limiter.windowSeconds}`;
  return async (req, res, next) => {
    const key = req.get("x-api-key");
    if (!key) return next(); // no key, nothing to count: the 401 that follows costs no lookup
    // the store sees the key's hash only, never the key
    const state = await limiter.consume(hashApiKey(key));
    res.setHeader("RateLimit-Policy", policy);
    res.setHeader("RateLimit", `"default";r=${state.remaining};t=${state.resetSeconds}`);
    if (!state.allowed) {
      metrics.rateLimitRejections.inc();
      res.setHeader("Retry-After", String(state.resetSeconds));
      throw new RateLimitedError(state.resetSeconds);
    }
    next();
  };
}
