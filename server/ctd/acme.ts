// Certificate issuance through ACME (RFC 8555) with the HTTP-01 challenge, answered by this
// service at /.well-known/acme-challenge/:token. Every step that matters for a restart is
// reported to a ProgressSink (which stores it) before the next step depends on it, so a job
// resumed by another process continues the same order where it can.
//
// We never "verify" the challenge ourselves (acme-client's auto mode fetches the customer's
// domain first): the service makes no request to a customer-controlled name.
import * as acme from "acme-client";
import { assertPublicHost, outboundAgents } from "../security/address-guard.ts";
import type { TrackingDomainConfig } from "../config.ts";

export interface IssuedCertificate {
  certificatePem: string;
  privateKeyPem: string;
  notAfter: Date;
}

/** What an earlier attempt of the same job left behind. */
export interface OrderProgress {
  orderUrl?: string | null;
  /** The certificate key the order was (or is being) finalised with. */
  privateKeyPem?: string | null;
}

export interface ProgressSink {
  /** A new order replaces the previous one (and its key and challenge). */
  orderCreated(orderUrl: string): Promise<void>;
  /** Must be served at /.well-known/acme-challenge/<token> before the CA is told to look. */
  challengePublished(token: string, keyAuthorization: string): Promise<void>;
  /** Stored (encrypted) before the order is finalised with it. */
  keyChosen(privateKeyPem: string): Promise<void>;
}

/** Where the ACME account key is kept (encrypted); `save` returns the key that won a race. */
export interface AccountKeyStore {
  load(directoryUrl: string): Promise<string | undefined>;
  save(directoryUrl: string, privateKeyPem: string): Promise<string>;
}

export interface AcmeSettings {
  acme: TrackingDomainConfig["acme"];
  allowPrivateAddresses: boolean;
}

type Order = acme.Order;

/** An error whose message is fit to show a customer (the CA's own problem detail). */
export class CertificateError extends Error {}

let guarded = true;
let hostCheckInstalled = false;

/**
 * acme-client talks through one shared axios instance, so its transport is the process's: agents
 * that refuse non-public addresses at connection time, and a check of each request's host before
 * it is sent (an error there reaches us intact; acme-client mangles connection errors).
 */
function configureTransport(ca: string | undefined, allowPrivateAddresses: boolean): void {
  guarded = !allowPrivateAddresses;
  Object.assign(acme.axios.defaults, outboundAgents({ ca, allowPrivateAddresses }));
  if (hostCheckInstalled) return;
  hostCheckInstalled = true;
  acme.axios.interceptors.request.use(async (request) => {
    if (guarded && request.url) await assertPublicHost(new URL(request.url).hostname);
    return request;
  });
}

export function acmeIssuer({ acme: settings, allowPrivateAddresses }: AcmeSettings, accountKeys: AccountKeyStore) {
  configureTransport(settings.caPem, allowPrivateAddresses);
  let client: Promise<acme.Client> | undefined;

  async function newClient(): Promise<acme.Client> {
    const { directoryUrl, contactEmail } = settings;
    const stored = await accountKeys.load(directoryUrl);
    const accountKey = stored ?? (await accountKeys.save(directoryUrl, (await acme.crypto.createPrivateEcdsaKey()).toString()));
    const created = new acme.Client({ directoryUrl, accountKey, backoffMin: 1000, backoffMax: 10_000, backoffAttempts: 12 });
    // Registers the key, or finds the account it already has.
    await created.createAccount({ termsOfServiceAgreed: true, ...(contactEmail ? { contact: [`mailto:${contactEmail}`] } : {}) });
    return created;
  }

  /** One client per process, made on first use; a failed attempt is not kept. */
  function accountClient(): Promise<acme.Client> {
    client ??= newClient().catch((error) => {
      client = undefined;
      throw error;
    });
    return client;
  }

  /** The earlier order when it can still lead to a certificate with the key we hold. */
  async function resumable(c: acme.Client, progress: OrderProgress): Promise<Order | undefined> {
    if (!progress.orderUrl) return undefined;
    const order = await c.getOrder({ url: progress.orderUrl } as Order).catch(() => undefined);
    if (!order || order.status === "invalid") return undefined;
    const finalised = order.status === "processing" || order.status === "valid";
    return finalised && !progress.privateKeyPem ? undefined : order;
  }

  async function authorize(c: acme.Client, order: Order, sink: ProgressSink): Promise<void> {
    for (const authz of await c.getAuthorizations(order)) {
      if (authz.status === "valid") continue;
      const challenge = authz.challenges.find((ch) => ch.type === "http-01");
      if (!challenge) throw new CertificateError("The certificate authority offered no HTTP-01 challenge");
      await sink.challengePublished(challenge.token, await c.getChallengeKeyAuthorization(challenge));
      if (challenge.status === "pending") await c.completeChallenge(challenge);
      await c.waitForValidStatus(challenge).catch((error: Error) => {
        throw new CertificateError(`The certificate authority could not validate the domain: ${error.message}`);
      });
    }
  }

  return {
    /** Issues a certificate for `domain`, continuing `progress` where possible. */
    async issue(domain: string, progress: OrderProgress, sink: ProgressSink): Promise<IssuedCertificate> {
      const c = await accountClient();
      let order = await resumable(c, progress);
      let privateKeyPem = order ? progress.privateKeyPem : undefined;
      if (!order) {
        order = await c.createOrder({ identifiers: [{ type: "dns", value: domain }] });
        await sink.orderCreated(order.url);
      }
      if (order.status === "pending") {
        await authorize(c, order, sink);
        order = await c.getOrder(order);
      }
      if (order.status === "ready") {
        // A fresh key for every finalisation: the one stored is only reused for an order it finalised.
        privateKeyPem = (await acme.crypto.createPrivateEcdsaKey()).toString();
        await sink.keyChosen(privateKeyPem);
        const [, csr] = await acme.crypto.createCsr({ altNames: [domain] }, privateKeyPem);
        order = await c.finalizeOrder(order, csr);
      }
      if (!privateKeyPem) throw new CertificateError(`Unexpected order status ${order.status}`);
      const certificatePem = await c.getCertificate(order);
      return { certificatePem, privateKeyPem, notAfter: acme.crypto.readCertificateInfo(certificatePem).notAfter };
    },
  };
}

export type AcmeIssuer = ReturnType<typeof acmeIssuer>;
