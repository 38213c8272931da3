// The installable client: built and packed with `npm pack`, installed from the tarball into a
// fresh project outside this repository, type-checked there with tsc and run against a
// listening server. Nothing of this repository's layout may be needed.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { startTestApi, type TestApi } from "./support/api.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import * as contacts from "../server/services/contacts.ts";

const run = promisify(execFile);
/** The bound of one npm or tsc step: seconds when quiet, minutes with two suites at once on 2 cores. */
const STEP_MS = 240_000;
const resolveBin = createRequire(import.meta.url).resolve;
const tsc = resolveBin("typescript/bin/tsc");
const tsx = resolveBin("tsx/cli");
const rootManifest = JSON.parse(readFileSync("package.json", "utf8")) as { devDependencies: Record<string, string> };

let api: TestApi;
let tenant: Tenant;
let server: Server;
let baseUrl: string;
let work: string;
let tarball: string;

/** A partner's program: lists users, looks up a contact, passes a Headers object. */
const program = `import { createPartnerClient, type components } from "@lead-intel/client";

const [baseUrl, apiKey, email] = process.argv.slice(2) as [string, string, string];
const api = createPartnerClient({ baseUrl, apiKey, headers: new Headers({ "x-partner": "package-test" }) });

const users = await api.GET("/v1/users", { params: { query: { email } } });
if (users.error) throw new Error(users.error.error + ": " + users.error.message);
const everyone: components["schemas"]["AccountUserDTO"][] = users.data.data;

const lookup = await api.POST("/v1/email-lookup", { body: { email: "pia.package@package.example", lastName: "Package" } });
const missing = await api.PUT("/v1/datasets/{datasetId}/name", {
  params: { path: { datasetId: "ds_unknown" }, query: { humanName: "x", email } },
});
console.log(JSON.stringify({
  users: everyone.map((user) => [user.email, user.role]),
  lookup: [lookup.response.status, lookup.data?.fullName],
  missing: [missing.response.status, missing.error?.error],
}));
`;

/** Must not compile: proves the package's types reach the partner's program (not `any`). */
const wrongBody = `import { createPartnerClient } from "@lead-intel/client";
const api = createPartnerClient({ baseUrl: "http://127.0.0.1:9", apiKey: "k" });
await api.POST("/v1/email-lookup", { body: { mail: "nobody@example.com" } });
`;

/**
 * The TypeScript of the package's README, as a partner copies it: the first block (the import and
 * `api`) at the top, each further block in its own scope; `orderId` is the reader's own.
 */
function readmeProgram(): string {
  const blocks = [...readFileSync("client/README.md", "utf8").matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
  return ["declare const orderId: string;", blocks[0], ...blocks.slice(1).map((block) => `{\n${block}}`)].join("\n");
}

const tsconfig = {
  compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, outDir: "out", types: ["node"] },
};

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api.services, "Package Co");
  await contacts.upsertMany(api.services, [
    { email: "pia.package@package.example", fullName: "Pia Package", languages: [], experience: [{ title: "CEO", companyName: "Package Co", current: true }] },
  ]);
  server = api.app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  work = mkdtempSync(path.join(tmpdir(), "lead-intel-client-"));
  const packed = await run(process.execPath, [tsx, "scripts/build-client.ts", "--pack", work], { timeout: STEP_MS });
  tarball = packed.stdout.trim().split("\n").at(-1)!;
}, 2 * STEP_MS);
afterAll(async () => {
  if (server) await new Promise((resolve) => server.close(resolve));
  await api?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the packed client", () => {
  it("when packed, then the tarball is named and versioned from the spec and holds only the built package", async () => {
    const { version } = parse(readFileSync("spec/openapi.yaml", "utf8")).info;
    expect(path.basename(tarball)).toBe(`lead-intel-client-${version}.tgz`);
    const { stdout } = await run("tar", ["-tzf", tarball]);
    expect(stdout.trim().split("\n").sort()).toEqual([
      "package/README.md",
      "package/dist/client/index.d.ts",
      "package/dist/client/index.js",
      "package/dist/generated/openapi.d.ts",
      "package/dist/generated/openapi.js",
      "package/package.json",
    ]);
    const manifest = JSON.parse((await run("tar", ["-xzOf", tarball, "package/package.json"])).stdout);
    expect(manifest).toMatchObject({ name: "@lead-intel/client", version, type: "module" });
    expect(Object.keys(manifest.dependencies)).toEqual(["openapi-fetch"]);
    expect(manifest.devDependencies).toBeUndefined();
  });

  it("when installed into a fresh project, then a partner's program and the README's code type-check and the program calls the service", async () => {
    const project = path.join(work, "partner-project");
    await run("mkdir", ["-p", project]);
    writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "partner-project", private: true, type: "module" }));
    await run(
      "npm",
      ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball, `@types/node@${rootManifest.devDependencies["@types/node"]}`],
      { cwd: project, timeout: STEP_MS },
    );
    writeFileSync(path.join(project, "tsconfig.json"), JSON.stringify({ ...tsconfig, files: ["main.ts"] }));
    writeFileSync(path.join(project, "main.ts"), program);
    // tsc reports on stdout: a failure shows it
    await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: project, timeout: STEP_MS }).catch((error: { stdout?: string; message: string }) => {
      throw new Error(`${error.message}\n${error.stdout ?? ""}`);
    });

    const { stdout } = await run(process.execPath, ["out/main.js", baseUrl, tenant.key, tenant.admin.email], { cwd: project, timeout: 30_000 });
    expect(JSON.parse(stdout)).toEqual({
      users: [
        [tenant.admin.email.toLowerCase(), "admin"],
        [tenant.member.email.toLowerCase(), "member"],
      ],
      lookup: [200, "Pia Package"],
      missing: [404, "not_found"],
    });

    writeFileSync(path.join(project, "tsconfig.wrong.json"), JSON.stringify({ ...tsconfig, files: ["wrong.ts"] }));
    writeFileSync(path.join(project, "wrong.ts"), wrongBody);
    const refused = await run(process.execPath, [tsc, "-p", "tsconfig.wrong.json", "--noEmit"], { cwd: project, timeout: STEP_MS }).catch((error: { stdout: string }) => error);
    expect("stdout" in refused ? refused.stdout : "").toMatch(/error TS\d+: .*'mail' does not exist/);

    writeFileSync(path.join(project, "tsconfig.readme.json"), JSON.stringify({ ...tsconfig, files: ["readme.ts"] }));
    writeFileSync(path.join(project, "readme.ts"), readmeProgram());
    const readme = await run(process.execPath, [tsc, "-p", "tsconfig.readme.json", "--noEmit"], { cwd: project, timeout: STEP_MS }).catch((error: { stdout: string }) => error);
    expect("stdout" in readme ? readme.stdout : "", "the README's code type-checks as written").toBe("");
  }, 5 * STEP_MS); // npm install and three compiles
});
