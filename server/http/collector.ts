// The public tracking endpoints (no API key; spec/collector.yaml): the script at GET /t.js, the
// collector POST /collect (a JSON batch) with its GET pixel fallback, and the demo page /demo.
// A request is refused whole (nothing written) when its dataset is unknown or its batch is
// malformed or over a limit; otherwise its events are resolved, filtered and appended to the
// ingest log in one write (ingest-log.ts), and it is answered 202 once the log acknowledged them
// (503 with Retry-After when it did not: nothing was stored).
import { readFileSync } from "node:fs";
import express, { type Request, type RequestHandler, type Response, Router } from "express";
import { isbot } from "isbot";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import type { Db } from "../db/database.ts";
import { Invalid, type InvalidField } from "../domain/errors.ts";
import { batchErrors } from "./collector-batch.ts";
import { MethodNotAllowedError, UnsupportedMediaTypeError } from "./errors.ts";
import { PERCENT_ENCODING_MESSAGE, parseQuery } from "./form-encoding.ts";
import { nestsDeeperThan, TOO_DEEP_MESSAGE } from "./json-depth.ts";
import { breaksTextRule, type JsonPath, TEXT_RULE_MESSAGE, textRuleBreaks } from "./text-rule.ts";
import type { TrackingConfig } from "../config.ts";
import { fromRoot } from "../paths.ts";
import { cookielessVisitorIds } from "../tracking/collect/cookieless.ts";
import type { TrackedDataset, TrackedDatasets } from "../tracking/collect/datasets.ts";
import { demoConsentScript, demoPage } from "../tracking/collect/demo-page.ts";
import { SECRET_FIELD_NAME } from "../tracking/collect/form-fields.ts";
import { sendScript } from "../tracking/collect/script-response.ts";
import { type AcceptedEvent, type Batch, keptFields, leadIdOf, LIMITS, type QueuedBatch, type TrackedEvent } from "../tracking/collect/events.ts";
import { groupedAppends, type IngestLog, tableLog } from "../tracking/log/ingest-log.ts";
import { sendText } from "./reply.ts";
import { maskIp, withoutPort } from "../tracking/ipdata/ip.ts";
import { trackingMetrics } from "../tracking/collect/metrics.ts";
import { LEAD_NETWORKS, type NetworkType } from "../tracking/ipdata/network-class.ts";
import { receivedAtWithin } from "../tracking/collect/received-at.ts";
import type { Resolver } from "../tracking/ipdata/resolver.ts";

export interface CollectorDeps {
  db: Db;
  datasets: TrackedDatasets;
  resolver: () => Resolver;
  /** The operators' network types per ASN (services/networks.ts `current`: cached per process). */
  networkOverrides: () => Promise<ReadonlyMap<number, NetworkType>>;
  config: TrackingConfig;
  /** Where accepted events go (default: the queue table of `db`). */
  log?: IngestLog;
  /** Told after events are queued, so that it writes them soon. */
  onQueued?: () => void;
  now?: () => Date;
}

/** The script without its header and whole-line comments: they are for its readers here, not for every page's download. */
const scriptSource = readFileSync(fromRoot("server/tracking/collect/script.js"), "utf8")
  .replace(/^\/\*[\s\S]*?\*\/\n/, "")
  .replace(/^[ \t]*\/\/.*\n/gm, "");
const PIXEL = Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64");

/** The script with the dataset's settings in it: a settings change reaches pages within the cache time. */
export function scriptFor(dataset: TrackedDataset): string {
  const settings = {
    dataset: dataset.datasetId,
    formTracking: dataset.formTracking,
    partialFormTracking: dataset.partialFormTracking,
    formInputAttribute: dataset.formInputAttribute,
    secretNames: SECRET_FIELD_NAME.source,
    consentMode: dataset.consentMode,
    respectDoNotTrack: dataset.respectDoNotTrack,
  };
  return scriptSource.replace("__SETTINGS__", JSON.stringify(settings));
}

/** Browsers send few distinct user agents: the bot test (a large regular expression) is remembered per string. */
const BOT_TEST_CACHE = 2_000;
const botTests = new Map<string, boolean>();
function isBot(userAgent: string): boolean {
  let bot = botTests.get(userAgent);
  if (bot === undefined) {
    if (botTests.size >= BOT_TEST_CACHE) botTests.clear();
    bot = isbot(userAgent);
    botTests.set(userAgent, bot);
  }
  return bot;
}

/** Anyone's page may load the script and send to the collector (no cookies are sent or read). */
const cors: RequestHandler = (_req, res, next) => {
  res.setHeader("Access-Control-Allow-Origin", "*");
  res.setHeader("Cross-Origin-Resource-Policy", "cross-origin");
  next();
};

function rateLimited(res: Response, error: RateLimiterRes, what: string): void {
  const seconds = Math.max(1, Math.ceil(error.msBeforeNext / 1000));
  trackingMetrics.events.inc({ outcome: "rate_limited" });
  res.setHeader("Retry-After", String(seconds));
  res.status(429).json({ error: "rate_limited", message: `Too many ${what}; retry in ${seconds} s`, retryAfterSeconds: seconds });
}

/** As the partner API's DatasetId (spec/collector.yaml, parameter Dataset). */
const DATASET_ID_MAX_LENGTH = 64;

const batchRefused = (details: InvalidField[]) => new Invalid("The batch was refused whole: nothing was written", details, "invalid_batch");

/**
 * The contract's character rule and nesting bound (server/http/text-rule.ts, json-depth.ts) before the batch's
 * schema: PostgreSQL cannot store U+0000, and a deep body must not reach a recursive walk.
 */
function checkText(value: unknown, location: InvalidField["location"], fieldOf: (path: JsonPath) => string): void {
  if (nestsDeeperThan(value)) throw batchRefused([{ location, field: "(root)", message: TOO_DEEP_MESSAGE }]);
  const details = textRuleBreaks(value).map((path) => ({ location, field: fieldOf(path), message: TEXT_RULE_MESSAGE }));
  if (details.length) throw batchRefused(details);
}

/** `events.0.url`, the way the batch's schema names fields. */
const dotted = (path: JsonPath) => (path.length ? path.join(".") : "(root)");

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The body's bytes as text: UTF-8 only (JSON's encoding, whatever charset the media type names),
 * a leading byte order mark dropped. Express's text parser would decode a byte that is not UTF-8
 * into U+FFFD and store it.
 */
function bodyText(body: unknown): string {
  try {
    return utf8.decode(Buffer.isBuffer(body) ? body : new Uint8Array());
  } catch {
    throw new Invalid("The request body is not UTF-8", [{ location: "body", field: "(root)", message: "must be UTF-8 encoded JSON" }], "malformed_json");
  }
}

/** The batch as JSON, whatever content type the script could use (sendBeacon sends text/plain). */
function parseBatch(body: unknown): TrackedEvent[] {
  let value: unknown = body;
  if (typeof body === "string") {
    try {
      value = JSON.parse(body);
    } catch {
      throw new Invalid("The request body is not valid JSON", [{ location: "body", field: "(root)", message: "malformed JSON" }], "malformed_json");
    }
  }
  checkText(value, "body", dotted);
  const details = batchErrors(value);
  if (details.length) throw batchRefused(details);
  return (value as Batch).events;
}

/** The query parameters among `names` that are not percent-encoded UTF-8 (Express's parser keeps them as sent). */
function malformedParameters(req: Request, names: readonly string[]): string[] {
  const at = req.originalUrl.indexOf("?");
  if (at < 0) return [];
  return parseQuery(req.originalUrl.slice(at + 1)).malformed.filter((name) => names.includes(name));
}

/** The pixel's parameters: v visitor id, u URL, r referrer, t title. */
const PIXEL_PARAMETERS = ["v", "u", "r", "t"] as const;

/** The media types of a batch (spec/collector.yaml): sendBeacon's text/plain, or application/json. */
const BATCH_TYPES = ["text/plain", "application/json"];

const unsupportedMediaType: RequestHandler = (req, _res, next) =>
  next(req.is(BATCH_TYPES) ? undefined : new UnsupportedMediaTypeError(`The batch must be sent as ${BATCH_TYPES.join(" or ")}; nothing was written`));

/** 405 with `Allow` for the methods a public path does not have (they need no key: not a 401). */
const methodNotAllowed =
  (allow: string): RequestHandler =>
  (_req, _res, next) =>
    next(new MethodNotAllowedError(allow));

/** Global Privacy Control (Sec-GPC) or Do Not Track sent by the browser, when the dataset honours them. */
const optedOut = (req: Request, dataset: TrackedDataset) => dataset.respectDoNotTrack && (req.get("sec-gpc") === "1" || req.get("dnt") === "1");

/** Whether the connecting peer is a proxy that `trust proxy` believes (express's own test of an address, hop 0). */
function fromTrustedProxy(req: Request): boolean {
  const trusts = req.app.get("trust proxy fn") as (address: string, hop: number) => boolean;
  const peer = req.socket.remoteAddress;
  return peer !== undefined && trusts(peer, 0);
}

/**
 * The collector's state, made once per app: its dependencies, the rate limiters (per address, per
 * dataset), the cookieless visitor ids and the grouped appends to the ingest log. Its methods are
 * the steps of a request; collectorRoutes mounts them.
 */
class Collector {
  private readonly perIp: RateLimiterMemory;
  private readonly perDataset: RateLimiterMemory;
  private readonly cookieless: ReturnType<typeof cookielessVisitorIds>;
  private readonly append: (batch: QueuedBatch) => Promise<void>;
  private readonly now: () => Date;
  readonly config: TrackingConfig;

  constructor(private readonly deps: CollectorDeps) {
    const { db, config, now = () => new Date(), log = tableLog(db) } = deps;
    this.config = config;
    this.now = now;
    this.perIp = new RateLimiterMemory({ points: config.ipRequestsPerMinute, duration: 60 });
    this.perDataset = new RateLimiterMemory({ points: config.datasetEventsPerMinute, duration: 60 });
    this.cookieless = cookielessVisitorIds(db);
    this.append = groupedAppends((batches) => log.append(batches));
  }

  /** The request's dataset; a `dataset` that breaks the character rule or is longer than any id is a 400, never a query. */
  datasetOf(req: Request) {
    const named = req.query.dataset;
    const broken = typeof named !== "string" ? undefined
      : malformedParameters(req, ["dataset"]).length ? PERCENT_ENCODING_MESSAGE
      : breaksTextRule(named) ? TEXT_RULE_MESSAGE
      : named.length > DATASET_ID_MAX_LENGTH ? `must be at most ${DATASET_ID_MAX_LENGTH} characters`
      : undefined;
    if (broken) throw new Invalid("Invalid request: query dataset " + broken, [{ location: "query", field: "dataset", message: broken }]);
    return this.deps.datasets.resolve(req.hostname, named);
  }

  /** The client's address: the socket's, or what a trusted proxy says (express `trust proxy`), without a port. */
  private clientIp(req: Request): string {
    const ip = withoutPort(req.ip ?? "");
    const loopback = /^(127\.|::1$|::ffff:127\.)/.test(ip);
    return loopback && this.config.loopbackIp ? this.config.loopbackIp : ip;
  }

  /**
   * When the batch was received: the time a trusted proxy puts in TRACKING_RECEIVED_AT_HEADER when
   * it is valid, not in the future and within the pending days, else this collector's now. Anyone
   * else could set the header, so only a trusted proxy's is believed.
   */
  private receivedAt(req: Request): Date {
    const now = this.now();
    const header = this.config.receivedAtHeader;
    if (!header || !fromTrustedProxy(req)) return now;
    return receivedAtWithin(req.get(header), now, this.config.identities.pendingDays) ?? now;
  }

  /** The visitor id of a cookieless dataset's events (whatever the script sent), else undefined; by the service's own now, whose day's salt is the only one kept. */
  private derivedVisitorId(req: Request, dataset: TrackedDataset) {
    return dataset.consentMode === "cookieless" ? this.cookieless.visitorId(this.now(), dataset.datasetId, this.clientIp(req), req.get("user-agent") ?? "") : undefined;
  }

  /** Resolves, filters and masks the events; the batch to queue (none for bots and opted-out browsers; pending for networks that are not a lead's). */
  private accept(
    req: Request,
    dataset: TrackedDataset,
    events: TrackedEvent[],
    derivedId: string | undefined,
    overrides: ReadonlyMap<number, NetworkType>,
  ): QueuedBatch | undefined {
    if (isBot(req.get("user-agent") ?? "")) {
      trackingMetrics.events.inc({ outcome: "bot" }, events.length);
      return undefined;
    }
    if (optedOut(req, dataset)) {
      trackingMetrics.events.inc({ outcome: "do_not_track" }, events.length);
      return undefined;
    }
    const ip = this.clientIp(req);
    const resolver = this.deps.resolver();
    const network = resolver.resolve(ip, { geo: false, overrides });
    const type = network?.networkType ?? "unknown";
    // isp, hosting, mobile and unknown networks: kept unlisted, pending the address's identity (the writer's)
    const pending = !network || !LEAD_NETWORKS.has(type) || !network.organizationName;
    const accepted: AcceptedEvent[] = [];
    for (const event of events) {
      if (event.type === "form" && (!dataset.formTracking || (event.partial && !dataset.partialFormTracking))) {
        trackingMetrics.events.inc({ outcome: "form_tracking_off" });
        continue;
      }
      const visitorId = derivedId ?? event.visitorId;
      if (!visitorId) throw new Invalid("The batch was refused whole: nothing was written", [{ location: "body", field: "events.visitorId", message: "is required" }], "invalid_batch");
      accepted.push(event.type === "form" ? { ...event, visitorId, fields: keptFields(event.fields) } : { ...event, visitorId });
    }
    trackingMetrics.events.inc({ outcome: pending ? "pending" : "queued" }, accepted.length);
    if (!accepted.length) return undefined;
    const place = resolver.placeOf(ip);
    return {
      accountId: dataset.accountId,
      datasetId: dataset.datasetId,
      at: this.receivedAt(req).toISOString(),
      enrich: dataset.contactEnrichment,
      network: {
        leadId: pending ? "" : leadIdOf(network.organizationName!),
        organizationName: network?.organizationName ?? "",
        organizationDomain: network?.organizationDomain ?? null,
        asn: network?.asn ?? null,
        networkType: type,
        country: place.country,
        city: place.city,
        // masked after resolution, before anything is stored
        ip: dataset.allowIpMasking ? maskIp(ip)! : ip,
        ...(pending && { pending: true as const }),
        ...(pending && dataset.allowIpMasking && { masked: true as const }),
      },
      events: accepted,
    };
  }

  /**
   * A request's batch (`events`, read once the address passed its rate limit): the dataset's rate
   * limit, then accepted into the ingest log and `answer`ed with what was queued of what was received.
   */
  async collect(req: Request, res: Response, events: () => TrackedEvent[], answer: (queued: number, received: number) => void): Promise<void> {
    try {
      await this.perIp.consume(this.clientIp(req));
    } catch (error) {
      if (error instanceof RateLimiterRes) return rateLimited(res, error, "requests from this address");
      throw error;
    }
    const dataset = await this.datasetOf(req);
    const batch = events();
    try {
      await this.perDataset.consume(dataset.datasetId, batch.length);
    } catch (error) {
      if (error instanceof RateLimiterRes) return rateLimited(res, error, "events for this dataset");
      throw error;
    }
    const accepted = this.accept(req, dataset, batch, await this.derivedVisitorId(req, dataset), await this.deps.networkOverrides());
    if (accepted) {
      await this.append(accepted);
      this.deps.onQueued?.();
    }
    answer(accepted?.events.length ?? 0, batch.length);
  }
}

/** The pixel's batch: one page view in the query (v: visitor id, u: URL, r: referrer, t: title). */
function pixelBatch(req: Request): TrackedEvent[] {
  const q = req.query as Record<string, string | undefined>;
  const malformed = malformedParameters(req, PIXEL_PARAMETERS);
  if (malformed.length) throw batchRefused(malformed.map((field) => ({ location: "query", field, message: PERCENT_ENCODING_MESSAGE })));
  checkText({ v: q.v, u: q.u, r: q.r, t: q.t }, "query", (path) => String(path[0]));
  return parseBatch({ events: [{ type: "pageview", visitorId: q.v, url: q.u, ...(q.r && { referrer: q.r }), ...(q.t && { title: q.t }) }] });
}

/** The public tracking routes over one Collector (its rate limiters and appends live as long as the app). */
export function collectorRoutes(deps: CollectorDeps): Router {
  const collector = new Collector(deps);
  const router = Router();

  router.options("/collect", cors, (_req, res) => {
    res.setHeader("Access-Control-Allow-Methods", "POST, GET");
    res.setHeader("Access-Control-Allow-Headers", "content-type");
    res.setHeader("Access-Control-Max-Age", "86400");
    res.status(204).end();
  });

  router.post("/collect", cors, unsupportedMediaType, express.raw({ type: () => true, limit: LIMITS.bodyBytes }), async (req, res) => {
    await collector.collect(
      req,
      res,
      () => parseBatch(bodyText(req.body)),
      (queued, received) => sendText(res, 202, "application/json", `{"received":${received},"queued":${queued}}`),
    );
  });

  router.get("/collect", cors, async (req, res) => {
    await collector.collect(
      req,
      res,
      () => pixelBatch(req),
      () => {
        res.setHeader("Cache-Control", "no-store");
        res.status(200).type("image/gif").send(PIXEL);
      },
    );
  });

  router.get("/t.js", cors, async (req, res) => {
    sendScript(req, res, scriptFor(await collector.datasetOf(req)), collector.config.settingsTtlSeconds);
  });

  router.get("/demo-consent.js", (_req, res) => {
    res.type("application/javascript").send(demoConsentScript);
  });

  // with CORS: a page's fetch with another method sees the 405, not an opaque network failure
  router.all("/collect", cors, methodNotAllowed("GET, HEAD, POST, OPTIONS"));
  router.all("/t.js", cors, methodNotAllowed("GET, HEAD"));

  // POST: the demo form's submission lands on page 2, which confirms it (the script has sent the form's fields).
  router.all("/demo", async (req, res) => {
    const dataset = await collector.datasetOf(req);
    const page = req.query.page === "2" ? 2 : 1;
    res.type("html").send(
      demoPage(dataset.datasetId, page, {
        consentRequired: dataset.consentMode === "required",
        asBot: isBot(req.get("user-agent") ?? ""),
        formTracking: dataset.formTracking,
        formSent: req.method === "POST",
      }),
    );
  });

  return router;
}
