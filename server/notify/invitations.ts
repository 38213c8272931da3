// Invitation links: a random token (32 bytes, base64url) goes into the e-mail only; the database
// keeps its SHA-256. A link works once, until it expires, and not after a resend replaced it.
// Accepting is outside the partner spec (the invited person has no API key): GET
// /invitations/accept shows a page with a button (a GET changes nothing, so mail scanners that
// open links do not accept), and its POST accepts.
import { createHash, randomBytes } from "node:crypto";
import express from "express";
import type { Prisma } from "../../generated/prisma/client.ts";
import type { Db } from "../db/database.ts";
import type { Mail } from "./mail.ts";

export const ACCEPT_PATH = "/invitations/accept";

export const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

export function newToken(): { token: string; tokenHash: string } {
  const token = randomBytes(32).toString("base64url");
  return { token, tokenHash: hashToken(token) };
}

export const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

export function invitationMail(to: string, accountName: string, memberName: string, link: string, expiresAt: Date): Mail {
  const until = expiresAt.toISOString().replace("T", " ").slice(0, 16) + " UTC";
  return {
    to,
    subject: `You are invited to ${accountName} on Lead Intelligence`,
    text: `Hello ${memberName},\n\nyou have been invited to join ${accountName}. Accept the invitation here (the link works once, until ${until}):\n\n${link}\n`,
    html: `<p>Hello ${escapeHtml(memberName)},</p><p>you have been invited to join <b>${escapeHtml(accountName)}</b>.</p><p><a href="${escapeHtml(link)}">Accept the invitation</a> (the link works once, until ${until}).</p>`,
  };
}

/** Creates an invitation with a new link (revoking the member's open ones); returns the token. */
export async function issueInvitation(tx: Prisma.TransactionClient, member: { accountId: string; userId: bigint }, now: Date, ttlHours: number) {
  await tx.invitation.updateMany({
    where: { ...member, acceptedAt: null, revokedAt: null },
    data: { revokedAt: now },
  });
  const { token, tokenHash } = newToken();
  const expiresAt = new Date(now.getTime() + ttlHours * 3_600_000);
  await tx.invitation.create({ data: { ...member, tokenHash, expiresAt, sentAt: now, createdAt: now } });
  return { token, expiresAt };
}

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;

const invalid = () => page("This invitation link does not work", "<p>It was used already, has expired, or a newer invitation replaced it. Ask an admin of the account to resend the invitation.</p>");

/** An open invitation's account name for a token; undefined when the link does not work. */
export async function openInvitation(db: Db, token: string, now: Date) {
  if (!token) return undefined;
  return db.invitation.findFirst({
    where: { tokenHash: hashToken(token), acceptedAt: null, revokedAt: null, expiresAt: { gt: now } },
    select: { member: { select: { account: { select: { name: true } } } } },
  });
}

/** Accepts in one transaction: the conditional UPDATE makes the link single-use even under races. */
export async function acceptInvitation(db: Db, token: string, now: Date): Promise<{ accountName: string } | undefined> {
  if (!token) return undefined;
  return db.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ accountId: string; userId: bigint }[]>`
      UPDATE "Invitation" SET "acceptedAt" = ${now}
      WHERE "tokenHash" = ${hashToken(token)} AND "acceptedAt" IS NULL AND "revokedAt" IS NULL AND "expiresAt" > ${now}
      RETURNING "accountId", "userId"`;
    const accepted = rows[0];
    if (!accepted) return undefined;
    const member = { accountId: accepted.accountId, userId: BigInt(accepted.userId) };
    await tx.membership.updateMany({ where: member, data: { state: "active" } });
    // the member's other open links are of no use any more
    await tx.invitation.updateMany({ where: { ...member, acceptedAt: null, revokedAt: null }, data: { revokedAt: now } });
    const account = await tx.account.findUniqueOrThrow({ where: { id: member.accountId }, select: { name: true } });
    return { accountName: account.name };
  });
}

/** GET shows the page with the accept button; POST (form field `token`) accepts: 200, or 410 when the link does not work. */
export interface InvitationLinks {
  open(token: string): ReturnType<typeof openInvitation>;
  accept(token: string): ReturnType<typeof acceptInvitation>;
}

export function invitationRoutes(links: InvitationLinks): express.Router {
  const router = express.Router();
  router.get(ACCEPT_PATH, async (req, res, next) => {
    try {
      const token = typeof req.query.token === "string" ? req.query.token : "";
      res.set("cache-control", "no-store").set("referrer-policy", "no-referrer").type("html");
      const open = await links.open(token);
      if (!open) return void res.status(410).send(invalid());
      res.send(
        page(
          `Join ${open.member.account.name}`,
          `<form method="post" action="${ACCEPT_PATH}"><input type="hidden" name="token" value="${escapeHtml(token)}"><button type="submit">Accept the invitation</button></form>`,
        ),
      );
    } catch (error) {
      next(error);
    }
  });
  router.post(ACCEPT_PATH, express.urlencoded({ extended: false, limit: "4kb" }), async (req, res, next) => {
    try {
      const token = typeof req.body?.token === "string" ? (req.body.token as string) : "";
      res.set("cache-control", "no-store").type("html");
      const accepted = await links.accept(token);
      if (!accepted) return void res.status(410).send(invalid());
      res.send(page(`Welcome to ${accepted.accountName}`, "<p>Your invitation is accepted: your membership is active.</p>"));
    } catch (error) {
      next(error);
    }
  });
  return router;
}
