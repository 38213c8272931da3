// The shapes the ingest writer shares with its hooks and helpers (what a batch wrote, what its
// shared networks' events teach, the hooks): a leaf of types, so that batch.ts, pending.ts,
// domain-evidence.ts and the identity store import them without an import circle.
import type { Prisma } from "../../../generated/prisma/client.ts";
import type { AddressQuery, Identity } from "../../identity/types.ts";
import type { NetworkOfEvent } from "../collect/events.ts";

export type Tx = Prisma.TransactionClient;

export interface LeadRef {
  accountId: string;
  datasetId: string;
  leadId: string;
}

/** What one batch wrote: the hook's material for events such as lead.created and lead.visited. */
export interface IngestResult {
  events: number;
  visits: number;
  forms: number;
  /** Leads this batch created (their first visit). */
  leadsCreated: LeadRef[];
  /** Leads that existed and were visited again. */
  leadsVisited: LeadRef[];
  /** Visitors that became known by an e-mail address in this batch. */
  visitorsIdentified: (LeadRef & { visitorId: string })[];
  /** The latest address (as stored) of each lead visited in this batch: reverse DNS evidence. */
  addresses: (LeadRef & { ip: string })[];
  /** What the batch's events of shared networks teach (addresses, forms' e-mail): identity evidence (pending.ts). */
  pending: PendingNote[];
  /** Of its events, those kept pending (no identity yet). */
  pendingEvents: number;
}

export interface PendingNote {
  accountId: string;
  datasetId: string;
  ip: string;
  networkType: NetworkOfEvent["networkType"];
  masked: boolean;
  /** The network operator's curated domain (an operator's own domain names nobody). */
  networkDomain: string | null;
  email?: string;
  /** The visitors seen at the address in the batch (a person known by a form elsewhere is counted here too). */
  visitorIds: string[];
  /** When its latest event was received: the time of the evidence it gives (a form, a person's presence). */
  at: Date;
  /** When they were seen: each visitor once per clock hour (the around-the-clock rule's counts). */
  visitorHours: { visitorId: string; at: Date }[];
}

export interface WriterHooks {
  /**
   * Called inside each batch's transaction, after its rows are written: whatever it writes with
   * `tx` (an outbox of webhook events, say) commits with the batch or not at all.
   */
  onIngested?: (result: IngestResult, tx: Tx) => Promise<void>;
  /** The identities of pending events' addresses, read in the batch's transaction (server/identity identitiesOf); absent: they all stay pending. */
  identify?: (queries: readonly AddressQuery[], tx: Tx) => Promise<(Identity | undefined)[]>;
}

/** What a transaction that wrote nothing (every batch set aside, or written before) returns. */
export const EMPTY_RESULT: IngestResult = { events: 0, visits: 0, forms: 0, leadsCreated: [], leadsVisited: [], visitorsIdentified: [], addresses: [], pending: [], pendingEvents: 0 };

/** Results of several transactions as one (a failed claim's parts). */
export function mergedResults(results: readonly IngestResult[]): IngestResult | undefined {
  if (!results.length) return undefined;
  return results.reduce((a, b) => ({
    events: a.events + b.events,
    visits: a.visits + b.visits,
    forms: a.forms + b.forms,
    leadsCreated: [...a.leadsCreated, ...b.leadsCreated],
    leadsVisited: [...a.leadsVisited, ...b.leadsVisited],
    visitorsIdentified: [...a.visitorsIdentified, ...b.visitorsIdentified],
    addresses: [...a.addresses, ...b.addresses],
    pending: [...a.pending, ...b.pending],
    pendingEvents: a.pendingEvents + b.pendingEvents,
  }));
}
