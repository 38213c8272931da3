// Who may do what: the acting user named by `email`, their role, and the datasets they reach.
import type { Db } from "../db/database.ts";
import { Conflict, Forbidden, NotFound } from "../domain/errors.ts";
import { normaliseEmail } from "../ids.ts";

export interface Member {
  accountId: string;
  userId: bigint;
  email: string;
  role: "admin" | "member";
}

/** The client the checks read through: the database, or the caller's transaction (`{ db: tx }`). */
export interface AccessDeps {
  db: Pick<Db, "membership" | "dataset" | "userDataset">;
}

async function memberWhere({ db }: AccessDeps, accountId: string, where: { userId: bigint } | { email: string }): Promise<Member | undefined> {
  const found = await db.membership.findFirst({
    where: "userId" in where ? { accountId, userId: where.userId } : { accountId, user: { email: normaliseEmail(where.email) } },
    select: { accountId: true, userId: true, role: true, user: { select: { email: true } } },
  });
  return found ? { accountId: found.accountId, userId: found.userId, email: found.user.email, role: found.role } : undefined;
}

/** The acting user: a member of the key's account, else 403. */
export async function actor(deps: AccessDeps, accountId: string, email: string): Promise<Member> {
  const found = await memberWhere(deps, accountId, { email });
  if (!found) throw new Forbidden("The acting user (email) is not a member of this account");
  return found;
}

/** The acting user, who must be an admin of the account. */
export async function admin(deps: AccessDeps, accountId: string, email: string): Promise<Member> {
  const found = await actor(deps, accountId, email);
  if (found.role !== "admin") throw new Forbidden("Only an admin of the account may do this");
  return found;
}

/** A member of the account named by id (404 otherwise, also for other accounts' users). */
export async function member(deps: AccessDeps, accountId: string, userId: number | bigint): Promise<Member> {
  const found = await memberWhere(deps, accountId, { userId: BigInt(userId) });
  if (!found) throw new NotFound(`User ${userId} is not a member of this account`);
  return found;
}

/** A member named by e-mail (404 otherwise). */
export async function memberByEmail(deps: AccessDeps, accountId: string, email: string): Promise<Member> {
  const found = await memberWhere(deps, accountId, { email });
  if (!found) throw new NotFound("No member of this account has that e-mail address");
  return found;
}

/** The account's dataset (404 for unknown ids and for other accounts' datasets). */
export async function dataset({ db }: AccessDeps, accountId: string, datasetId: string) {
  const found = await db.dataset.findFirst({ where: { accountId, id: datasetId } });
  if (!found) throw new NotFound(`Dataset ${datasetId} does not exist`);
  return found;
}

/** 403 unless `accountId` (a request parameter) is the key's own account. */
export function requireKeyAccount(keyAccountId: string, accountId: string): void {
  if (accountId !== keyAccountId) throw new Forbidden("accountId is not the account of this API key");
}

/** 403 unless the acting member reaches the account's dataset: admins all, members through an association. */
export async function requireAccess({ db }: AccessDeps, actingMember: Member, datasetId: string): Promise<void> {
  if (actingMember.role === "admin") return;
  const link = await db.userDataset.findUnique({ where: { userId_datasetId: { userId: actingMember.userId, datasetId } } });
  if (!link) throw new Forbidden(`The acting user has no access to dataset ${datasetId}`);
}

/** The dataset, reachable by this member (404 before 403, as the spec orders them). */
export async function reachableDataset(deps: AccessDeps, actingMember: Member, datasetId: string) {
  const found = await dataset(deps, actingMember.accountId, datasetId);
  await requireAccess(deps, actingMember, datasetId);
  return found;
}

/** 409 naming the first of `ids` (members of the account) that cannot reach the dataset. */
export async function requireReach({ db }: { db: Pick<Db, "membership"> }, accountId: string, datasetId: string, ids: readonly number[]): Promise<void> {
  if (!ids.length) return;
  const reaching = await db.membership.findMany({
    where: { accountId, userId: { in: ids.map(BigInt) }, OR: [{ role: "admin" }, { datasets: { some: { datasetId } } }] },
    select: { userId: true },
  });
  const blocked = ids.find((id) => !reaching.some((m) => m.userId === BigInt(id)));
  if (blocked !== undefined) throw new Conflict(`User ${blocked} has no access to dataset ${datasetId}`);
}

/** 404 naming the first of `ids` that is not a dataset of the account. */
export async function requireDatasets({ db }: { db: Pick<Db, "dataset"> }, accountId: string, ids: readonly string[]): Promise<void> {
  if (!ids.length) return;
  const found = await db.dataset.findMany({ where: { accountId, id: { in: [...ids] } }, select: { id: true } });
  const missing = ids.find((id) => !found.some((d) => d.id === id));
  if (missing) throw new NotFound(`Dataset ${missing} does not exist`);
}

/** 404 naming the first of `ids` that is not a member of the account. */
export async function requireMembers({ db }: { db: Pick<Db, "membership"> }, accountId: string, ids: readonly number[]): Promise<void> {
  if (!ids.length) return;
  const found = await db.membership.findMany({
    where: { accountId, userId: { in: ids.map(BigInt) } },
    select: { userId: true },
  });
  const missing = ids.find((id) => !found.some((m) => m.userId === BigInt(id)));
  if (missing !== undefined) throw new NotFound(`User ${missing} is not a member of this account`);
}
