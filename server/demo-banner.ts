// What `npm start` prints for the person who started it once the demo account is ready: the
// addresses, the demo key and the line to paste (server/main.ts). It goes to the console, never
// through the logger (it holds a key). The request logs that follow scroll it away, so its last
// lines are printed once more, a moment after the first request that is not a health check.
import type { Demo } from "./demo.ts";

/** After the first request, the burst of a page's other requests (the docs' assets, the demo's send) is logged within this. */
export const REMINDER_DELAY_MS = 3_000;

/** Paths an orchestrator or a waiting script polls: they are not a person using the service. */
const HEALTH_CHECKS = new Set(["/healthz", "/readyz"]);

/** The line to paste into a shell (the README's tour and the walkthrough use these variables). */
export function exportLine(baseUrl: string, demo: Demo): string {
  const [website] = demo.datasetIds;
  return `export B=${baseUrl} KEY=${demo.key} ACC=${demo.accountId} DS=${website} A=email=${demo.adminEmail} CONTACT=${demo.contactEmail} LAST=${demo.contactLastName}`;
}

/** The banner printed when the demo is ready. */
export function demoBanner(baseUrl: string, demo: Demo, mailDestination: string): string {
  const [website] = demo.datasetIds;
  const key = `-H "x-api-key: ${demo.key}"`;
  return [
    "",
    `API reference: ${baseUrl}/docs (no key needed)`,
    `Mail (invitations, segment alerts) goes to: ${mailDestination}`,
    "Demo account ready. A new demo key is issued at every start (the previous one is revoked).",
    `  account id:  ${demo.accountId}`,
    `  API key:     ${demo.key}`,
    `  admin:       ${demo.adminEmail}`,
    `  datasets:    ${demo.datasetIds.join(", ")} (the first is the demo website, with leads)`,
    `  contact:     ${demo.contactEmail}, last name ${demo.contactLastName} (its look-up finds a profile)`,
    "For the README's walkthrough, paste:",
    `  ${exportLine(baseUrl, demo)}`,
    "Try it:",
    `  curl -s "${baseUrl}/v1/users?email=${demo.adminEmail}" ${key}`,
    `  curl -s "${baseUrl}/v1/user-datasets?accountId=${demo.accountId}&email=${demo.adminEmail}" ${key}`,
    "Look up a contact (costs 1 credit of the oldest demo dataset; an unknown address is free):",
    `  curl -s -X POST "${baseUrl}/v1/email-lookup" ${key} -H "content-type: application/json" -d '{"email":"${demo.contactEmail}","lastName":"${demo.contactLastName}"}'`,
    "Tracking: open the demo website, click to page 2, send the form, then list the leads (the visits count as Apple's network):",
    `  ${baseUrl}/demo?dataset=${website}`,
    `  curl -s "${baseUrl}/v1/leads?email=${demo.adminEmail}&datasetId=${website}&limit=3" ${key}`,
    "",
  ].join("\n");
}

/** The banner's reminder: the addresses and the line to paste, below the request logs. */
export function demoReminder(baseUrl: string, demo: Demo): string {
  return [
    "",
    `Demo (printed again below the request logs): API reference ${baseUrl}/docs, demo website ${baseUrl}/demo?dataset=${demo.datasetIds[0]}`,
    `  ${exportLine(baseUrl, demo)}`,
    "",
  ].join("\n");
}

/**
 * Prints the reminder once: `delayMs` after the first request, other than a health check, that
 * comes after it was armed (the banner printed). Requests before then are the start's own.
 */
export class BannerReminder {
  private text: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private done = false;

  constructor(
    private readonly print: (text: string) => void,
    private readonly delayMs = REMINDER_DELAY_MS,
  ) {}

  /** The banner was printed: from now on a request sets the reminder going. */
  arm(text: string): void {
    this.text = text;
  }

  /** Told of every request's path (query included or not). */
  requested(url: string | undefined): void {
    if (this.done || this.text === undefined || HEALTH_CHECKS.has((url ?? "").split("?")[0]!)) return;
    this.done = true;
    const text = this.text;
    this.timer = setTimeout(() => this.print(text), this.delayMs);
    this.timer.unref();
  }

  /** The process stops: no reminder after it. */
  cancel(): void {
    this.done = true;
    clearTimeout(this.timer);
  }
}
