// Consent in a real browser (Debian's chromium through playwright-core): a page on one loopback
// origin loads the script from another (a proxy in front of the service that says the visitor
// has a public address, as a load balancer does). Each dataset's consentMode and
// respectDoNotTrack are set through the API; what the browser sends is watched on the page, what
// was stored is read through the API.
import { readFileSync } from "node:fs";
import http from "node:http";
import type { Browser, BrowserContext, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type IngestWriter } from "../server/tracking/log/writer.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { eventually } from "./support/eventually.ts";
import { chromiumMissing, closeServers, launchChromium, listenOn } from "./support/browser.ts";
import { as } from "./support/suite.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import { ADDRESSES, BROWSER_UA, ONLY_EVIDENCE, startWiredWriter, testTrackingConfig } from "./support/tracking.ts";
import * as datasets from "../server/services/datasets.ts";

let api: TestApi;
let tenant: Tenant;
let writer: IngestWriter;
let browser: Browser;
const servers: http.Server[] = [];
let pageOrigin = "";
let trackingOrigin = "";

/** docs/tracking.md's page to try the script locally, as its shell snippet writes it for dataset `ds`. */
function docsTryPage(ds: string): string {
  const snippet = /<<HTML\n([\s\S]*?)\nHTML\n/.exec(readFileSync("docs/tracking.md", "utf8"))?.[1];
  if (!snippet) throw new Error("docs/tracking.md has no page between <<HTML and HTML");
  return snippet.replaceAll("$B", trackingOrigin).replaceAll("$DS", ds);
}

/** The website: pages with the script (and, with ?consent=yes|no, the page's consent queued before it) and a form; /index.html is docs/tracking.md's. */
function website() {
  return http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", pageOrigin);
    const ds = url.searchParams.get("ds");
    if (url.pathname === "/try/" || url.pathname === "/index.html") {
      res.writeHead(200, { "content-type": "text/html" }).end(docsTryPage(ds ?? "none"));
      return;
    }
    const consent = url.searchParams.get("consent");
    const queued = consent
      ? `<script>window.leadIntel = window.leadIntel || function () { (leadIntel.q = leadIntel.q || []).push(arguments) };
         leadIntel("consent", ${consent === "yes"});</script>`
      : "";
    const body = url.pathname === "/thanks"
      ? "<title>Thanks</title>thanks"
      : `<title>${url.pathname}</title>${queued}<script src="${trackingOrigin}/t.js?dataset=${ds}"></script>
         <a id="next" href="/two?ds=${ds}">next</a>
         <form action="/thanks" method="post"><input name="email"><button id="send" type="submit">Send</button></form>`;
    res.writeHead(200, { "content-type": "text/html" }).end(body);
  });
}

/** The tracking host: forwards to the service, saying who the client is. */
function trackingProxy(target: string) {
  return http.createServer((req, res) => {
    const upstream = http.request(`${target}${req.url}`, { method: req.method, headers: { ...req.headers, "x-forwarded-for": ADDRESSES.business } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    req.pipe(upstream);
  });
}

const serve = (server: http.Server, host: "127.0.0.1" | "localhost") => {
  servers.push(server);
  return listenOn(server, host);
};

beforeAll(async () => {
  if (chromiumMissing) return;
  api = await startTestApi({ trustProxy: "loopback", tracking: { config: testTrackingConfig(), onQueued: () => writer?.wake() } });
  tenant = await createTenant(api.services, "Consent");
  writer = startWiredWriter(api, { ...ONLY_EVIDENCE, pollMs: 100 });
  const service = await serve(http.createServer(api.app), "127.0.0.1");
  trackingOrigin = await serve(trackingProxy(service), "localhost");
  pageOrigin = await serve(website(), "127.0.0.1");
  browser = await launchChromium();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await writer?.stop();
  await closeServers(servers);
  await api?.close();
});

let datasetCount = 0;
/** A new dataset with form tracking on and these privacy settings (through the API). */
async function dataset(privacy: Record<string, unknown>): Promise<string> {
  datasetCount += 1;
  const id = await datasets.create(api.services, tenant.accountId, tenant.admin.email, { name: `Consent site ${datasetCount}` });
  const email = { email: tenant.admin.email };
  await api.request().put(`/v1/datasets/${id}/form-tracking`).query({ ...email, formTracking: true, allowIpMasking: false, formInputAttribute: "name" }).set(as(tenant.key)).expect(204);
  await api.request().patch(`/v1/datasets/${id}/privacy`).query(email).set(as(tenant.key)).send(privacy).expect(200);
  return id;
}

/** A browser context as a person's Chrome, and the collector requests its pages send. */
async function visitor(options: { gpc?: boolean; userAgent?: string } = {}): Promise<{ context: BrowserContext; sent: Request[] }> {
  const context = await browser.newContext({ userAgent: options.userAgent ?? BROWSER_UA });
  // Chromium has no GPC switch: the page sees what a GPC browser shows it
  if (options.gpc) await context.addInitScript(() => Object.defineProperty(Navigator.prototype, "globalPrivacyControl", { get: () => true }));
  const sent: Request[] = [];
  context.on("request", (request) => {
    if (new URL(request.url()).pathname === "/collect") sent.push(request);
  });
  return { context, sent };
}

const trackingCookie = async (context: BrowserContext) => (await context.cookies()).find((c) => c.name === "_lt_vid");

/** The dataset's visits once there are `count` of them (bounded wait), oldest first. */
function visitsWhen(datasetId: string, count: number): Promise<{ visitorId: string; title: string }[]> {
  return eventually(async () => {
    const leads = await api.request().get("/v1/leads").query({ email: tenant.admin.email, datasetId }).set(as(tenant.key));
    const lead = leads.body.data[0];
    expect(lead?.visitCount, `visits of ${datasetId}: ${JSON.stringify(leads.body)}`).toBeGreaterThanOrEqual(count);
    const visits = await api.request().get(`/v1/leads/${lead.leadId}/visits`).query({ email: tenant.admin.email, datasetId }).set(as(tenant.key));
    expect(visits.body.data.length, `visits of ${datasetId}`).toBeGreaterThanOrEqual(count);
    return visits.body.data.reverse();
  });
}

/** Opens page one, then page two by its link: whatever page one's script sent has been sent by then. */
async function browseTwoPages(context: BrowserContext, datasetId: string, consent?: "yes" | "no") {
  const page = await context.newPage();
  await page.goto(`${pageOrigin}/one?ds=${datasetId}${consent ? `&consent=${consent}` : ""}`);
  await page.click("#next");
  await page.waitForURL(/\/two/);
  await page.waitForLoadState("load");
  return page;
}

describe.skipIf(!!chromiumMissing)(`consent in a browser${chromiumMissing ? ` (${chromiumMissing})` : ""}`, () => {
  it("when consent is required and not given, then nothing is sent nor stored; consent sends the page view, withdrawal deletes the cookie and stops the form", async () => {
    const ds = await dataset({ consentMode: "required" });
    const { context, sent } = await visitor();
    try {
      const page = await browseTwoPages(context, ds);
      expect(sent).toEqual([]);
      expect(await trackingCookie(context)).toBeUndefined();

      const request = page.waitForRequest((r) => new URL(r.url()).pathname === "/collect");
      await page.evaluate(() => (window as unknown as { leadIntel: (...args: unknown[]) => void }).leadIntel("consent", true));
      await request;
      const cookie = await trackingCookie(context);
      expect(cookie?.value).toMatch(/^[0-9a-f]{32}$/);
      const [visit] = await visitsWhen(ds, 1);
      expect(visit).toMatchObject({ visitorId: cookie!.value, title: "/two" });

      await page.evaluate(() => (window as unknown as { leadIntel: (...args: unknown[]) => void }).leadIntel("consent", false));
      expect(await trackingCookie(context)).toBeUndefined();
      await page.fill("input[name=email]", "withdrawn@visitor.example");
      await page.click("#send");
      await page.waitForURL(/\/thanks/);
      expect(sent).toHaveLength(1); // the page view, not the form
    } finally {
      await context.close();
    }
  });

  it("when consent is required and the page queued it before the script loaded, then both page views are sent under one cookie", async () => {
    const ds = await dataset({ consentMode: "required" });
    const { context } = await visitor();
    try {
      const page = await context.newPage();
      await page.goto(`${pageOrigin}/one?ds=${ds}&consent=yes`);
      await page.goto(`${pageOrigin}/two?ds=${ds}&consent=yes`);
      const visits = await visitsWhen(ds, 2);
      const cookie = await trackingCookie(context);
      expect(visits.map((v) => v.visitorId)).toEqual([cookie!.value, cookie!.value]);
    } finally {
      await context.close();
    }
  });

  it("when consent is required and given on page one only, then page two is tracked without a new call (the consent cookie remembers it 395 days); withdrawal deletes it and page three sends nothing", async () => {
    const ds = await dataset({ consentMode: "required" });
    const { context, sent } = await visitor();
    try {
      const page = await browseTwoPages(context, ds, "yes");
      const visits = await visitsWhen(ds, 2);
      expect(visits.map((v) => v.title)).toEqual(["/one", "/two"]);
      expect(new Set(visits.map((v) => v.visitorId))).toEqual(new Set([(await trackingCookie(context))!.value]));
      const remembered = (await context.cookies()).find((c) => c.name === "_lt_consent");
      expect(remembered).toMatchObject({ value: "1", path: "/", sameSite: "Lax" });
      expect(Math.abs(remembered!.expires - (Date.now() / 1000 + 395 * 86_400))).toBeLessThan(600);

      await page.evaluate(() => (window as unknown as { leadIntel: (...args: unknown[]) => void }).leadIntel("consent", false));
      expect((await context.cookies()).map((c) => c.name).filter((name) => name.startsWith("_lt_"))).toEqual([]);
      await page.goto(`${pageOrigin}/three?ds=${ds}`);
      await page.waitForLoadState("load");
      expect(sent).toHaveLength(2);
    } finally {
      await context.close();
    }
  });

  it("when the dataset tracks without consent and the page queued a refusal, then nothing is sent nor stored", async () => {
    const ds = await dataset({ consentMode: "none" });
    const { context, sent } = await visitor();
    try {
      const page = await context.newPage();
      await page.goto(`${pageOrigin}/one?ds=${ds}&consent=no`);
      await page.goto(`${pageOrigin}/two?ds=${ds}&consent=no`);
      await page.waitForLoadState("load");
      expect(sent).toEqual([]);
      expect(await trackingCookie(context)).toBeUndefined();
    } finally {
      await context.close();
    }
  });

  it("when the dataset is cookieless, then nothing is stored in the browser and one browser's pages are one visitor, another browser another", async () => {
    const ds = await dataset({ consentMode: "cookieless" });
    const first = await visitor();
    const second = await visitor({ userAgent: BROWSER_UA.replace("Chrome/131", "Chrome/130") });
    try {
      const page = await browseTwoPages(first.context, ds);
      const visits = await visitsWhen(ds, 2);
      expect(visits[0]!.visitorId).toMatch(/^cl[A-Za-z0-9_-]{30}$/);
      expect(visits[1]!.visitorId).toBe(visits[0]!.visitorId);
      expect(await first.context.cookies()).toEqual([]);
      expect(await page.evaluate(() => localStorage.length + sessionStorage.length)).toBe(0);
      // consent given is not remembered where nothing is stored
      await page.evaluate(() => (window as unknown as { leadIntel: (...args: unknown[]) => void }).leadIntel("consent", true));
      expect(await first.context.cookies()).toEqual([]);

      await browseTwoPages(second.context, ds);
      const all = await visitsWhen(ds, 4);
      expect(new Set(all.map((v) => v.visitorId)).size).toBe(2);
    } finally {
      await first.context.close();
      await second.context.close();
    }
  });

  it("when the demo dataset requires consent, then /demo shows a banner; accepting sends the page view and the next page is tracked at once", async () => {
    const ds = await dataset({ consentMode: "required" });
    const { context, sent } = await visitor();
    try {
      const page = await context.newPage();
      await page.goto(`${trackingOrigin}/demo?dataset=${ds}`);
      await page.waitForLoadState("load");
      await page.getByRole("dialog", { name: "Consent" }).waitFor();
      expect(sent).toEqual([]);
      const request = page.waitForRequest((r) => new URL(r.url()).pathname === "/collect");
      await page.getByRole("button", { name: "Accept" }).click();
      await request;
      expect(await page.getByRole("dialog", { name: "Consent" }).isHidden()).toBe(true);
      await page.getByRole("link", { name: "page 2" }).click();
      await page.waitForURL(/page=2/);
      expect(await page.getByRole("dialog", { name: "Consent" }).isHidden()).toBe(true);
      expect(await visitsWhen(ds, 2)).toHaveLength(2);
    } finally {
      await context.close();
    }
  });

  it("when docs/tracking.md's page to try the script is opened and its form sent, then its page view and its form reach the collector and the page view is stored", async () => {
    const ds = await dataset({ consentMode: "none" });
    const { context, sent } = await visitor();
    try {
      const page = await context.newPage();
      await page.goto(`${pageOrigin}/try/?ds=${ds}`);
      await page.waitForLoadState("load");
      await page.click("button");
      // the form is sent as the page is left (the page it lands on names no dataset: it sends nothing)
      await eventually(() => expect(sent).toHaveLength(2));
      expect((await visitsWhen(ds, 1))[0]).toMatchObject({ title: "My page" });
      const forms = await eventually(async () => {
        const stored = await api.db.prisma.formSubmission.findMany({ where: { datasetId: ds } });
        expect(stored).toHaveLength(1);
        return stored;
      });
      expect(forms[0]!.fields).toEqual({ email: "jo@example.com" });
    } finally {
      await context.close();
    }
  });

  it("when the browser sends Global Privacy Control, then nothing is sent nor stored, unless the dataset opted out of honouring it", async () => {
    const honoured = await dataset({ consentMode: "none" });
    const gpc = await visitor({ gpc: true });
    try {
      await browseTwoPages(gpc.context, honoured);
      expect(gpc.sent).toEqual([]);
      expect(await trackingCookie(gpc.context)).toBeUndefined();

      const ignored = await dataset({ consentMode: "none", respectDoNotTrack: false });
      await browseTwoPages(gpc.context, ignored);
      expect(await visitsWhen(ignored, 2)).toHaveLength(2);
      expect(await trackingCookie(gpc.context)).toBeDefined();
    } finally {
      await gpc.context.close();
    }
  });
});
