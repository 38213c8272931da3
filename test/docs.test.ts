// The API reference page and the contract documents, without a key: GET /docs rendered by Redoc
// in a real (headless) Chromium, offline: every request the page makes must stay on loopback.
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import supertest from "supertest";
import { demoWebsiteDataset, ensureDemo } from "../server/demo.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { chromiumMissing, launchChromium, staysLocal } from "./support/browser.ts";
import * as accounts from "../server/services/accounts.ts";

const artefacts = path.resolve("test-results");
const specOf = (name: string) => parse(readFileSync(path.resolve("spec", `${name}.yaml`), "utf8"));

/** Every operation's summary, in document order. */
function summaries(document: { paths: Record<string, Record<string, { summary?: string }>> }): string[] {
  return Object.values(document.paths).flatMap((item) =>
    ["get", "put", "post", "delete", "patch"].flatMap((m) => (item[m]?.summary ? [item[m].summary] : [])),
  );
}

let api: TestApi;
let server: Server;
let base: string;

beforeAll(async () => {
  api = await startTestApi();
  server = api.app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  if (server) await new Promise((resolve) => server.close(resolve));
  await api?.close();
});

const BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

describe("GET /", () => {
  it("when called without a key, then 200 with a pointer to /docs (not 401)", async () => {
    const res = await api.request().get("/");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ docs: "/docs", openapi: "/openapi.yaml", version: specOf("openapi").info.version });
  });

  it("when a browser asks for HTML and there is no demo, then a small page links the reference and says nothing of a demo", async () => {
    const res = await api.request().get("/").set("accept", BROWSER_ACCEPT);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
    expect(res.text).toContain('<a href="/docs">');
    expect(res.text).not.toContain("/demo");
  });

  it("when a demo dataset exists, then the page and the JSON link its demo website, which answers", async () => {
    const demo = await ensureDemo(api.services);
    const app = api.appWith({ demoDataset: () => demoWebsiteDataset(api.services) });
    const link = `/demo?dataset=${demo.datasetIds[0]}`;
    const page = await supertest(app).get("/").set("accept", BROWSER_ACCEPT);
    expect(page.text).toContain(`<a href="${link}">The demo website</a>`);
    expect((await supertest(app).get("/")).body).toMatchObject({ docs: "/docs", demo: link });
    expect((await supertest(app).get(link)).text).toContain("<h1>Demo website: page 1</h1>");
  });

  it("when the demo is still being seeded, then nothing links it", async () => {
    // the demo's account as a start that was killed while seeding leaves it
    const demo = await ensureDemo(api.services);
    const name = await accounts.nameOf(api.services, demo.accountId);
    await accounts.rename(api.services, demo.accountId, "Demo Company (seeding)");
    try {
      expect(await demoWebsiteDataset(api.services)).toBeUndefined();
    } finally {
      await accounts.rename(api.services, demo.accountId, name!);
    }
    expect(await demoWebsiteDataset(api.services)).toBe(demo.datasetIds[0]);
  });

  it("when curl asks with */*, then JSON", async () => {
    const res = await api.request().get("/").set("accept", "*/*");
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
  });
});

describe("GET /favicon.ico", () => {
  it("when a browser asks for the icon, then an icon without a key (not a 401)", async () => {
    const res = await api.request().get("/favicon.ico").buffer(true);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("image/x-icon");
    expect((res.body as Buffer).subarray(0, 4)).toEqual(Buffer.from([0, 0, 1, 0]));
  });
});

describe("contract documents", () => {
  it("when /openapi.yaml and /openapi.json are fetched without a key, then both are the contract", async () => {
    const yaml = await api.request().get("/openapi.yaml");
    expect(yaml.status).toBe(200);
    expect(yaml.headers["content-type"]).toContain("application/yaml");
    expect(yaml.text).toBe(readFileSync(path.resolve("spec/openapi.yaml"), "utf8"));
    const json = await api.request().get("/openapi.json");
    expect(json.status).toBe(200);
    expect(json.body).toEqual(specOf("openapi"));
  });

  it("when the operator document is fetched, then it is spec/operator.yaml", async () => {
    const res = await api.request().get("/operator.json");
    expect(res.status).toBe(200);
    expect(res.body).toEqual(specOf("operator"));
  });

  it("when the page's copy is fetched, then every operation carries a curl sample with its key header and body", async () => {
    const res = await api.request().get("/docs/openapi.json");
    const operations = Object.values(res.body.paths as Record<string, Record<string, Record<string, unknown>>>).flatMap(Object.values);
    expect(operations.length).toBe(summaries(specOf("openapi")).length);
    for (const operation of operations) {
      const [sample] = operation["x-codeSamples"] as { lang: string; source: string }[];
      expect(sample?.source).toMatch(/^curl -s /);
      expect(sample?.source).toContain(`-H "x-api-key: $API_KEY"`);
      if (operation.requestBody) expect(sample?.source).toMatch(/-d '\{/);
    }
  });

  it("when an operation has path, query and body examples, then its curl sample is built from them against this origin", async () => {
    const res = await api.request().get("/docs/openapi.json").set("host", "api.example.test");
    const sample = (path: string, method: string) => res.body.paths[path][method]["x-codeSamples"][0].source;
    expect(sample("/v1/datasets/{datasetId}/name", "put")).toBe(
      `curl -s -X PUT 'http://api.example.test/v1/datasets/ds_8f3k2m9q4w7x1z5c/name?humanName=Main+website&email=admin@demo.example' \\\n` +
        `  -H "x-api-key: $API_KEY"`,
    );
    expect(sample("/v1/user-datasets", "post")).toBe(
      `curl -s -X POST 'http://api.example.test/v1/user-datasets' \\\n  -H "x-api-key: $API_KEY" \\\n` +
        `  -H "content-type: application/json" \\\n  -d '{"userId":1042,"datasetId":"ds_8f3k2m9q4w7x1z5c"}'`,
    );
  });
});

describe.skipIf(chromiumMissing)(`GET /docs in Chromium${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ""}`, () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  const renderBound = 60_000;

  /** Opens a page, failing any request that would leave loopback; returns what it saw. */
  async function render(url: string, screenshot: string, focus?: string) {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    context.setDefaultTimeout(renderBound);
    const page = await context.newPage();
    const outside: string[] = [];
    const problems: string[] = [];
    await context.route("**/*", (route) => {
      if (staysLocal(route.request().url())) return route.continue();
      outside.push(route.request().url());
      return route.abort("blockedbyclient");
    });
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`console: ${message.text()}`);
    });
    // Bounds for a loaded machine: CI once took over 20 s for Redoc to render the whole spec.
    await page.goto(url, { waitUntil: "load", timeout: renderBound });
    await page.waitForSelector(".api-content h2", { timeout: renderBound });
    await page.waitForLoadState("networkidle", { timeout: renderBound });
    const text = await page.locator(".api-content").innerText();
    mkdirSync(artefacts, { recursive: true });
    await page.screenshot({ path: path.join(artefacts, screenshot) });
    let curl = "";
    if (focus) {
      // One operation with its curl sample shown, for a person to look at.
      const operation = page.locator(`div[data-section-id$="/operation/${focus}"]`).first();
      await operation.scrollIntoViewIfNeeded();
      await operation.getByRole("tab", { name: "curl" }).click();
      curl = await operation.getByRole("tabpanel").filter({ hasText: "curl" }).first().innerText();
      await page.screenshot({ path: path.join(artefacts, screenshot.replace(".png", "-operation.png")) });
    }
    await context.close();
    return { text, outside, problems, curl };
  }

  it("when the reference page is opened, then every operation's summary and a curl sample appear, and nothing leaves loopback", async () => {
    const { text, outside, problems, curl } = await render(`${base}/docs`, "docs.png", "lookupEmail");
    expect(outside).toEqual([]);
    expect(problems).toEqual([]);
    const expected = summaries(specOf("openapi"));
    expect(expected.length).toBeGreaterThan(30);
    expect(expected.filter((summary) => !text.includes(summary))).toEqual([]);
    expect(curl).toContain(`curl -s -X POST '${base}/v1/email-lookup'`);
    expect(curl).toContain(`-H "x-api-key: $API_KEY"`);
    expect(curl).toContain(`"email":"jane.doe@acme.example"`);
  }, 4 * renderBound);

  it("when the operator page is opened, then its operations appear", async () => {
    const { text, outside, problems } = await render(`${base}/docs/operator`, "docs-operator.png");
    expect(outside).toEqual([]);
    expect(problems).toEqual([]);
    expect(summaries(specOf("operator")).filter((summary) => !text.includes(summary))).toEqual([]);
  }, 4 * renderBound);
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replaceAll(" ", "-");

function anchorsIn(markdown: string): Set<string> {
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, "");
  return new Set([...withoutCode.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!)));
}

describe("the documentation's links", () => {
  const files = ["README.md", ...readdirSync("docs").filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

  it("when README.md or docs/*.md links a file or a heading of the repository, then it exists", () => {
    const broken: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, "utf8").replace(/```[\s\S]*?```/g, "");
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!) || target!.startsWith("/")) continue; // a URL, or a path of the service
        const [relative, anchor] = target!.split("#") as [string, string | undefined];
        const linked = relative ? path.join(path.dirname(file), relative) : file;
        if (!existsSync(linked)) broken.push(`${file}: ${target} (no such file)`);
        else if (anchor && linked.endsWith(".md") && !anchorsIn(readFileSync(linked, "utf8")).has(anchor)) broken.push(`${file}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("when an operator reads docs/operations.md, then it is a guide of at most 250 lines (the benchmarks' runs are in docs/benchmarks.md)", () => {
    expect(readFileSync("docs/operations.md", "utf8").trimEnd().split("\n").length).toBeLessThanOrEqual(250);
    expect(readFileSync("docs/benchmarks.md", "utf8")).toMatch(/^## Current figures$/m);
  });
});
