// Readers of single environment values for the configuration loaders that server/config.ts
// calls (tracking domains, tracking, webhooks): one meaning of "on" and of a positive number.

/** "1", "true", "yes" or "on" (any case) is on; anything else, or nothing, is off. */
export function flag(value: string | undefined): boolean {
  return ["1", "true", "yes", "on"].includes((value ?? "").toLowerCase());
}

/** A positive number, or `fallback` when unset or empty; anything else is refused naming the variable. */
export function positive(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

/** As `positive`, and a whole number. */
export function positiveInteger(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const value = positive(env, name, fallback);
  if (!Number.isInteger(value)) throw new Error(`${name} must be a positive integer, got "${env[name]}"`);
  return value;
}
