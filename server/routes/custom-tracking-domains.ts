// Custom Tracking Domains: HTTP in, service call, HTTP out; and the HTTP-01 challenge answers
// that the certificate authority fetches (outside the partner API: no key, not in the spec).
import type { RequestHandler } from "express";
import type { Handler } from "../http/operations.ts";
import type { Services } from "../services/index.ts";
import * as certificateJobs from "../services/certificate-jobs.ts";
import * as trackingDomains from "../services/custom-tracking-domains.ts";

export function trackingDomainRoutes(services: Services): {
  validateCustomTrackingDomain: Handler<"validateCustomTrackingDomain">;
  addCustomTrackingDomain: Handler<"addCustomTrackingDomain">;
  updateCustomTrackingDomain: Handler<"updateCustomTrackingDomain">;
  getCustomTrackingDomain: Handler<"getCustomTrackingDomain">;
} {
  return {
    validateCustomTrackingDomain: async ({ auth, body }) => ({
      status: 200,
      body: await trackingDomains.validate(services, auth.accountId, body.datasetId, body.ctd),
    }),
    addCustomTrackingDomain: async ({ auth, body }) => ({
      status: 200,
      body: await trackingDomains.add(services, auth.accountId, body.datasetId, body.ctd),
    }),
    updateCustomTrackingDomain: async ({ auth, body }) => {
      await trackingDomains.update(services, auth.accountId, body.datasetId, body.ctd);
      return { status: 204 };
    },
    getCustomTrackingDomain: async ({ auth, query }) => ({
      status: 200,
      body: await trackingDomains.status(services, auth.accountId, query.datasetId),
    }),
  };
}

export const ACME_CHALLENGE_PATH = "/.well-known/acme-challenge/:token";

/** GET /.well-known/acme-challenge/:token: the key authorization of a challenge of the requested host. */
export function acmeChallenge(services: Services): RequestHandler {
  return async (req, res) => {
    const keyAuthorization = await certificateJobs.keyAuthorization(services, String(req.params.token), req.hostname);
    res.type("text/plain");
    if (keyAuthorization) res.status(200).send(keyAuthorization);
    else res.status(404).send("no such challenge");
  };
}
