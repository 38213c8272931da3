// The demo banner of `npm start` (server/demo-banner.ts): its line to paste is printed once more
// below the request logs, a moment after the first request that is not a health check.
// test/first-start.test.ts sees both prints in a real first start.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BannerReminder, demoBanner, demoReminder, exportLine, REMINDER_DELAY_MS } from "../server/demo-banner.ts";
import type { Demo } from "../server/demo.ts";

const demo: Demo = {
  accountId: "acc_demo",
  adminEmail: "admin@demo.example",
  key: "lik_demo",
  datasetIds: ["ds_website", "ds_other"],
  contactEmail: "jo@contact.example",
  contactLastName: "Doe",
};
const BASE = "http://127.0.0.1:3000";

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe("demo banner", () => {
  it("when the demo is ready, then the banner and its reminder hold the line to paste and the reminder the addresses to open", () => {
    const line = exportLine(BASE, demo);
    expect(line).toBe("export B=http://127.0.0.1:3000 KEY=lik_demo ACC=acc_demo DS=ds_website A=email=admin@demo.example CONTACT=jo@contact.example LAST=Doe");
    expect(demoBanner(BASE, demo, "mail dir").split("\n")).toContain(`  ${line}`);
    const reminder = demoReminder(BASE, demo);
    expect(reminder.split("\n")).toContain(`  ${line}`);
    expect(reminder).toContain(`${BASE}/docs`);
    expect(reminder).toContain(`${BASE}/demo?dataset=ds_website`);
  });

  it("when requests come after the banner, then the reminder is printed once, after the delay of the first that is not a health check", () => {
    const printed: string[] = [];
    const reminder = new BannerReminder((text) => printed.push(text));
    reminder.requested("/docs"); // before the banner: the start's own time
    reminder.arm("again");
    reminder.requested("/healthz");
    reminder.requested("/readyz?verbose=1");
    vi.advanceTimersByTime(REMINDER_DELAY_MS * 2);
    expect(printed).toEqual([]);
    reminder.requested("/demo?dataset=ds_website");
    reminder.requested("/collect");
    vi.advanceTimersByTime(REMINDER_DELAY_MS - 1);
    expect(printed).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(printed).toEqual(["again"]);
    reminder.requested("/v1/users");
    vi.advanceTimersByTime(REMINDER_DELAY_MS * 2);
    expect(printed).toEqual(["again"]);
  });

  it("when the service stops before the delay has passed, then no reminder is printed", () => {
    const printed: string[] = [];
    const reminder = new BannerReminder((text) => printed.push(text));
    reminder.arm("again");
    reminder.requested("/docs");
    reminder.cancel();
    vi.advanceTimersByTime(REMINDER_DELAY_MS * 2);
    expect(printed).toEqual([]);
  });
});
