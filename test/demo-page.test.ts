// The demo website (/demo) in a real browser (Debian's chromium through playwright-core), as a new
// user meets it after `npm start`: the browser on loopback counts as Apple's network, the form is
// sent by the tracking script, and the page the form lands on says what became of it.
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IngestWriter } from "../server/tracking/log/writer.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { chromiumMissing, launchChromium } from "./support/browser.ts";
import { eventually } from "./support/eventually.ts";
import { as } from "./support/suite.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import { ADDRESSES, BROWSER_UA, ONLY_EVIDENCE, startWiredWriter, testTrackingConfig } from "./support/tracking.ts";

let api: TestApi;
let tenant: Tenant;
let writer: IngestWriter;
let browser: Browser;
let origin = "";
/** The tenant's first dataset tracks forms; its second does not. */
let tracked = "";
let untracked = "";

beforeAll(async () => {
  if (chromiumMissing) return;
  // as `npm start` outside production: a browser on loopback is a visitor from Apple's network
  api = await startTestApi({ tracking: { config: testTrackingConfig({ loopbackIp: ADDRESSES.business }), onQueued: () => writer?.wake() } });
  tenant = await createTenant(api.services, "Demo page");
  [tracked, untracked] = tenant.datasets as [string, string];
  await api
    .request()
    .put(`/v1/datasets/${tracked}/form-tracking`)
    .query({ email: tenant.admin.email, formTracking: true, allowIpMasking: false, formInputAttribute: "name" })
    .set(as(tenant.key))
    .expect(204);
  writer = startWiredWriter(api, { ...ONLY_EVIDENCE, pollMs: 100 });
  origin = await api.listen();
  browser = await launchChromium();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await writer?.stop();
  await api?.close();
});

/** Opens the demo's page 2 by its link, fills the form and sends it; the page the form landed on. */
async function sendDemoForm(context: BrowserContext, datasetId: string, email: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${origin}/demo?dataset=${datasetId}`);
  await page.getByRole("link", { name: "page 2" }).click();
  await page.waitForURL(/page=2/);
  expect(await page.getByRole("status").count(), "no confirmation before the form is sent").toBe(0);
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Company").fill("Apple");
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Send" }).click()]);
  return page;
}

describe.skipIf(!!chromiumMissing)(`GET and POST /demo in Chromium${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ""}`, () => {
  it("when a person sends the demo form, then the page confirms it and the form reaches the lead's visits", async () => {
    const context = await browser.newContext({ userAgent: BROWSER_UA });
    try {
      const page = await sendDemoForm(context, tracked, "dana@apple-visitor.example");
      expect(await page.getByRole("status").innerText()).toBe("Sent: it reaches the leads in a few seconds.");
      const form = await eventually(() => api.db.prisma.formSubmission.findFirstOrThrow({ where: { datasetId: tracked } }), {
        message: "the demo form's submission was not recorded",
      });
      expect(form.fields).toEqual({ email: "dana@apple-visitor.example", company: "Apple" });
      const leads = await api.request().get("/v1/leads").query({ email: tenant.admin.email, datasetId: tracked }).set(as(tenant.key));
      expect(leads.body.data[0]).toMatchObject({ organizationName: "Apple Inc." });
    } finally {
      await context.close();
    }
  });

  it("when the dataset does not track forms, then the page says the form was not sent", async () => {
    const context = await browser.newContext({ userAgent: BROWSER_UA });
    try {
      const page = await sendDemoForm(context, untracked, "li@apple-visitor.example");
      expect(await page.getByRole("status").innerText()).toMatch(/^Not sent: form tracking is off for this dataset/);
    } finally {
      await context.close();
    }
  });

  it("when a headless browser sends the form, then the page says nothing was recorded", async () => {
    const context = await browser.newContext(); // HeadlessChrome: a bot to the collector
    try {
      const page = await sendDemoForm(context, tracked, "robot@apple-visitor.example");
      expect(await page.getByRole("status").innerText()).toMatch(/^Not recorded: this browser counts as a bot/);
    } finally {
      await context.close();
    }
  });
});
