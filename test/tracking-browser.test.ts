// The whole path in a real browser (Debian's chromium through playwright-core): a page on one
// loopback origin loads the script from another (the "tracking host": a proxy in front of the
// service that adds X-Forwarded-For, as a load balancer does, so that the visitor has a public
// address), browses two pages and submits a form; the lead is then listed with two visits and the
// form's e-mail address, enriched and charged when the dataset asks, not otherwise.
import { existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContactProfile } from "../server/contacts/profile.ts";
import { type IngestWriter } from "../server/tracking/log/writer.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { eventually } from "./support/eventually.ts";
import { as } from "./support/suite.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import { ADDRESSES, BROWSER_UA, ONLY_EVIDENCE, startWiredWriter, testTrackingConfig } from "./support/tracking.ts";
import * as contacts from "../server/services/contacts.ts";
import * as datasetStore from "../server/services/datasets.ts";

const CHROMIUM = "/usr/bin/chromium";
const haveChromium = existsSync(CHROMIUM);

const profile: ContactProfile = {
  email: "dana.browser@apple-visitor.example",
  fullName: "Dana Browser",
  languages: [],
  experience: [{ title: "Buyer", companyName: "Apple", current: true }],
};

let api: TestApi;
let tenant: Tenant;
let writer: IngestWriter;
let browser: Browser;
const servers: http.Server[] = [];
let pageOrigin: string;
let trackingOrigin: string;

const listen = async (server: http.Server, host: string) => {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return `http://${host === "127.0.0.1" ? "127.0.0.1" : "localhost"}:${(server.address() as AddressInfo).port}`;
};

/** The customer's website: two pages with the script and a form, and a thank-you page without it. */
function website() {
  return http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", pageOrigin);
    const ds = browsedDataset;
    const script = `<script src="${trackingOrigin}/t.js?dataset=${ds}"></script>`;
    const pages: Record<string, string> = {
      "/one": `<title>One</title>${script}<a id="next" href="/two?ds=${ds}&utm_source=browser-test">next</a>`,
      "/two": `<title>Two</title>${script}
        <form action="/thanks" method="post">
          <input type="email" name="email"><input name="company">
          <input type="password" name="pin"><input type="hidden" name="campaign_ref" value="abc">
          <input name="exp_date" autocomplete="cc-exp">
          <button id="send" type="submit">Send</button>
        </form>`,
      "/thanks": "<title>Thanks</title>thanks",
      // a form filled in and left unsent, a link away, and a second form (a search) that is sent
      // a form filled in and left unsent, a link away, a second form (a search) that is sent, and a
      // third sent in the page (a call-back request: the page handles it, nothing navigates), and a
      // fourth that the page's own script submits (form.submit(): no submit event)
      "/quote": `<title>Quote</title>${script}
        <script>addEventListener("pageshow", (e) => { if (e.persisted) window.restoredFromCache = true; });</script>
        <form id="quote"><input name="email"><input name="kennwort"><input name="card_ref"><input name="phone"></form>
        <a id="away" href="/thanks">away</a>
        <form id="search" action="/thanks"><input name="q"><button id="search-send" type="submit">Search</button></form>
        <form id="callback" onsubmit="event.preventDefault()"><input name="callback_email"><button id="callback-send" type="submit">Call me</button></form>
        <form id="scripted" action="/thanks" method="post"><input name="scripted_email"></form>
        <button id="scripted-send" type="button" onclick="document.getElementById('scripted').submit()">Send by script</button>`,
    };
    const body = pages[url.pathname];
    res.writeHead(body ? 200 : 404, { "content-type": "text/html" }).end(body ?? "");
  });
}

/** Every form event that reached the collector through the tracking host, as sent. */
const collected: { partial?: boolean; fields: Record<string, string> }[] = [];

/** Records the form events of a batch (a beacon's body is the batch as JSON text). */
function recordForms(body: string): void {
  try {
    for (const event of JSON.parse(body).events ?? []) if (event.type === "form") collected.push(event);
  } catch {
    // not a batch: the collector answers it
  }
}

/** The tracking host: forwards to the service and says who the client is, like a load balancer. */
function trackingProxy(target: string) {
  return http.createServer((req, res) => {
    if (req.method === "POST" && req.url?.startsWith("/collect")) {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => recordForms(Buffer.concat(chunks).toString("utf8")));
    }
    const upstream = http.request(
      `${target}${req.url}`,
      { method: req.method, headers: { ...req.headers, "x-forwarded-for": ADDRESSES.business } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(upstream);
  });
}

const datasets = { enriched: "", plain: "", partial: "" };
/** The dataset whose script the website's pages load. */
let browsedDataset = "";

beforeAll(async () => {
  if (!haveChromium) return;
  api = await startTestApi({ trustProxy: "loopback", tracking: { config: testTrackingConfig(), onQueued: () => writer?.wake() } });
  tenant = await createTenant(api.services, "Browser");
  writer = startWiredWriter(api, { ...ONLY_EVIDENCE, pollMs: 100 });
  await contacts.upsertMany(api.services, [profile]);
  [datasets.enriched, datasets.plain] = tenant.datasets;
  datasets.partial = await datasetStore.create(api.services, tenant.accountId, tenant.admin.email, { name: "Quotes" });
  const settings = (datasetId: string, contactEnrichment: boolean) =>
    api
      .request()
      .put(`/v1/datasets/${datasetId}/form-tracking`)
      .query({ formTracking: true, contactEnrichment, allowIpMasking: false, formInputAttribute: "name", email: tenant.admin.email })
      .set(as(tenant.key))
      .expect(204);
  await settings(datasets.enriched, true);
  await settings(datasets.plain, false);
  await api
    .request()
    .put(`/v1/datasets/${datasets.partial}/form-tracking`)
    .query({ formTracking: true, partialFormTracking: true, contactEnrichment: false, allowIpMasking: false, formInputAttribute: "name", email: tenant.admin.email })
    .set(as(tenant.key))
    .expect(204);
  const service = await listen(http.createServer(api.app), "127.0.0.1");
  trackingOrigin = await listen(trackingProxy(service), "localhost");
  pageOrigin = await listen(website(), "127.0.0.1");
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
      // the browser's own user agent, not only the pages': a beacon sent as a page unloads carries
      // the browser's (HeadlessChrome, a bot, when only the context's is set)
      `--user-agent=${BROWSER_UA}`],
    // the back/forward cache on, as in a person's Chrome (Playwright turns it off by default)
    ignoreDefaultArgs: ["--disable-back-forward-cache"],
  });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await writer?.stop();
  for (const server of servers) server.closeAllConnections?.(), server.close();
  await api?.close();
});

async function browse(datasetId: string): Promise<void> {
  browsedDataset = datasetId;
  // headless Chromium says "HeadlessChrome", which isbot rightly calls a bot: be a person's Chrome
  const context = await browser.newContext({ userAgent: BROWSER_UA });
  try {
    const page = await context.newPage();
    await page.goto(`${pageOrigin}/one`);
    await page.click("#next");
    await page.waitForURL(/\/two/);
    await page.fill("input[name=email]", profile.email.toUpperCase());
    await page.fill("input[name=company]", "Apple");
    await page.fill("input[name=pin]", "1234");
    await page.fill("input[name=exp_date]", "12/30");
    await page.click("#send");
    await page.waitForURL(/\/thanks/);
  } finally {
    await context.close();
  }
}

type Leave = (page: Page) => Promise<void>;

/** Back or forward, into or out of the back/forward cache (a restored page fires no load event: the commit is waited for). */
async function historyStep(page: Page, direction: "back" | "forward", to: RegExp): Promise<void> {
  await (direction === "back" ? page.goBack({ waitUntil: "commit" }) : page.goForward({ waitUntil: "commit" }));
  await page.waitForURL(to, { waitUntil: "commit" });
}

/** The partial form events for `email` that reached the collector so far. */
const partialsSent = (email: string) => collected.filter((event) => event.partial === true && event.fields.email === email);

/** Once the partial form of `email` reached the collector (bounded wait). */
const partialReachedCollector = (email: string) =>
  eventually(() => expect(partialsSent(email).length, `partial forms of ${email} at the collector`).toBeGreaterThanOrEqual(1), { intervalMs: 100 });

/** A visitor on the quote page (opened after page one: somewhere to go back to). */
async function onQuotePage(use: (page: Page) => Promise<void>): Promise<void> {
  browsedDataset = datasets.partial;
  const context = await browser.newContext({ userAgent: BROWSER_UA });
  try {
    const page = await context.newPage();
    await page.goto(`${pageOrigin}/one`);
    await page.goto(`${pageOrigin}/quote`);
    await use(page);
  } finally {
    await context.close();
  }
}

/** Fills the quote form half (a secret, a card number and a phone field holding one) and leaves the page the way `leave` does. */
async function leaveHalfFilledForm(email: string, leave: Leave): Promise<void> {
  await onQuotePage(async (page) => {
    await page.fill("input[name=email]", email);
    await page.fill("input[name=kennwort]", "geheim");
    await page.fill("input[name=card_ref]", "4111.1111.1111.1111");
    await page.fill("input[name=phone]", "4111-1111-1111-1111x");
    await leave(page);
    // a leaving page's beacon is the browser's to send: the context stays open until it arrived
    await partialReachedCollector(email);
  });
}

/** The partial form submissions recorded for `email`, once there is one (bounded wait). */
function partialFormsOf(email: string) {
  return eventually(
    async () => {
      const forms = await api.db.prisma.formSubmission.findMany({ where: { datasetId: datasets.partial, partial: true } });
      const mine = forms.filter((form) => (form.fields as Record<string, string>).email === email);
      expect(mine.length, `partial forms of ${email}`).toBeGreaterThanOrEqual(1);
      return mine;
    },
    { intervalMs: 200 },
  );
}

/** The dataset's lead and its visits once it has two visits of a known visitor with `enrichment` (bounded wait). */
function leadWhenSettled(datasetId: string, enrichment: string | null) {
  return eventually(
    async () => {
      const leads = await api.request().get("/v1/leads").query({ email: tenant.admin.email, datasetId }).set(as(tenant.key));
      const lead = leads.body.data[0];
      expect(lead?.visitCount, `visits of the lead of ${datasetId}: ${JSON.stringify(leads.body)}`).toBe(2);
      const visits = await api.request().get(`/v1/leads/${lead.leadId}/visits`).query({ email: tenant.admin.email, datasetId }).set(as(tenant.key));
      const visitors = visits.body.data.map((v: { visitor: { email: string | null; enrichment: string | null } }) => v.visitor);
      expect(visitors, `the visitors of the lead of ${datasetId}`).toEqual(visitors.map(() => expect.objectContaining({ email: expect.any(String), enrichment })));
      return { lead, visits: visits.body.data };
    },
    { intervalMs: 200 },
  );
}

// a browser, the service and its writer share the machine's cores with whatever else runs: room for a slow one
describe.skipIf(!haveChromium)("tracking in a browser (needs Debian's chromium: apt-get install -y chromium)", { timeout: 90_000 }, () => {
  it("when a visitor browses two pages and submits the form with enrichment on, then the lead has two visits and the enriched, charged contact", async () => {
    await browse(datasets.enriched);
    const { lead, visits } = await leadWhenSettled(datasets.enriched, "enriched");
    expect(lead).toMatchObject({ organizationName: "Apple Inc.", organizationDomain: "apple.com", visitCount: 2, country: "US" });
    expect(visits.map((v: { title: string }) => v.title).sort()).toEqual(["One", "Two"]);
    expect(visits.find((v: { title: string }) => v.title === "Two")).toMatchObject({ utm: { source: "browser-test" }, referrer: `${pageOrigin}/one` });
    expect(visits[0].visitor).toEqual({ email: profile.email, enrichment: "enriched", contact: profile });
    expect(new Set(visits.map((v: { visitorId: string }) => v.visitorId)).size).toBe(1); // one cookie, one visitor
    const ledger = await api.db.prisma.creditLedgerEntry.findMany({ where: { datasetId: datasets.enriched } });
    expect(ledger).toMatchObject([{ operation: "formEnrichment", credits: 1 }]);
    // the script never sent the password, hidden or payment-card fields
    const form = await api.db.prisma.formSubmission.findFirstOrThrow({ where: { datasetId: datasets.enriched } });
    expect(form.fields).toEqual({ email: profile.email.toUpperCase(), company: "Apple" });
  });

  it("when the same happens with enrichment off, then the e-mail is attached and nothing is charged", async () => {
    await browse(datasets.plain);
    const { visits } = await leadWhenSettled(datasets.plain, null);
    expect(visits[0].visitor).toEqual({ email: profile.email, enrichment: null, contact: null });
    expect(await api.db.prisma.creditLedgerEntry.count({ where: { datasetId: datasets.plain } })).toBe(0);
  });

  // every way a browser leaves a page: the half-filled form reaches the collector once, without its secret and card fields
  const leaving: [string, Leave][] = [
    ["by a link", async (page) => {
      await page.click("#away");
      await page.waitForURL(/\/thanks/);
    }],
    ["by sending another form", async (page) => {
      await page.fill("input[name=q]", "pricing");
      await page.click("#search-send");
      await page.waitForURL(/\/thanks/);
    }],
    ["by the address bar", async (page) => {
      await page.goto(`${pageOrigin}/thanks`);
    }],
    ["by a location assignment", async (page) => {
      await page.evaluate(() => setTimeout(() => location.assign("/thanks")));
      await page.waitForURL(/\/thanks/);
    }],
    ["by reloading", async (page) => {
      await page.reload();
    }],
    ["by going back", (page) => historyStep(page, "back", /\/one/)],
    ["by closing the tab", async (page) => {
      const closed = page.waitForEvent("close");
      await page.close({ runBeforeUnload: true }); // as a person closes it: the page's events run
      await closed;
    }],
  ];
  it.each(leaving)("when a visitor half fills a form and leaves %s, then the partial form is recorded once without its secret and card fields", async (how, leave) => {
    const email = `leaves-${how.split(" ").pop()}@quote.example`;
    await leaveHalfFilledForm(email, leave);
    const forms = await partialFormsOf(email);
    expect(forms.map((form) => form.fields)).toEqual([{ email }]);
    expect(partialsSent(email), "partial forms of this state sent").toHaveLength(1);
  });

  it("when a visitor goes back and forward through the page cache and changes the form in between, then each state is sent once", async () => {
    const first = "cached-first@quote.example";
    const second = "cached-second@quote.example";
    await onQuotePage(async (page) => {
      await page.fill("input[name=email]", first);
      await historyStep(page, "back", /\/one/); // the page is kept whole (pagehide with persisted)
      await partialReachedCollector(first);
      await historyStep(page, "forward", /\/quote/);
      expect(await page.evaluate(() => (window as { restoredFromCache?: boolean }).restoredFromCache), "restored from the back/forward cache").toBe(true);
      await historyStep(page, "back", /\/one/); // unchanged: nothing new to send
      await historyStep(page, "forward", /\/quote/);
      await page.fill("input[name=email]", second);
      await historyStep(page, "back", /\/one/);
      await partialReachedCollector(second);
    });
    expect((await partialFormsOf(second)).map((form) => form.fields)).toEqual([{ email: second }]);
    expect(partialsSent(first), "the first state, sent once").toHaveLength(1);
    expect(partialsSent(second)).toHaveLength(1);
  });

  it("when a visitor sends a form in the page and leaves by the address bar, then only the form left unsent is sent as partial", async () => {
    const called = "called-back@quote.example";
    const left = "left-unsent@quote.example";
    await onQuotePage(async (page) => {
      await page.fill("input[name=callback_email]", called);
      await page.click("#callback-send"); // the page keeps it to itself; the script sends it as submitted
      await page.fill("input[name=email]", left);
      await page.goto(`${pageOrigin}/thanks`);
      await partialReachedCollector(left);
    });
    // the partial forms of one leaving travel in one batch: had the sent form been among them, it would be here
    const callbacks = collected.filter((event) => event.fields.callback_email === called);
    expect(callbacks.map((event) => event.partial ?? false)).toEqual([false]);
    await eventually(async () => {
      const forms = await api.db.prisma.formSubmission.findMany({ where: { datasetId: datasets.partial } });
      expect(forms.filter((form) => (form.fields as Record<string, string>).callback_email === called).map((form) => form.partial)).toEqual([false]);
    });
  });

  it("when the page's script submits a form (form.submit(), no submit event), then it is sent as submitted, not as partial", async () => {
    const scripted = "scripted@quote.example";
    const left = "left-beside-scripted@quote.example";
    await onQuotePage(async (page) => {
      await page.fill("input[name=email]", left);
      await page.fill("input[name=scripted_email]", scripted);
      await page.click("#scripted-send");
      await page.waitForURL(/\/thanks/);
      await partialReachedCollector(left);
    });
    const sent = collected.filter((event) => event.fields.scripted_email === scripted);
    expect(sent.map((event) => event.partial ?? false), "the scripted form as sent").toEqual([false]);
    await eventually(async () => {
      const forms = await api.db.prisma.formSubmission.findMany({ where: { datasetId: datasets.partial } });
      expect(forms.filter((form) => (form.fields as Record<string, string>).scripted_email === scripted).map((form) => form.partial)).toEqual([false]);
    });
  });
});
