// Contact enrichment of visitors who became known by a form's e-mail address, for datasets with
// contactEnrichment on: the address is looked up in the contact store and, when a profile is
// found, 1 credit is charged through the credit ledger (operation `formEnrichment`, key id
// `tracking`: no API key makes these charges). The charge's own statement also marks the visitor
// enriched, and only while it is still pending, so a retried step never charges twice. No credit
// left: the visitor is marked `no_credit` and nothing is charged; its visits are recorded anyway.
// The statements on "Visitor" are visitor-store.ts's.
import type { Prisma } from "../../../generated/prisma/client.ts";
import type { Db } from "../../db/database.ts";
import { ChargeGuardFailed, PaymentRequired } from "../../domain/errors.ts";
import { enrichedByCharge, settleEnrichment } from "./visitor-store.ts";

export const ENRICHMENT_OPERATION = "formEnrichment";
export const ENRICHMENT_KEY_ID = "tracking";

export type EnrichmentState = "enriched" | "not_found" | "no_credit";

export interface EnrichmentOutcome {
  accountId: string;
  datasetId: string;
  visitorId: string;
  leadId: string | null;
  state: EnrichmentState;
}

/** One enrichment charge: the credit ledger's charge (server/services/credits.ts) with a guard and a follow-up in its statement. */
export interface EnrichmentCharge {
  accountId: string;
  datasetId: string;
  at: Date;
  operation: string;
  keyId: string;
  hook: { guard: Prisma.Sql; after: Prisma.Sql };
}

/**
 * What enrichment needs, given by the caller (the services: contacts and credits): the contact
 * store's look-up, and the ledger's charge, which throws PaymentRequired when no credit is left
 * and ChargeGuardFailed when the guard did not hold.
 */
export interface EnrichmentDeps {
  contacts: { find(email: string): Promise<object | undefined> };
  credits: { charge(charge: EnrichmentCharge): Promise<string> };
  now: () => Date;
}

interface PendingVisitor {
  accountId: string;
  datasetId: string;
  id: string;
  leadId: string | null;
  email: string | null;
}


export function enrichment(db: Db, { contacts, credits, now }: EnrichmentDeps) {
  const mark = (v: PendingVisitor, state: "not_found" | "no_credit") => settleEnrichment(db, v, state);

  async function enrichOne(v: PendingVisitor): Promise<EnrichmentState | undefined> {
    const profile = v.email ? await contacts.find(v.email) : undefined;
    if (!profile) return (await mark(v, "not_found")) ? "not_found" : undefined;
    try {
      await credits.charge({
        accountId: v.accountId,
        datasetId: v.datasetId,
        at: now(),
        operation: ENRICHMENT_OPERATION,
        keyId: ENRICHMENT_KEY_ID,
        hook: enrichedByCharge(v),
      });
      return "enriched";
    } catch (error) {
      if (error instanceof ChargeGuardFailed) return undefined; // another writer settled it
      if (error instanceof PaymentRequired) return (await mark(v, "no_credit")) ? "no_credit" : undefined; // no credit left
      throw error;
    }
  }

  return {
    /** Settles up to `limit` pending visitors; what each became. */
    async enrichPending(limit = 100): Promise<EnrichmentOutcome[]> {
      const pending = await db.visitor.findMany({
        where: { enrichment: "pending" },
        take: limit,
        select: { accountId: true, datasetId: true, id: true, leadId: true, email: true },
      });
      const outcomes: EnrichmentOutcome[] = [];
      for (const v of pending) {
        const state = await enrichOne(v);
        if (state) outcomes.push({ accountId: v.accountId, datasetId: v.datasetId, visitorId: v.id, leadId: v.leadId, state });
      }
      return outcomes;
    },
  };
}
