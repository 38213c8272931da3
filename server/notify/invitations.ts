// Invitation links: a random token (32 bytes, base64url) goes into the e-mail only; the database
// keeps its SHA-256. A link works once, until it expires, and not after a resend replaced it.
// Accepting is outside the partner spec (the invited person has no API key): its page and form
// are served by server/http/invitations.ts.
import { createHash, randomBytes } from "node:crypto";
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

/** An open invitation's account name for a token; undefined when the link does not work. */
export async function openInvitation(db: Db, token: string, now: Date) {
  if (!token) return undefined;
  return db.invitation.findFirst({
    where: { tokenHash: hashToken(token), acceptedAt: null, revokedAt: null, expiresAt: { gt: now } },
    select: { member: { select: { account: { select: { name: true } } } } },
  });
}

/**
 * Accepts in one transaction: the conditional UPDATE makes the link single-use even under races;
 * `activate` makes the membership active in it (services/users.ts writes memberships).
 */
export async function acceptInvitation(
  db: Db,
  token: string,
  now: Date,
  activate: (tx: Prisma.TransactionClient, member: { accountId: string; userId: bigint }) => Promise<unknown>,
): Promise<{ accountName: string } | undefined> {
  if (!token) return undefined;
  return db.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ accountId: string; userId: bigint }[]>`
      UPDATE "Invitation" SET "acceptedAt" = ${now}
      WHERE "tokenHash" = ${hashToken(token)} AND "acceptedAt" IS NULL AND "revokedAt" IS NULL AND "expiresAt" > ${now}
      RETURNING "accountId", "userId"`;
    const accepted = rows[0];
    if (!accepted) return undefined;
    const member = { accountId: accepted.accountId, userId: BigInt(accepted.userId) };
    await activate(tx, member);
    // the member's other open links are of no use any more
    await tx.invitation.updateMany({ where: { ...member, acceptedAt: null, revokedAt: null }, data: { revokedAt: now } });
    const account = await tx.account.findUniqueOrThrow({ where: { id: member.accountId }, select: { name: true } });
    return { accountName: account.name };
  });
}
