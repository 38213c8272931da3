// User Management: members of an account, their names and invitations.
import type { Db } from "../db/database.ts";
import type { Prisma } from "../../generated/prisma/client.ts";
import { Conflict, NotFound, TooManyRequests } from "../domain/errors.ts";
import { normaliseEmail } from "../ids.ts";
import type { JobQueue } from "../jobs/queue.ts";
import { ACCEPT_PATH, acceptInvitation as acceptToken, invitationMail, issueInvitation, openInvitation as openToken } from "../notify/invitations.ts";
import { enqueueMail } from "../notify/mail.ts";
import * as access from "./access.ts";
import { addAccess } from "./user-datasets.ts";
import type { QueryOf, Schemas } from "../domain/types.ts";
import { decodeCursor, readAfterId, toPage } from "./paging.ts";

export type AccountUserDto = Schemas["AccountUserDTO"];

export interface InvitationSettings {
  jobs: JobQueue;
  now: () => Date;
  /** The service's public base URL (the accept link's origin). */
  publicUrl: () => string;
  ttlHours: number;
  /** Least time between two invitations of one member (resend: 429 within it). */
  resendSeconds: number;
}

/** A member's name and role in an account (the schema's defaults when absent: a member, invited). */
export interface NewMembership {
  email: string;
  name: string;
  role?: "admin" | "member";
  state?: "invited" | "active";
}

/**
 * Creates the user when the (normalised) e-mail is new and makes them a member of the account, in
 * the caller's transaction; the user's id.
 */
export async function addMembership(tx: Pick<Db, "user" | "membership">, accountId: string, member: NewMembership): Promise<bigint> {
  const { email, name, role, state } = member;
  const user = await tx.user.upsert({ where: { email }, create: { email }, update: {}, select: { id: true } });
  await tx.membership.create({ data: { accountId, userId: user.id, name, role, state } });
  return user.id;
}

export interface UserDeps {
  db: Db;
  invitations: InvitationSettings;
}

/** A new link for the member (older ones stop working) and its e-mail, in the caller's transaction. */
async function invite(invitations: InvitationSettings, tx: Prisma.TransactionClient, accountId: string, userId: bigint): Promise<void> {
  const now = invitations.now();
  const { token, expiresAt } = await issueInvitation(tx, { accountId, userId }, now, invitations.ttlHours);
  const member = await tx.membership.findUniqueOrThrow({
    where: { accountId_userId: { accountId, userId } },
    select: { name: true, user: { select: { email: true } }, account: { select: { name: true } } },
  });
  const link = `${invitations.publicUrl()}${ACCEPT_PATH}?token=${token}`;
  await enqueueMail(invitations.jobs, tx, invitationMail(member.user.email, member.account.name, member.name, link, expiresAt));
}

/**
 * One page of the account's members by user id, with the datasets each reaches: an admin all
 * of the account's (whatever its own associations), a member its associations; admins only.
 */
export async function list({ db }: Pick<UserDeps, "db">, accountId: string, actorEmail: string, query: Pick<QueryOf<"listUsers">, "cursor" | "limit">): Promise<Schemas["GetAllResponseAccountUserDTO"]> {
  const after = decodeCursor(query.cursor, readAfterId);
  await access.admin({ db }, accountId, actorEmail);
  const limit = query.limit;
  const rows = await db.membership.findMany({
    where: { accountId, ...(after === undefined ? {} : { userId: { gt: BigInt(after) } }) },
    orderBy: { userId: "asc" },
    take: limit + 1,
    select: {
      userId: true,
      name: true,
      role: true,
      state: true,
      user: { select: { email: true } },
      datasets: { select: { datasetId: true }, orderBy: [{ createdAt: "asc" }, { datasetId: "asc" }] },
    },
  });
  const everyDataset = rows.some((row) => row.role === "admin")
    ? (await db.dataset.findMany({ where: { accountId }, orderBy: [{ createdAt: "asc" }, { id: "asc" }], select: { id: true } })).map((d) => d.id)
    : [];
  const users = rows.map((row) => ({
    userId: Number(row.userId),
    email: row.user.email,
    name: row.name,
    role: row.role,
    invitationState: row.state,
    allDatasets: row.role === "admin",
    datasetIds: row.role === "admin" ? everyDataset : row.datasets.map((d) => d.datasetId),
  }));
  return toPage(users, limit, (last) => ({ after: last.userId }));
}

/**
 * Creates the user when the e-mail is new, else joins the existing user to the account, with
 * the given dataset access, and queues an invitation; all or nothing.
 */
export async function addMember({ db, invitations }: UserDeps, accountId: string, actorEmail: string, input: Schemas["AddUser"]): Promise<number> {
  await access.admin({ db }, accountId, actorEmail);
  const email = normaliseEmail(input.email);
  const datasetIds = input.datasetIds ?? [];
  return db.$transaction(async (tx) => {
    await access.requireDatasets({ db: tx }, accountId, datasetIds);
    const userId = await addMembership(tx, accountId, { email, name: input.name, role: input.role });
    await addAccess(tx, datasetIds.map((datasetId) => ({ accountId, userId, datasetId })));
    await invite(invitations, tx, accountId, userId);
    return Number(userId);
  }).then((id) => {
    invitations.jobs.wake();
    return id;
  });
}

/** The invitation a link's token opens (for the accept page); undefined when the link does not work. */
export function openInvitation({ db, invitations }: UserDeps, token: string) {
  return openToken(db, token, invitations.now());
}

/** Accepts the invitation of a link's token once: the membership becomes active. */
export function acceptInvitation({ db, invitations }: UserDeps, token: string) {
  return acceptToken(db, token, invitations.now(), (tx, member) => tx.membership.updateMany({ where: member, data: { state: "active" } }));
}

/** Renames the member within this account only (another account keeps its own name for them). */
export async function rename({ db }: Pick<UserDeps, "db">, accountId: string, userId: number, name: string): Promise<void> {
  const { count } = await db.membership.updateMany({ where: { accountId, userId: BigInt(userId) }, data: { name } });
  if (count === 0) throw new NotFound(`User ${userId} is not a member of this account`);
}

/**
 * Sends a new invitation e-mail whose link replaces the previous one; only for a member who has
 * not accepted yet, and at most once per `resendSeconds` per member (the membership row is
 * locked for the check, so concurrent resends cannot both pass).
 */
export async function resendInvitation({ db, invitations }: UserDeps, accountId: string, actorEmail: string, userId: number): Promise<void> {
  await access.admin({ db }, accountId, actorEmail);
  const id = BigInt(userId);
  await db.$transaction(async (tx) => {
    const [member] = await tx.$queryRaw<{ state: string }[]>`
      SELECT "state"::text AS "state" FROM "Membership" WHERE "accountId" = ${accountId} AND "userId" = ${id} FOR UPDATE`;
    if (!member) throw new NotFound(`User ${userId} is not a member of this account`);
    if (member.state !== "invited") throw new Conflict(`User ${userId} has already accepted the invitation`);
    const last = await tx.invitation.findFirst({ where: { accountId, userId: id }, orderBy: { createdAt: "desc" }, select: { createdAt: true } });
    const waitMs = last ? last.createdAt.getTime() + invitations.resendSeconds * 1000 - invitations.now().getTime() : 0;
    if (waitMs > 0) {
      throw new TooManyRequests(`The invitation of user ${userId} was sent moments ago; try again later`, Math.ceil(waitMs / 1000));
    }
    await invite(invitations, tx, accountId, id);
  });
  invitations.jobs.wake();
}
