// What the ingest writer asks of the identity store and gets back (identities.ts answers): a leaf
// of types, so that the writer's modules and the store import each other's shapes without a circle.
import type { NetworkType } from "../domain/types.ts";
import type { EvidenceSource } from "./rules.ts";

export type IdentitySource = EvidenceSource | "declared";

/** What a visit from an address is attributed to. */
export interface Identity {
  organizationName: string;
  organizationDomain: string | null;
  source: IdentitySource;
  confidence: number;
  /** The declared network, the unit or the prefix the identity is held for. */
  prefix: string;
}

/** An address of a visit to identify. `masked`: the dataset stores a.b.c.0 (IPv6 /48), which stands for its whole range. */
export interface AddressQuery {
  accountId: string;
  ip: string;
  networkType: NetworkType;
  masked?: boolean;
}
