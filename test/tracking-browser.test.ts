// The whole path in a real browser (Debian's chromium through playwright-core): a page on one
// loopback origin loads the script from another (the "tracking host": a proxy in front of the
// service that adds X-Forwarded-For, as a load balancer does, so that the visitor has a public
// address), browses two pages and submits a form; the lead is then listed with two visits and the
// form's e-mail address, enriched and charged when the dataset asks, not otherwise.
import { existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContactProfile } from "../server/contacts/profile.ts";
import { type IngestWriter } from "../server/tracking/writer.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { eventually } from "./support/eventually.ts";
import { as } from "./support/suite.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import { ADDRESSES, BROWSER_UA, ONLY_EVIDENCE, startWiredWriter, testTrackingConfig } from "./support/tracking.ts";

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
      "/quote": `<title>Quote</title>${script}
        <form id="quote"><input name="email"><input name="kennwort"><input name="card_ref"></form>
        <a id="away" href="/thanks">away</a>
        <form id="search" action="/thanks"><input name="q"><button id="search-send" type="submit">Search</button></form>`,
    };
    const body = pages[url.pathname];
    res.writeHead(body ? 200 : 404, { "content-type": "text/html" }).end(body ?? "");
  });
}

/** The tracking host: forwards to the service and says who the client is, like a load balancer. */
function trackingProxy(target: string) {
  return http.createServer((req, res) => {
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
  await api.services.contacts.upsertMany([profile]);
  [datasets.enriched, datasets.plain] = tenant.datasets;
  datasets.partial = await api.services.datasets.create(tenant.accountId, tenant.admin.email, { name: "Quotes" });
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
  });
}, 120_000);

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

/** Fills the quote form half and leaves the page the way `leave` does. */
async function leaveHalfFilledForm(email: string, leave: (page: import("playwright-core").Page) => Promise<void>): Promise<void> {
  browsedDataset = datasets.partial;
  const context = await browser.newContext({ userAgent: BROWSER_UA });
  try {
    const page = await context.newPage();
    await page.goto(`${pageOrigin}/one`); // somewhere to go back to
    await page.goto(`${pageOrigin}/quote`);
    await page.fill("input[name=email]", email);
    await page.fill("input[name=kennwort]", "geheim");
    await page.fill("input[name=card_ref]", "4111.1111.1111.1111");
    await leave(page);
  } finally {
    await context.close();
  }
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

describe.skipIf(!haveChromium)("tracking in a browser (needs Debian's chromium: apt-get install -y chromium)", () => {
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

  const leaving: [string, (page: import("playwright-core").Page) => Promise<void>][] = [
    ["by a link", async (page) => {
      await page.click("#away");
      await page.waitForURL(/\/thanks/);
    }],
    ["by sending another form", async (page) => {
      await page.fill("input[name=q]", "pricing");
      await page.click("#search-send");
      await page.waitForURL(/\/thanks/);
    }],
    ["by history navigation", async (page) => {
      await page.goBack();
      await page.waitForURL(/\/one/);
    }],
  ];
  it.each(leaving)("when a visitor half fills a form and leaves %s, then the partial form is recorded without its secret and card fields", async (how, leave) => {
    const email = `leaves-${how.split(" ").pop()}@quote.example`;
    await leaveHalfFilledForm(email, leave);
    const forms = await partialFormsOf(email);
    expect(forms.length).toBeGreaterThanOrEqual(1);
    expect(forms[0]!.fields).toEqual({ email });
  });
});
