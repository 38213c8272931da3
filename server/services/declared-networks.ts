// Declared Networks (admins only): a partner's CIDR -> organisation declarations for its account.
// The rules of the networks themselves are in server/identity/declared-networks.ts; what a
// declaration attributes (pending events) is server/tracking/write/pending.ts's.
import type { components } from "../../generated/openapi.ts";
import type { QueryOf } from "../domain/types.ts";
import { declarationOf, type DeclaredNetworks, readDeclaredPosition } from "../identity/declared-networks.ts";
import type { PendingAttribution } from "../tracking/write/pending.ts";
import type { Db } from "../db/database.ts";
import type { Logger } from "../logging.ts";
import * as access from "./access.ts";
import { decodeCursor, toPage } from "./paging.ts";

type Schemas = components["schemas"];

export interface DeclaredNetworkDeps {
  db: Db;
  /** The declarations' store (server/identity/declared-networks.ts). */
  declaredNetworkStore: DeclaredNetworks;
  /** Pending events: a declaration's are attributed to its organisation, a removal's withdrawn. */
  pending: Pick<PendingAttribution, "backfillNetwork" | "withdrawNetwork">;
  logger: Logger;
}

/** 400 for the body comes before 403 for the acting user, as the spec orders them. */
export async function declare(deps: DeclaredNetworkDeps, accountId: string, email: string, body: Schemas["DeclareNetwork"]): Promise<Schemas["CreateResponseDTOString"]> {
  const declaration = declarationOf(body);
  await access.admin(deps, accountId, email);
  const id = await deps.declaredNetworkStore.declare(accountId, declaration);
  // the network's pending events are its organisation's: attributed in the background
  void deps.pending
    .backfillNetwork(accountId, declaration.cidr)
    .catch((error: Error) => deps.logger.warn("backfill of a declared network failed", { error: error.message }));
  return { id };
}

export async function list(deps: DeclaredNetworkDeps, accountId: string, { email, cursor, limit }: QueryOf<"listDeclaredNetworks">): Promise<Schemas["DeclaredNetworkPage"]> {
  const after = decodeCursor(cursor, readDeclaredPosition);
  await access.admin(deps, accountId, email);
  const rows = await deps.declaredNetworkStore.list(accountId, limit + 1, after);
  const page = toPage(rows, limit, (last) => ({ t: last.createdAt.getTime(), id: last.id }));
  return { data: page.data.map((row) => ({ ...row, createdAt: row.createdAt.toISOString() })), nextCursor: page.nextCursor };
}

/** What the declaration attributed goes back to pending (before the answer) unless other evidence names the same organisation. */
export async function remove(deps: DeclaredNetworkDeps, accountId: string, email: string, networkId: string): Promise<void> {
  await access.admin(deps, accountId, email);
  const cidr = await deps.declaredNetworkStore.remove(accountId, networkId);
  await deps.pending.withdrawNetwork(accountId, cidr).catch((error: Error) => deps.logger.warn("withdrawal of a removed declaration failed", { error: error.message }));
}
