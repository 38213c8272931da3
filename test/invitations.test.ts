// Invitation e-mails through a real SMTP server on loopback: the accept link works once, a resend
// replaces it, resends are rate-limited per member, and the state shows in the user list.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApi } from "./support/api.ts";
import { eventually } from "./support/eventually.ts";
import { startSmtpServer, type TestSmtpServer } from "./support/smtp.ts";
import { as } from "./support/suite.ts";
import { startTestApi } from "./support/api.ts";
import { createTenant, type Tenant, uniqueEmail } from "./support/tenants.ts";

let api: TestApi;
let tenant: Tenant;
let smtp: TestSmtpServer;
let clock = new Date("2026-11-23T09:00:00Z");
const PUBLIC_URL = "https://api.leadintel.example";

beforeAll(async () => {
  smtp = await startSmtpServer();
  api = await startTestApi({
    now: () => clock,
    mail: { smtpUrl: smtp.url, from: "Lead Intelligence <no-reply@leadintel.example>", outboxDir: "/nonexistent" },
    notify: { publicUrl: PUBLIC_URL, inviteTtlHours: 48, inviteResendSeconds: 60 },
  });
  tenant = await createTenant(api.services, "Acme");
  await api.services.jobs.drain(); // the fixture's own invitations
  smtp.messages.length = 0;
});
afterAll(async () => {
  await api?.close();
  await smtp?.close();
});

const advance = (ms: number) => (clock = new Date(clock.getTime() + ms));

/** Adds a member over the API and returns their id and the accept link of the mail they got. */
async function invite(email: string): Promise<{ userId: number; link: URL }> {
  const before = smtp.messages.length;
  const res = await api.request().post(`/v1/users?email=${tenant.admin.email}`).set(as(tenant.key)).send({ email, name: "Ivy Invited" });
  expect(res.status).toBe(204);
  await api.services.jobs.drain();
  const [mail] = (await eventually(() => smtp.received(before + 1))).slice(before);
  expect(mail!.envelopeTo).toEqual([email.toLowerCase()]);
  const users = await api.request().get(`/v1/users?email=${tenant.admin.email}&limit=100`).set(as(tenant.key));
  const user = users.body.data.find((u: { email: string }) => u.email === email.toLowerCase());
  return { userId: user.userId, link: linkOf(mail!.text) };
}

function linkOf(text: string): URL {
  const found = /https:\/\/\S+\/invitations\/accept\?token=[A-Za-z0-9_-]+/.exec(text);
  expect(found).not.toBeNull();
  return new URL(found![0]);
}

const page = (link: URL) => api.request().get(`${link.pathname}${link.search}`);
const accept = (link: URL) =>
  api.request().post(link.pathname).type("form").send({ token: link.searchParams.get("token") });

async function stateOf(userId: number): Promise<string> {
  const users = await api.request().get(`/v1/users?email=${tenant.admin.email}&limit=100`).set(as(tenant.key));
  return users.body.data.find((u: { userId: number }) => u.userId === userId).invitationState;
}

describe("invitation e-mail", () => {
  it("when an admin adds a user, then the user receives a mail whose link makes the membership active once", async () => {
    const email = uniqueEmail("invitee");
    const { userId, link } = await invite(email);
    expect(link.origin).toBe(PUBLIC_URL);
    expect(await stateOf(userId)).toBe("invited");
    // the token is stored only as its hash
    const stored = await api.db.prisma.invitation.findFirstOrThrow({ where: { userId: BigInt(userId), revokedAt: null } });
    expect(stored.tokenHash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored.tokenHash).not.toContain(link.searchParams.get("token"));

    const shown = await page(link);
    expect(shown.status).toBe(200);
    expect(shown.text).toContain("Acme");
    expect(await stateOf(userId)).toBe("invited"); // opening the link changes nothing

    const accepted = await accept(link);
    expect(accepted.status).toBe(200);
    expect(await stateOf(userId)).toBe("active");

    const again = await accept(link);
    expect(again.status).toBe(410);
    expect((await page(link)).status).toBe(410);
  });

  it("when the invitation is resent, then the old link stops working and the new one works", async () => {
    const { userId, link: first } = await invite(uniqueEmail("resent"));
    advance(61_000);
    const before = smtp.messages.length;
    const res = await api.request().get(`/v1/users/${userId}/invite/resend?email=${tenant.admin.email}`).set(as(tenant.key));
    expect(res.status).toBe(204);
    await api.services.jobs.drain();
    const [mail] = (await eventually(() => smtp.received(before + 1))).slice(before);
    const second = linkOf(mail!.text);
    expect(second.searchParams.get("token")).not.toBe(first.searchParams.get("token"));
    expect((await accept(first)).status).toBe(410);
    expect(await stateOf(userId)).toBe("invited");
    expect((await accept(second)).status).toBe(200);
    expect(await stateOf(userId)).toBe("active");
  });

  it("when the invitation is resent within a minute of the last, then 429 with its own message, Retry-After and the seconds to wait, and no mail", async () => {
    const { userId } = await invite(uniqueEmail("eager"));
    advance(10_000);
    const before = await api.db.prisma.job.count();
    const res = await api.request().get(`/v1/users/${userId}/invite/resend?email=${tenant.admin.email}`).set(as(tenant.key));
    expect(res.status).toBe(429);
    expect(res.body.retryAfterSeconds).toBe(50);
    // the member's own interval, said as such, not the API key's limit
    expect(res.headers["retry-after"]).toBe("50");
    expect(res.body.message).toMatch(/invitation/);
    expect(res.body.message).not.toMatch(/API key/);
    expect(await api.db.prisma.job.count()).toBe(before);
    advance(50_000);
    const later = await api.request().get(`/v1/users/${userId}/invite/resend?email=${tenant.admin.email}`).set(as(tenant.key));
    expect(later.status).toBe(204);
    const sent = smtp.messages.length;
    await api.services.jobs.drain();
    await eventually(() => smtp.received(sent + 1));
  });

  it("when the link has expired, then accepting fails and the member stays invited", async () => {
    const { userId, link } = await invite(uniqueEmail("late"));
    advance(48 * 3_600_000 + 1);
    expect((await accept(link)).status).toBe(410);
    expect(await stateOf(userId)).toBe("invited");
  });

  it("when the token is unknown or missing, then 410 and nothing changes", async () => {
    expect((await api.request().post("/invitations/accept").type("form").send({ token: "nope" })).status).toBe(410);
    expect((await api.request().post("/invitations/accept").type("form").send({})).status).toBe(410);
  });

  it("when mail was sent, then no log line holds an address and the job no longer holds the message", async () => {
    const email = uniqueEmail("private");
    await invite(email);
    expect(api.logs.some((line) => line.toLowerCase().includes(email.toLowerCase()))).toBe(false);
    const jobs = await api.db.prisma.job.findMany({ where: { kind: "mail", state: "done" } });
    expect(jobs.length).toBeGreaterThan(0);
    expect(jobs.every((job) => job.payload === null)).toBe(true);
  });
});
