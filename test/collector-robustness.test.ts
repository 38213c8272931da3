// Issue 23: the collector's inputs answered like the partner API's. The contract's character rule
// and nesting bound apply to every string of a batch and to the pixel (PostgreSQL refuses U+0000,
// so these were 500s); other methods are 405 with Allow (the paths need no key: never a 401);
// a batch in another media type than the two the spec lists is a 415. Nothing is written.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADDRESSES, BROWSER_UA, startTracking, type TrackingSuite } from "./support/tracking.ts";
import * as datasets from "../server/services/datasets.ts";

let t: TrackingSuite;
let ds: string;
beforeAll(async () => {
  t = await startTracking();
  ds = await datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: "Robust collector" });
});
afterAll(() => t?.close());

let seq = 0;
const visitor = () => `robust${String(++seq).padStart(4, "0")}${Date.now().toString(36)}`;
const TEXT_RULE = /control characters/;

/** A 400 naming `field`, and the queue as it was. */
async function expectRefused(send: () => Promise<{ status: number; body: any }>, location: string, field: string, message: RegExp) {
  const before = await t.count("IngestQueue");
  const res = await send();
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.details).toContainEqual({ location, field, message: expect.stringMatching(message) });
  expect(await t.count("IngestQueue")).toBe(before);
  expect(t.api.logs.join("\n")).not.toMatch(/request failed/);
}

const post = (contentType: string, body: string) =>
  t.api.request().post(`/collect?dataset=${ds}`).set("x-forwarded-for", ADDRESSES.business).set("user-agent", BROWSER_UA).set("content-type", contentType).send(body);

describe("collectEvents: the character rule", () => {
  const page = (extra: object) => ({ type: "pageview", visitorId: visitor(), url: "https://www.customer.example/", ...extra });
  const cases: [string, object, string][] = [
    ["url", page({ url: "https://www.customer.example/\u0000" }), "events.0.url"],
    ["title", page({ title: "Pri\u0000cing" }), "events.0.title"],
    ["referrer", page({ referrer: "https://a.example/\u0000" }), "events.0.referrer"],
    ["utm_source", page({ utm: { source: "news\u0000letter" } }), "events.0.utm.source"],
    ["utm_campaign (C1)", page({ utm: { campaign: "a\u0085b" } }), "events.0.utm.campaign"],
    ["a form field's value", { type: "form", visitorId: visitor(), url: "https://www.customer.example/", fields: { company: "Ac\u0000me" } }, "events.0.fields.company"],
  ];

  for (const contentType of ["text/plain", "application/json"]) {
    it.each(cases)(`when %s holds a control character (${contentType}), then 400 invalid_batch naming it and nothing is queued`, async (_what, event, field) => {
      await expectRefused(() => post(contentType, JSON.stringify({ events: [event] })), "body", field, TEXT_RULE);
    });
  }

  it("when a title holds an unpaired surrogate, then 400 naming it", async () => {
    const body = `{"events":[{"type":"pageview","visitorId":"${visitor()}","url":"https://a.example/","title":"x\\ud800"}]}`;
    await expectRefused(() => post("text/plain", body), "body", "events.0.title", /surrogate/);
  });

  it("when the batch nests 5,000 levels deep, then 400 naming the body", async () => {
    const body = `{"events":[{"type":"pageview","visitorId":"${visitor()}","url":"https://a.example/","title":${"[".repeat(5000)}${"]".repeat(5000)}}]}`;
    await expectRefused(() => post("text/plain", body), "body", "(root)", /32 levels/);
  });

  it("when the pixel's u or t holds a NUL, then 400 naming the parameter and nothing is queued", async () => {
    for (const [name, query] of [
      ["u", { v: visitor(), u: "https://a.example/\u0000" }],
      ["t", { v: visitor(), u: "https://a.example/", t: "Ti\u0000tle" }],
      ["r", { v: visitor(), u: "https://a.example/", r: "\u0001" }],
    ] as const) {
      await expectRefused(() => t.api.request().get("/collect").query({ dataset: ds, ...query }).set("x-forwarded-for", ADDRESSES.business), "query", name, TEXT_RULE);
    }
  });

  it("when the dataset parameter holds a NUL, then 400 naming it (script, collector and pixel)", async () => {
    for (const send of [
      () => t.api.request().get("/t.js?dataset=ds%00x"),
      () => t.api.request().post("/collect?dataset=ds%00x").set("content-type", "text/plain").send(JSON.stringify({ events: [page({})] })),
      () => t.api.request().get(`/collect?dataset=ds%00x&v=${visitor()}&u=https%3A%2F%2Fa.example%2F`),
    ]) {
      await expectRefused(send, "query", "dataset", TEXT_RULE);
    }
  });

  it("when the dataset parameter is longer than 64 characters, then 400 naming it (script, collector and pixel)", async () => {
    const long = `ds_${"x".repeat(62)}`;
    for (const send of [
      () => t.api.request().get(`/t.js?dataset=${long}`),
      () => t.api.request().post(`/collect?dataset=${long}`).set("content-type", "text/plain").send(JSON.stringify({ events: [page({})] })),
      () => t.api.request().get(`/collect?dataset=${long}&v=${visitor()}&u=https%3A%2F%2Fa.example%2F`),
    ]) {
      await expectRefused(send, "query", "dataset", /at most 64 characters/);
    }
  });

  it("when the strings are clean text of any script, then the batch is queued", async () => {
    const res = await post("text/plain;charset=UTF-8", JSON.stringify({ events: [page({ title: "Café 東京 😀" })] }));
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ received: 1, queued: 1 });
  });
});

describe("collectEvents: UTF-8 only", () => {
  /** A batch whose url holds the bytes FF FE (no UTF-8 sequence starts with either). */
  const withInvalidBytes = () =>
    Buffer.concat([
      Buffer.from(`{"events":[{"type":"pageview","visitorId":"${visitor()}","url":"https://www.customer.example/`),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(`"}]}`),
    ]);
  /** The bytes as they are (superagent would serialise a Buffer sent as application/json to JSON). */
  const postBytes = (contentType: string, body: Buffer) =>
    t.api.request().post(`/collect?dataset=${ds}`).set("x-forwarded-for", ADDRESSES.business).set("user-agent", BROWSER_UA).set("content-type", contentType)
      .serialize((bytes: Buffer) => bytes as unknown as string).send(body); // superagent sends a Buffer as is

  it.each(["text/plain", "application/json", "text/plain;charset=UTF-8"])(
    "when a batch's url holds bytes that are not UTF-8 (%s), then 400 malformed_json and nothing is queued",
    async (contentType) => {
      await expectRefused(() => postBytes(contentType, withInvalidBytes()), "body", "(root)", /UTF-8/);
      const res = await postBytes(contentType, withInvalidBytes());
      expect(res.body).toMatchObject({ error: "malformed_json" });
    },
  );

  it("when a batch holds an overlong encoding or a lone surrogate's bytes, then 400", async () => {
    for (const bytes of [[0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
      const body = Buffer.concat([Buffer.from(`{"events":[{"type":"pageview","visitorId":"${visitor()}","url":"https://a.example/","title":"`), Buffer.from(bytes), Buffer.from(`"}]}`)]);
      await expectRefused(() => postBytes("text/plain", body), "body", "(root)", /UTF-8/);
    }
  });

  it("when a batch starts with a UTF-8 byte order mark or holds U+FFFD itself, then it is accepted", async () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ events: [{ type: "pageview", visitorId: visitor(), url: "https://a.example/", title: "a \ufffd b" }] }))]);
    const res = await postBytes("text/plain", body);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
  });

  it("when a pixel parameter percent-decodes to bytes that are not UTF-8, then 400 naming it and nothing is queued", async () => {
    const clean = { v: visitor(), u: "https%3A%2F%2Fa.example%2F", t: "Title", r: "https%3A%2F%2Fb.example%2F" };
    for (const [name, bad] of [["t", "%FF"], ["u", "https%3A%2F%2Fa.example%2F%FF%FE"], ["r", "%C0%AF"], ["v", "abc%ED%A0%80def"]] as const) {
      const query = Object.entries({ ...clean, [name]: bad }).map(([key, value]) => `${key}=${value}`).join("&");
      await expectRefused(() => t.api.request().get(`/collect?dataset=${ds}&${query}`).set("x-forwarded-for", ADDRESSES.business).set("user-agent", BROWSER_UA), "query", name, /percent-encoded UTF-8/);
    }
  });

  it("when the dataset parameter percent-decodes to bytes that are not UTF-8, then 400 naming it (script, collector and pixel)", async () => {
    for (const send of [
      () => t.api.request().get("/t.js?dataset=ds%FF"),
      () => t.api.request().post("/collect?dataset=ds%FF").set("content-type", "text/plain").send(JSON.stringify({ events: [{ type: "pageview", visitorId: visitor(), url: "https://a.example/" }] })),
      () => t.api.request().get(`/collect?dataset=ds%FF&v=${visitor()}&u=https%3A%2F%2Fa.example%2F`),
    ]) {
      await expectRefused(send, "query", "dataset", /percent-encoded UTF-8/);
    }
  });

  it("when the pixel's parameters are percent-encoded UTF-8, then the page view is queued with them decoded", async () => {
    const vid = visitor();
    const res = await t.api.request().get(`/collect?dataset=${ds}&v=${vid}&u=https%3A%2F%2Fa.example%2Fcaf%C3%A9&t=Caf%C3%A9+%E6%9D%B1%E4%BA%AC`).set("x-forwarded-for", ADDRESSES.business).set("user-agent", BROWSER_UA);
    expect(res.status).toBe(200);
    await t.writer.drain();
    const visit = await t.api.db.prisma.visit.findFirstOrThrow({ where: { datasetId: ds, visitorId: vid } });
    expect(visit).toMatchObject({ url: "https://a.example/café", title: "Café 東京" });
  });
});

describe("collectEvents: the batch judged by spec/collector.yaml", () => {
  const page = () => ({ type: "pageview", visitorId: visitor(), url: "https://a.example/" });
  it.each([
    ["an event that is not an object", [page(), null], "events.1", /must be object/],
    ["an event of an unknown type", [{ ...page(), type: "click" }], "events.0.type", /pageview or form/],
    ["an event without a type", [{ visitorId: visitor(), url: "https://a.example/" }], "events.0.type", /pageview or form/],
    ["a property the event does not have", [{ ...page(), colour: "red" }], "events.0.colour", /not a field/],
    ["a form without fields", [{ type: "form", visitorId: visitor(), url: "https://a.example/" }], "events.0.fields", /is required/],
    ["a form field that is not text", [{ type: "form", visitorId: visitor(), url: "https://a.example/", fields: { size: 3 } }], "events.0.fields.size", /string/],
    ["a visitor id too short", [{ ...page(), visitorId: "short" }], "events.0.visitorId", /fewer than 8/],
  ])("when a batch holds %s, then 400 invalid_batch naming that field alone and nothing is queued", async (_what, events, field, message) => {
    const before = await t.count("IngestQueue");
    const res = await post("text/plain", JSON.stringify({ events }));
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body).toEqual({ error: "invalid_batch", message: expect.any(String), details: [{ location: "body", field, message: expect.stringMatching(message) }] });
    expect(await t.count("IngestQueue")).toBe(before);
  });
});

describe("collector methods and media types", () => {
  it.each([
    ["/collect", "GET, HEAD, POST, OPTIONS"],
    ["/t.js", "GET, HEAD"],
  ])("when %s is called with PUT, DELETE, PATCH or TRACE, then 405 with Allow, never 401", async (path, allow) => {
    for (const method of ["put", "delete", "patch", "trace"] as const) {
      const res = await t.api.request()[method](`${path}?dataset=${ds}`);
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.allow).toBe(allow);
      expect(res.body.error).toBe("method_not_allowed");
    }
  });

  it.each(["application/xml", "image/png", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"])(
    "when a valid batch is sent as %s, then 415 and nothing is queued",
    async (contentType) => {
      const before = await t.count("IngestQueue");
      const res = await post(contentType, JSON.stringify({ events: [{ type: "pageview", visitorId: visitor(), url: "https://a.example/" }] }));
      expect(res.status).toBe(415);
      expect(res.body.error).toBe("unsupported_media_type");
      expect(await t.count("IngestQueue")).toBe(before);
    },
  );

  it("when a batch is sent without a content type, then 415", async () => {
    const res = await t.api.request().post(`/collect?dataset=${ds}`).set("x-forwarded-for", ADDRESSES.business).send(Buffer.from(JSON.stringify({ events: [] })));
    expect(res.status).toBe(415);
  });

  it("when a batch is sent as application/json, then it is accepted", async () => {
    const res = await post("application/json", JSON.stringify({ events: [{ type: "pageview", visitorId: visitor(), url: "https://a.example/" }] }));
    expect(res.status).toBe(202);
  });
});
