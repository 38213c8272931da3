// Security headers: helmet's defaults, on every response. helmet() with its defaults sets fixed
// values (no CSP directive is a function of the request), so its middleware is run once here, on
// a recorder, and each response gets the recorded headers in one step: the same headers, without
// helmet's chain of a dozen middleware functions per request. Options that make a header depend on
// the request (a nonce function) would not record: made here, they throw.
import type { RequestHandler } from "express";
import helmet, { type HelmetOptions } from "helmet";

export function securityHeaders(options?: Readonly<HelmetOptions>): RequestHandler {
  const set = new Map<string, string>();
  const removed: string[] = [];
  let done = false;
  const notFixed = (what: string) => () => {
    throw new Error(`securityHeaders: helmet read the ${what}; its headers are not fixed`);
  };
  const writes = {
    setHeader: (name: string, value: string) => set.set(name, value),
    removeHeader: (name: string) => removed.push(name),
  };
  // anything else read of the request or the response (res.locals.nonce, req.path) throws
  const recorder = new Proxy(writes, { get: (target, key) => (key in target ? target[key as keyof typeof writes] : notFixed("response")()) });
  const request = new Proxy({}, { get: notFixed("request") });
  helmet(options)(request as never, recorder as never, (error?: unknown) => {
    if (error) throw error;
    done = true;
  });
  if (!done) throw new Error("securityHeaders: helmet did not finish at once; its headers are not fixed");
  return (_req, res, next) => {
    for (const name of removed) res.removeHeader(name);
    res.setHeaders(set);
    next();
  };
}
