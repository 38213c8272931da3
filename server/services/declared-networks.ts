// Declared Networks (admins only): a partner's CIDR -> organisation declarations for its account.
// The rules of the networks themselves are in server/identity/declared-networks.ts.
import type { components } from "../../generated/openapi.ts";
import type { QueryOf } from "../domain/types.ts";
import { declarationOf, type DeclaredNetworks, readDeclaredPosition } from "../identity/declared-networks.ts";
import type { Db } from "../db/database.ts";
import * as access from "./access.ts";
import { decodeCursor, toPage } from "./paging.ts";

type Schemas = components["schemas"];

export interface DeclaredNetworkHooks {
  /** A network was declared (its pending events are backfilled in the background). */
  onDeclared?: (accountId: string, cidr: string) => void;
  /** A declaration was removed: what it attributed is withdrawn before the answer. */
  onRemoved?: (accountId: string, cidr: string) => Promise<void>;
}

export function declaredNetworkService(db: Db, networks: DeclaredNetworks, { onDeclared, onRemoved }: DeclaredNetworkHooks = {}) {
  return {
    /** 400 for the body comes before 403 for the acting user, as the spec orders them. */
    async declare(accountId: string, email: string, body: Schemas["DeclareNetwork"]): Promise<Schemas["CreateResponseDTOString"]> {
      const declaration = declarationOf(body);
      await access.admin({ db }, accountId, email);
      const id = await networks.declare(accountId, declaration);
      onDeclared?.(accountId, declaration.cidr);
      return { id };
    },

    async list(accountId: string, { email, cursor, limit }: QueryOf<"listDeclaredNetworks">): Promise<Schemas["DeclaredNetworkPage"]> {
      const after = decodeCursor(cursor, readDeclaredPosition);
      await access.admin({ db }, accountId, email);
      const rows = await networks.list(accountId, limit + 1, after);
      const page = toPage(rows, limit, (last) => ({ t: last.createdAt.getTime(), id: last.id }));
      return { data: page.data.map((row) => ({ ...row, createdAt: row.createdAt.toISOString() })), nextCursor: page.nextCursor };
    },

    async remove(accountId: string, email: string, networkId: string): Promise<void> {
      await access.admin({ db }, accountId, email);
      const cidr = await networks.remove(accountId, networkId);
      await onRemoved?.(accountId, cidr);
    },
  };
}

export type DeclaredNetworkService = ReturnType<typeof declaredNetworkService>;
