// x-api-key authentication: every API request names its account through its key.
import type { RequestHandler } from "express";
import * as accounts from "../services/accounts.ts";
import { NoLicenceError, UnauthorizedError } from "./errors.ts";

export interface Auth {
  accountId: string;
  keyId: string;
}

const reasons = {
  invalid: "The API key is not valid",
  revoked: "The API key has been revoked",
  expired: "The API key has expired",
} as const;

export function apiKeyAuth(deps: accounts.AccountDeps): RequestHandler {
  return async (req, res, next) => {
    const key = req.get("x-api-key");
    if (!key) throw new UnauthorizedError("missing_api_key", "Send your API key in the x-api-key header");
    const check = await accounts.checkApiKey(deps, key);
    if (!check.ok) throw new UnauthorizedError(`${check.reason}_api_key`, reasons[check.reason]);
    res.locals.accountId = check.accountId;
    if (!check.licensed) throw new NoLicenceError();
    res.locals.auth = { accountId: check.accountId, keyId: check.keyId } satisfies Auth;
    next();
  };
}
