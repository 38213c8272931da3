// Lookup API: a contact's profile by e-mail, paid in credits only when a profile is found.
import type { ContactProfile } from "../contacts/profile.ts";
import { ApiError, NotFoundError, PaymentRequiredError } from "../http/errors.ts";
import type { ContactService } from "./contacts.ts";
import { type ChargeHook, type CreditService } from "./credits.ts";
import { fingerprint, type IdempotencyService, type KeyClaim, type StoredAnswer } from "./idempotency.ts";
import { contradictedHint, type Hints } from "./lookup-hints.ts";

export interface LookupRequest extends Hints {
  email: string;
  /** The dataset that pays; undefined: the account's oldest dataset with credit left. */
  datasetId?: string;
}

export interface Caller {
  accountId: string;
  keyId: string;
  /** The operationId, written to the ledger. */
  operation: string;
}

const PURGE_EVERY_MS = 3_600_000;

const miss = () => new NotFoundError("No profile was found for this e-mail address and hints", "profile_not_found");

/** The error a stored answer stands for (only these statuses are stored besides 200). */
function errorOf(answer: StoredAnswer): ApiError {
  const { error, message } = answer.body as { error: string; message: string };
  return answer.status === 402 ? new PaymentRequiredError(message) : new NotFoundError(message, error);
}

export function lookupService(deps: { contacts: ContactService; credits: CreditService; idempotency: IdempotencyService; now: () => Date }) {
  const { contacts, credits, idempotency, now } = deps;
  let lastPurge = 0;

  /** Credit first (a partner without credit learns so even for a miss), then the profile, then the charge. */
  async function lookup(caller: Caller, request: LookupRequest, answerHook?: (profile: ContactProfile) => ChargeHook) {
    const { email, datasetId, ...hints } = request;
    await credits.requireCredit(caller.accountId, datasetId, now());
    const profile = await contacts.find(email);
    if (!profile || contradictedHint(profile, hints)) throw miss();
    await credits.charge({ ...caller, datasetId, at: now(), hook: answerHook?.(profile) });
    return profile;
  }

  /** Runs the lookup as the key's owner: its answer is stored (a charged one in the charge's own statement). */
  async function lookupOnce(caller: Caller, request: LookupRequest, claim: KeyClaim): Promise<ContactProfile> {
    try {
      return await lookup(caller, request, (profile) => idempotency.storeWithCharge(claim, { status: 200, body: profile }));
    } catch (error) {
      if (error instanceof NotFoundError || error instanceof PaymentRequiredError) {
        await idempotency.store(claim, { status: error.status, body: error.body() });
      } else {
        await idempotency.release(claim).catch(() => {});
      }
      throw error;
    }
  }

  return {
    lookup: (caller: Caller, request: LookupRequest) => lookup(caller, request),

    /**
     * The lookup under an Idempotency-Key: the first request with the key runs, a retry with the
     * same request gets the first answer again (nothing more is charged), another request 409.
     */
    async lookupIdempotent(caller: Caller, request: LookupRequest, key: string): Promise<ContactProfile> {
      if (Date.now() - lastPurge > PURGE_EVERY_MS) {
        lastPurge = Date.now();
        await idempotency.purgeExpired();
      }
      const { datasetId, ...body } = request;
      const print = fingerprint(caller.operation, { datasetId }, body);
      const claimed = await idempotency.claim(caller.accountId, key, print);
      if ("claim" in claimed) return lookupOnce(caller, request, claimed.claim);
      if (claimed.replay.status === 200) return claimed.replay.body as ContactProfile;
      throw errorOf(claimed.replay);
    },
  };
}

export type LookupService = ReturnType<typeof lookupService>;
