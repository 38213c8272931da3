// The API reference and the contract documents, without a key: GET /docs (Redoc, every asset
// served from node_modules, so the page works offline and behind firewalls), the documents at
// /openapi.yaml|json, /operator.yaml|json, /collector.yaml|json (when spec/collector.yaml
// exists), and GET /, which tells a newcomer where to start instead of answering 401.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { type Request, type RequestHandler, type Response, Router } from "express";
import { parse } from "yaml";
import { fromRoot } from "../paths.ts";
import { withCurlSamples } from "./code-samples.ts";

const specDir = fromRoot("spec");
const redocBundle = createRequire(import.meta.url).resolve("redoc/bundles/redoc.standalone.js");

/**
 * Redoc's bundle as installed, but for the one address it would fetch from the internet: the
 * side menu's logo (cdn.redoc.ly). An empty data: image fails to load, and Redoc then hides it.
 */
let redocSource: string | undefined;
function offlineRedoc(): string {
  redocSource ??= readFileSync(redocBundle, "utf8").replaceAll("https://cdn.redoc.ly/redoc/logo-mini.svg", "data:,");
  return redocSource;
}

/** The documents served, by the name in their URL; the page of `openapi` is /docs itself. */
const documentNames = ["openapi", "operator", "collector"] as const;
type DocumentName = (typeof documentNames)[number];

interface Document {
  yaml: string;
  parsed: Record<string, unknown>;
}

/** Read on first use (tests build many apps); a missing file (collector.yaml) is not served. */
const loaded = new Map<DocumentName, Document | null>();
function documentOf(name: DocumentName): Document | null {
  if (!loaded.has(name)) {
    const file = path.join(specDir, `${name}.yaml`);
    const yaml = existsSync(file) ? readFileSync(file, "utf8") : undefined;
    loaded.set(name, yaml === undefined ? null : { yaml, parsed: parse(yaml) as Record<string, unknown> });
  }
  return loaded.get(name) ?? null;
}

/** Redoc needs inline styles (styled-components) and a blob: worker (search); nothing else leaves 'self'. */
const pagePolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

function page(title: string, specUrl: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body { margin: 0; }</style>
</head>
<body>
<div id="redoc" data-spec-url="${escapeHtml(specUrl)}"></div>
<script src="/docs/assets/redoc.standalone.js"></script>
<script src="/docs/assets/init.js"></script>
</body>
</html>
`;
}

// System fonts: Redoc's defaults (Roboto, Montserrat) are web fonts nobody serves here.
const initScript = `"use strict";
(function () {
  var element = document.getElementById("redoc");
  var fonts = "-apple-system, BlinkMacSystemFont, 'Segoe UI', Helvetica, Arial, sans-serif";
  Redoc.init(element.getAttribute("data-spec-url"), {
    expandResponses: "200,204",
    jsonSamplesExpandLevel: 3,
    theme: { typography: { fontFamily: fonts, headings: { fontFamily: fonts }, code: { fontFamily: "ui-monospace, Menlo, Consolas, monospace" } } }
  }, element);
})();
`;

/** Where this request reached the service: the curl samples are ready to paste against it. */
const originOf = (req: Request) => `${req.protocol}://${req.get("host") ?? "localhost"}`;

export function docsRoutes(): Router {
  const router = Router();
  for (const name of documentNames) {
    const withDocument =
      (send: (doc: Document, req: Request, res: Response) => void): RequestHandler =>
      (req, res, next) => {
        const doc = documentOf(name);
        if (doc) send(doc, req, res);
        else next();
      };
    router.get(`/${name}.yaml`, withDocument((doc, _req, res) => void res.type("application/yaml").send(doc.yaml)));
    router.get(`/${name}.json`, withDocument((doc, _req, res) => void res.json(doc.parsed)));
    // The page's own copy carries a curl command per operation (x-codeSamples).
    router.get(`/docs/${name}.json`, withDocument((doc, req, res) => void res.json(withCurlSamples(doc.parsed, originOf(req)))));
    router.get(
      name === "openapi" ? "/docs" : `/docs/${name}`,
      withDocument((doc, _req, res) => {
        const title = String((doc.parsed.info as { title?: unknown } | undefined)?.title ?? name);
        res.setHeader("Content-Security-Policy", pagePolicy);
        res.type("html").send(page(title, `/docs/${name}.json`));
      }),
    );
  }
  router.get("/docs/assets/redoc.standalone.js", (_req, res) => {
    res.set("Cache-Control", "public, max-age=3600").type("text/javascript").send(offlineRedoc());
  });
  router.get("/docs/assets/init.js", (_req, res) => {
    res.type("text/javascript").send(initScript);
  });
  // browsers ask for it on every page (/docs, /demo, /): an icon, not a 401
  router.get("/favicon.ico", (_req, res) => {
    res.set("Cache-Control", "public, max-age=86400").type("image/x-icon").send(FAVICON);
  });
  return router;
}

/** A 16x16 icon (a white L on blue), PNG inside ICO. */
const FAVICON = Buffer.from(
  "AAABAAEAEBAAAAEAIABjAAAAFgAAAIlQTkcNChoKAAAADUlIRFIAAAAQAAAAEAgGAAAAH/P/YQAAACpJREFUeNpjYKAWUE1+/Z8UTJFmDEOQBZHBqAHDwgBsYAgYQLf8QLVcDAB5ZBrhoo9frwAAAABJRU5ErkJggg==",
  "base64",
);

export interface ServiceIndexOptions {
  /** The demo website's dataset, when there is one to link (outside production; server/demo.ts). */
  demoDataset?: () => Promise<string | undefined>;
}

/** How long `/` reuses the demo's dataset look-up (an anonymous page must not cost a query each time). */
const DEMO_LOOKUP_MS = 10_000;

/** `lookUp`'s answer, asked again once it is `ms` old; a failure counts as no answer. */
function reusedFor<T>(ms: number, lookUp: () => Promise<T | undefined>): () => Promise<T | undefined> {
  let last: { at: number; answer: Promise<T | undefined> } | undefined;
  return () => {
    if (!last || performance.now() - last.at >= ms) last = { at: performance.now(), answer: lookUp().catch(() => undefined) };
    return last.answer;
  };
}

/**
 * GET /: where to start, without a key (every partner operation needs one): a page for a browser,
 * JSON otherwise. It links the demo website when there is one.
 */
export function serviceIndex({ demoDataset }: ServiceIndexOptions = {}): RequestHandler {
  const demo = demoDataset ? reusedFor(DEMO_LOOKUP_MS, demoDataset) : async () => undefined;
  return async (_req, res) => {
    const info = (documentOf("openapi")?.parsed.info ?? {}) as { title?: string; version?: string };
    const message = "The API reference is at /docs. Partner operations (/v1/..., /api/...) need an API key in the x-api-key header.";
    const datasetId = await demo();
    const demoUrl = datasetId && `/demo?dataset=${encodeURIComponent(datasetId)}`;
    // JSON first: what curl's */* and a request without Accept get; a browser asks for HTML by name
    res.format({
      json: () => res.json({ name: info.title, version: info.version, docs: "/docs", openapi: "/openapi.yaml", ...(demoUrl && { demo: demoUrl }), message }),
      html: () => {
        const title = escapeHtml(`${info.title ?? "API"} ${info.version ?? ""}`.trim());
        const demoItem = demoUrl
          ? `  <li><a href="${escapeHtml(demoUrl)}">The demo website</a> (two pages and a form with the tracking script; its visits become leads of the demo dataset)</li>\n`
          : "";
        res.send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>
<body>
<h1>${title}</h1>
<ul>
  <li><a href="/docs">API reference</a> (every operation, with a curl command for each; no key needed)</li>
  <li><a href="/docs/operator">Operator endpoints</a> (health, readiness, metrics)</li>
${demoItem}  <li>The contract: <a href="/openapi.yaml">openapi.yaml</a>, <a href="/openapi.json">openapi.json</a></li>
</ul>
<p>Partner operations (<code>/v1/…</code>, <code>/api/…</code>) need an API key in the <code>x-api-key</code> header.</p>
</body></html>`);
      },
    });
  };
}
