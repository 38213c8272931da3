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

// Why long: a service factory whose methods share its dependencies; issue 37 item 4 makes it a module with explicit dependencies.
export function accessService(db: Db) {
  const memberWhere = (accountId: string, where: { userId: bigint } | { email: string }) =>
    db.membership.findFirst({
      where: "userId" in where ? { accountId, userId: where.userId } : { accountId, user: { email: normaliseEmail(where.email) } },
      select: { accountId: true, userId: true, role: true, user: { select: { email: true } } },
    });
  const toMember = (m: NonNullable<Awaited<ReturnType<typeof memberWhere>>>): Member => ({
    accountId: m.accountId,
    userId: m.userId,
    email: m.user.email,
    role: m.role,
  });

  const access = {
    /** The acting user: a member of the key's account, else 403. */
    async actor(accountId: string, email: string): Promise<Member> {
      const found = await memberWhere(accountId, { email });
      if (!found) throw new Forbidden("The acting user (email) is not a member of this account");
      return toMember(found);
    },

    /** The acting user, who must be an admin of the account. */
    async admin(accountId: string, email: string): Promise<Member> {
      const actor = await access.actor(accountId, email);
      if (actor.role !== "admin") throw new Forbidden("Only an admin of the account may do this");
      return actor;
    },

    /** A member of the account named by id (404 otherwise, also for other accounts' users). */
    async member(accountId: string, userId: number | bigint): Promise<Member> {
      const found = await memberWhere(accountId, { userId: BigInt(userId) });
      if (!found) throw new NotFound(`User ${userId} is not a member of this account`);
      return toMember(found);
    },

    /** A member named by e-mail (404 otherwise). */
    async memberByEmail(accountId: string, email: string): Promise<Member> {
      const found = await memberWhere(accountId, { email });
      if (!found) throw new NotFound("No member of this account has that e-mail address");
      return toMember(found);
    },

    /** The account's dataset (404 for unknown ids and for other accounts' datasets). */
    async dataset(accountId: string, datasetId: string) {
      const found = await db.dataset.findFirst({ where: { accountId, id: datasetId } });
      if (!found) throw new NotFound(`Dataset ${datasetId} does not exist`);
      return found;
    },

    /** 403 unless `accountId` (a request parameter) is the key's own account. */
    requireKeyAccount(keyAccountId: string, accountId: string): void {
      if (accountId !== keyAccountId) throw new Forbidden("accountId is not the account of this API key");
    },

    /** 403 unless the acting member reaches the account's dataset: admins all, members through an association. */
    async requireAccess(member: Member, datasetId: string): Promise<void> {
      if (member.role === "admin") return;
      const link = await db.userDataset.findUnique({ where: { userId_datasetId: { userId: member.userId, datasetId } } });
      if (!link) throw new Forbidden(`The acting user has no access to dataset ${datasetId}`);
    },

    /** The dataset, reachable by this member (404 before 403, as the spec orders them). */
    async reachableDataset(member: Member, datasetId: string) {
      const dataset = await access.dataset(member.accountId, datasetId);
      await access.requireAccess(member, datasetId);
      return dataset;
    },

    /** 409 naming the first of `ids` (members of the account) that cannot reach the dataset. */
    async requireReach(accountId: string, datasetId: string, ids: readonly number[], tx: Pick<Db, "membership"> = db): Promise<void> {
      if (!ids.length) return;
      const reaching = await tx.membership.findMany({
        where: { accountId, userId: { in: ids.map(BigInt) }, OR: [{ role: "admin" }, { datasets: { some: { datasetId } } }] },
        select: { userId: true },
      });
      const blocked = ids.find((id) => !reaching.some((m) => m.userId === BigInt(id)));
      if (blocked !== undefined) throw new Conflict(`User ${blocked} has no access to dataset ${datasetId}`);
    },

    /** 404 naming the first of `ids` that is not a dataset of the account. */
    async requireDatasets(accountId: string, ids: readonly string[], tx: Pick<Db, "dataset"> = db): Promise<void> {
      if (!ids.length) return;
      const found = await tx.dataset.findMany({ where: { accountId, id: { in: [...ids] } }, select: { id: true } });
      const missing = ids.find((id) => !found.some((d) => d.id === id));
      if (missing) throw new NotFound(`Dataset ${missing} does not exist`);
    },

    /** 404 naming the first of `ids` that is not a member of the account. */
    async requireMembers(accountId: string, ids: readonly number[], tx: Pick<Db, "membership"> = db): Promise<void> {
      if (!ids.length) return;
      const found = await tx.membership.findMany({
        where: { accountId, userId: { in: ids.map(BigInt) } },
        select: { userId: true },
      });
      const missing = ids.find((id) => !found.some((m) => m.userId === BigInt(id)));
      if (missing !== undefined) throw new NotFound(`User ${missing} is not a member of this account`);
    },
  };
  return access;
}

export type AccessService = ReturnType<typeof accessService>;
