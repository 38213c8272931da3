// User Management: members of an account, their names and invitations.
import type { Db } from "../db/database.ts";
import { Conflict, NotFound } from "../domain/errors.ts";
import { normaliseEmail } from "../ids.ts";
import type { AccessService } from "./access.ts";
import type { QueryOf, Schemas } from "../domain/types.ts";
import { decodeCursor, readAfterId, toPage } from "./paging.ts";

export type AccountUserDto = Schemas["AccountUserDTO"];

export function userService(db: Db, access: AccessService) {
  return {
    /** One page of the account's members by user id, with their dataset associations; admins only. */
    async list(accountId: string, actorEmail: string, query: Pick<QueryOf<"listUsers">, "cursor" | "limit">): Promise<Schemas["GetAllResponseAccountUserDTO"]> {
      const after = decodeCursor(query.cursor, readAfterId);
      await access.admin(accountId, actorEmail);
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
      const users = rows.map((row) => ({
        userId: Number(row.userId),
        email: row.user.email,
        name: row.name,
        role: row.role,
        invitationState: row.state,
        datasetIds: row.datasets.map((d) => d.datasetId),
      }));
      return toPage(users, limit, (last) => ({ after: last.userId }));
    },

    /**
     * Creates the user when the e-mail is new, else joins the existing user to the account, with
     * the given dataset access, and queues an invitation; all or nothing.
     */
    async addMember(accountId: string, actorEmail: string, input: Schemas["AddUser"]): Promise<number> {
      await access.admin(accountId, actorEmail);
      const email = normaliseEmail(input.email);
      const datasetIds = input.datasetIds ?? [];
      return db.$transaction(async (tx) => {
        await access.requireDatasets(accountId, datasetIds, tx);
        const user = await tx.user.upsert({ where: { email }, create: { email }, update: {}, select: { id: true } });
        await tx.membership.create({ data: { accountId, userId: user.id, name: input.name, role: input.role } });
        await tx.userDataset.createMany({ data: datasetIds.map((datasetId) => ({ accountId, userId: user.id, datasetId })) });
        await tx.invitation.create({ data: { accountId, userId: user.id } });
        return Number(user.id);
      });
    },

    /** Renames the member within this account only (another account keeps its own name for them). */
    async rename(accountId: string, userId: number, name: string): Promise<void> {
      const { count } = await db.membership.updateMany({ where: { accountId, userId: BigInt(userId) }, data: { name } });
      if (count === 0) throw new NotFound(`User ${userId} is not a member of this account`);
    },

    /** Queues a new invitation e-mail; only for a member who has not accepted yet. */
    async resendInvitation(accountId: string, actorEmail: string, userId: number): Promise<void> {
      await access.admin(accountId, actorEmail);
      const member = await db.membership.findUnique({
        where: { accountId_userId: { accountId, userId: BigInt(userId) } },
        select: { state: true },
      });
      if (!member) throw new NotFound(`User ${userId} is not a member of this account`);
      if (member.state !== "invited") throw new Conflict(`User ${userId} has already accepted the invitation`);
      await db.invitation.create({ data: { accountId, userId: BigInt(userId) } });
    },
  };
}

export type UserService = ReturnType<typeof userService>;
