// Tests and benchmarks send no traffic off this machine: reverse DNS of visitors is off or goes to
// a DNS server of the test's own on loopback (test/support/dns-server.ts), and so do tracking-domain
// look-ups. The system's resolver is not on loopback: a configuration that would ask it is refused,
// in process (startTestApi) and for child processes (hermeticEnv), and every test or benchmark that
// starts the service, the writer or an operator command passes its environment through hermeticEnv.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../server/config.ts";
import { startTestApi } from "./support/api.ts";
import { dnsOffMachine, hermeticEnv, isLoopbackServer, testConfig } from "./support/config.ts";
import { testTrackingConfig } from "./support/tracking.ts";

const root = path.resolve(import.meta.dirname, "..");

describe("DNS in tests and benchmarks", () => {
  it("when a configuration would ask the system's resolver or a server off loopback, then the check names it", () => {
    expect(dnsOffMachine(loadConfig({}))).toEqual([
      "reverse DNS (TRACKING_DNS_SERVERS) would ask the system's resolver",
      "tracking-domain DNS (CTD_DNS_SERVERS) would ask the system's resolver",
    ]);
    expect(dnsOffMachine(loadConfig({ TRACKING_DNS_SERVERS: "8.8.8.8,127.0.0.1:5353", CTD_DNS_SERVERS: "[2001:4860:4860::8888]:53" }))).toEqual([
      "reverse DNS (TRACKING_DNS_SERVERS) names 8.8.8.8, not on loopback",
      "tracking-domain DNS (CTD_DNS_SERVERS) names [2001:4860:4860::8888]:53, not on loopback",
    ]);
    expect(dnsOffMachine(loadConfig({ TRACKING_DNS_SERVERS: "off", CTD_DNS_SERVERS: "127.0.0.1:9" }))).toEqual([]);
    expect(dnsOffMachine(loadConfig({ TRACKING_DNS_SERVERS: "127.0.0.1:5353", CTD_DNS_SERVERS: "[::1]:53,127.0.0.2" }))).toEqual([]);
    expect(["127.0.0.1", "127.0.0.1:53", "::1", "[::1]:53"].every(isLoopbackServer)).toBe(true);
    expect(["10.0.0.1", "8.8.8.8:53", "::2", "[2001:db8::1]:53", "localhost"].some(isLoopbackServer)).toBe(false);
  });

  it("when a test makes its configuration, then no DNS query leaves this machine", () => {
    expect(dnsOffMachine(testConfig())).toEqual([]);
    const tracking = testTrackingConfig();
    expect(tracking.reverseDns.enabled === false || tracking.reverseDns.servers.every(isLoopbackServer)).toBe(true);
  });

  it("when a test API would use the system's resolver for reverse DNS, then it is refused before it starts", async () => {
    const systemResolver = { ...testConfig().tracking.reverseDns, enabled: true, servers: [] };
    await expect(startTestApi({ reverseDns: systemResolver })).rejects.toThrow(/reverse DNS \(TRACKING_DNS_SERVERS\) would ask the system's resolver/);
  });

  it("when a child process's environment leaves DNS unset, then it is off; when it names a server off loopback, then it is refused", () => {
    expect(hermeticEnv({ PORT: "0" })).toMatchObject({ PORT: "0", TRACKING_DNS_SERVERS: "off", CTD_DNS_SERVERS: "127.0.0.1:9" });
    expect(hermeticEnv({ TRACKING_DNS_SERVERS: "127.0.0.1:5300" }).TRACKING_DNS_SERVERS).toBe("127.0.0.1:5300");
    expect(() => hermeticEnv({ TRACKING_DNS_SERVERS: "1.1.1.1" })).toThrow(/names 1\.1\.1\.1, not on loopback/);
    expect(() => hermeticEnv({ TRACKING_DNS_SERVERS: "" })).toThrow(/system's resolver/);
    expect(() => hermeticEnv({ CTD_DNS_SERVERS: "" })).toThrow(/system's resolver/);
  });

  it("when a test or benchmark starts the service, the writer or an operator command, then its environment goes through hermeticEnv", () => {
    const starter = /\b(spawn|execFile|execFileSync|fork)\b/; // called, or promisified as `run`
    const entryPoint = /server\/main\.ts|scripts\/(ingest|admin|migrations)\.ts|SERVICE_COMMAND|NPM_START|builtProgram\(/;
    const files = ["test", "test/support", "bench"].flatMap((dir) =>
      readdirSync(path.join(root, dir)).filter((name) => name.endsWith(".ts")).map((name) => path.join(dir, name)),
    );
    const starting = files.filter((file) => {
      const text = readFileSync(path.join(root, file), "utf8");
      return file !== "test/hermetic-dns.test.ts" && starter.test(text) && entryPoint.test(text);
    });
    expect(starting.length, "files found that start a process of this repository").toBeGreaterThanOrEqual(8);
    const unguarded = starting.filter((file) => !readFileSync(path.join(root, file), "utf8").includes("hermeticEnv("));
    expect(unguarded, "files that start the service or a script without hermeticEnv").toEqual([]);
  });
});
