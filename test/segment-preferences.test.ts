// Segment Preference: getSegmentPreference, setSegmentPreference, deleteSegmentPreference, and
// the state rules held by the database.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApi } from "./support/api.ts";
import { where } from "./support/leads.ts";
import { type Person, type Tenant, uniqueEmail } from "./support/tenants.ts";
import { as, startWithTenants } from "./support/suite.ts";
import * as segments from "../server/services/segments.ts";
import * as segmentPreferences from "../server/services/segment-preferences.ts";
import * as userDatasets from "../server/services/user-datasets.ts";
import * as datasets from "../server/services/datasets.ts";
import * as users from "../server/services/users.ts";

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => ({ api, tenant, other } = await startWithTenants()));
afterAll(() => api?.close());

let counter = 0;
function newSegment(t: Tenant, datasetId = t.datasets[0]): Promise<number> {
  return segments.create(api.services, t.accountId, t.admin.email, { datasetId, name: `Segment ${++counter}`, filters: where("country", "eq", "DE") });
}

async function newMember(t: Tenant, datasetIds: string[]): Promise<Person> {
  const email = uniqueEmail("user");
  return { id: await users.addMember(api.services, t.accountId, t.admin.email, { email, name: "User", role: "member", datasetIds }), email };
}

/** Every default under the dataset as [userId, segmentId], by user. */
async function defaults(datasetId: string): Promise<[number, number][]> {
  const rows = await api.db.prisma.segmentPreference.findMany({ where: { datasetId }, orderBy: { userId: "asc" } });
  return rows.map((r) => [Number(r.userId), r.segmentId]);
}

const setDefaults = (t: Tenant, segmentId: number, datasetId: string, userIds: number[]) =>
  segmentPreferences.set(api.services, t.accountId, t.admin.email, { segmentId, datasetId, userIds });

const byUser = (pairs: [number, number][]) => [...pairs].sort((a, b) => a[0] - b[0]);

/** A dataset of its own, reached by the given new members, so that tests do not share defaults. */
async function freshDataset(t: Tenant, members: number): Promise<{ datasetId: string; users: Person[] }> {
  const datasetId = await datasets.create(api.services, t.accountId, t.admin.email, { name: `Dataset ${++counter} ${Math.random()}` });
  const users: Person[] = [];
  for (let i = 0; i < members; i++) users.push(await newMember(t, [datasetId]));
  return { datasetId, users };
}

describe("setSegmentPreference", () => {
  const put = (t: Tenant, body: object, email = t.admin.email) =>
    api.request().put(`/v1/segment/preference?email=${encodeURIComponent(email)}`).set(as(t.key)).send(body);

  it("when users are listed, then they get the segment (added or updated) and every other user under the dataset loses their default", async () => {
    const { datasetId, users } = await freshDataset(tenant, 5);
    const [a, b, c, , e] = users.map((u) => u.id) as [number, number, number, number, number];
    const s1 = await newSegment(tenant, datasetId);
    const s2 = await newSegment(tenant, datasetId);
    const s3 = await newSegment(tenant, datasetId);
    await setDefaults(tenant, s1, datasetId, [a, b]); // the fourth user never has a default
    await api.db.prisma.segmentPreference.create({ data: { accountId: tenant.accountId, datasetId, userId: BigInt(c), segmentId: s2 } });
    // a's default under another dataset is not "under that dataset": it stays
    const elsewhere = await newSegment(tenant, tenant.datasets[1]);
    await userDatasets.grant(api.services, tenant.accountId, a, tenant.datasets[1]);
    await setDefaults(tenant, elsewhere, tenant.datasets[1], [a]);

    const res = await put(tenant, { segmentId: s3, datasetId, userIds: [a, e] });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect(await defaults(datasetId)).toEqual(byUser([[a, s3], [e, s3]]));
    expect(await defaults(tenant.datasets[1])).toEqual([[a, elsewhere]]);

    const got = await api.request().get("/v1/segment/preference").query({ email: tenant.admin.email, segmentId: s1, datasetId }).set(as(tenant.key));
    expect(got.body).toEqual({ data: [] });
  });

  it("when the same request is sent twice, then the second changes nothing", async () => {
    const { datasetId, users } = await freshDataset(tenant, 2);
    const s = await newSegment(tenant, datasetId);
    const body = { segmentId: s, datasetId, userIds: users.map((u) => u.id) };
    expect((await put(tenant, body)).status).toBe(204);
    const first = await defaults(datasetId);
    expect((await put(tenant, body)).status).toBe(204);
    expect(await defaults(datasetId)).toEqual(first);
    expect(first).toHaveLength(2);
  });

  it("when userIds is empty, then every default under the dataset is removed and no other dataset's", async () => {
    const { datasetId, users } = await freshDataset(tenant, 3);
    const s = await newSegment(tenant, datasetId);
    await setDefaults(tenant, s, datasetId, users.map((u) => u.id));
    const otherDataset = await freshDataset(tenant, 1);
    const kept = await newSegment(tenant, otherDataset.datasetId);
    await setDefaults(tenant, kept, otherDataset.datasetId, [otherDataset.users[0]!.id]);

    const res = await put(tenant, { segmentId: s, datasetId, userIds: [] });
    expect(res.status).toBe(204);
    expect(await defaults(datasetId)).toEqual([]);
    expect(await defaults(otherDataset.datasetId)).toEqual([[otherDataset.users[0]!.id, kept]]);
  });

  it("when a member who reaches the dataset sets the defaults, then 204", async () => {
    const s = await newSegment(tenant, tenant.datasets[0]);
    const res = await put(tenant, { segmentId: s, datasetId: tenant.datasets[0], userIds: [tenant.member.id] }, tenant.member.email);
    expect(res.status).toBe(204);
    expect(await defaults(tenant.datasets[0])).toEqual([[tenant.member.id, s]]);
  });

  describe("when the request is refused, nothing changes", () => {
    let datasetId: string;
    let users: Person[];
    let segment: number;
    let before: [number, number][];
    beforeAll(async () => {
      ({ datasetId, users } = await freshDataset(tenant, 2));
      segment = await newSegment(tenant, datasetId);
      await setDefaults(tenant, segment, datasetId, [users[0]!.id]);
      before = await defaults(datasetId);
    });
    const expectUnchanged = async () => expect(await defaults(datasetId)).toEqual(before);

    it("when the segment belongs to another dataset of the account, then 404", async () => {
      const foreign = await newSegment(tenant, tenant.datasets[0]);
      const res = await put(tenant, { segmentId: foreign, datasetId, userIds: [users[1]!.id] });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
      await expectUnchanged();
    });

    it("when the segment is another account's, then 404", async () => {
      const foreign = await newSegment(other);
      const res = await put(tenant, { segmentId: foreign, datasetId, userIds: [users[1]!.id] });
      expect(res.status).toBe(404);
      await expectUnchanged();
    });

    it("when the dataset is another account's, then 404 and that account's defaults stay", async () => {
      const foreign = await newSegment(other, other.datasets[0]);
      await setDefaults(other, foreign, other.datasets[0], [other.admin.id]);
      const res = await put(tenant, { segmentId: foreign, datasetId: other.datasets[0], userIds: [] });
      expect(res.status).toBe(404);
      expect(await defaults(other.datasets[0])).toEqual([[other.admin.id, foreign]]);
    });

    it("when a listed user is another account's, then 404", async () => {
      const res = await put(tenant, { segmentId: segment, datasetId, userIds: [users[1]!.id, other.member.id] });
      expect(res.status).toBe(404);
      await expectUnchanged();
    });

    it("when a listed user cannot reach the dataset, then 409", async () => {
      const outsider = await newMember(tenant, []);
      const res = await put(tenant, { segmentId: segment, datasetId, userIds: [users[1]!.id, outsider.id] });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: "conflict", message: expect.any(String) });
      await expectUnchanged();
    });

    it("when the acting member cannot reach the dataset, then 403", async () => {
      const res = await put(tenant, { segmentId: segment, datasetId, userIds: [] }, tenant.member.email);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: "forbidden", message: expect.any(String) });
      await expectUnchanged();
    });

    it("when the acting e-mail is not a member of the account, then 403", async () => {
      const res = await put(tenant, { segmentId: segment, datasetId, userIds: [] }, other.admin.email);
      expect(res.status).toBe(403);
      await expectUnchanged();
    });

    it.each([
      ["userIds has duplicates", () => ({ segmentId: segment, datasetId, userIds: [users[1]!.id, users[1]!.id] }), "userIds"],
      ["userIds is missing", () => ({ segmentId: segment, datasetId }), "userIds"],
      ["segmentId is not an integer", () => ({ segmentId: "seven", datasetId, userIds: [] }), "segmentId"],
    ])("when %s, then 400 naming the field", async (_case, body, field) => {
      const res = await put(tenant, body());
      expect(res.status).toBe(400);
      expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field }));
      await expectUnchanged();
    });
  });

  it("when many requests for one dataset run at once, then each succeeds, nobody has two defaults, and the outcome is one request's list", async () => {
    const { datasetId, users } = await freshDataset(tenant, 6);
    const segments = [await newSegment(tenant, datasetId), await newSegment(tenant, datasetId), await newSegment(tenant, datasetId)];
    const ids = users.map((u) => u.id);
    // 12 requests, each a different segment and a different, overlapping list of users
    const bodies = Array.from({ length: 12 }, (_, i) => ({
      segmentId: segments[i % 3]!,
      datasetId,
      userIds: ids.filter((_, j) => (i + j) % 3 !== 0),
    }));
    const responses = await Promise.all(bodies.map((body) => put(tenant, body)));
    expect(responses.map((r) => r.status)).toEqual(bodies.map(() => 204));

    const outcome = await defaults(datasetId);
    expect(new Set(outcome.map(([user]) => user)).size).toBe(outcome.length);
    const expected = bodies.map((b) => JSON.stringify(byUser(b.userIds.map((u): [number, number] => [u, b.segmentId]))));
    expect(expected).toContain(JSON.stringify(outcome));
  });

  it("when a second default for the same user and dataset is written directly, then the database refuses it", async () => {
    const { datasetId, users } = await freshDataset(tenant, 1);
    const [first, second] = [await newSegment(tenant, datasetId), await newSegment(tenant, datasetId)];
    await setDefaults(tenant, first, datasetId, [users[0]!.id]);
    const write = api.db.prisma.segmentPreference.create({
      data: { accountId: tenant.accountId, datasetId, userId: BigInt(users[0]!.id), segmentId: second },
    });
    await expect(write).rejects.toMatchObject({ code: "P2002" });
    expect(await defaults(datasetId)).toEqual([[users[0]!.id, first]]);
  });

  it("when a default naming a segment of another dataset is written directly, then the database refuses it", async () => {
    const { datasetId, users } = await freshDataset(tenant, 1);
    const foreign = await newSegment(tenant, tenant.datasets[0]);
    const write = api.db.prisma.segmentPreference.create({
      data: { accountId: tenant.accountId, datasetId, userId: BigInt(users[0]!.id), segmentId: foreign },
    });
    await expect(write).rejects.toThrow();
    expect(await defaults(datasetId)).toEqual([]);
  });

  it("when the user has segments of their own under the dataset, then they can still have one default and many segments", async () => {
    const { datasetId, users } = await freshDataset(tenant, 1);
    const owner = users[0]!;
    const own = [];
    for (let i = 0; i < 3; i++) {
      own.push(await segments.create(api.services, tenant.accountId, owner.email, { datasetId, name: `Own ${i} ${++counter}`, filters: where("city", "exists", true) }));
    }
    expect((await put(tenant, { segmentId: own[1], datasetId, userIds: [owner.id] })).status).toBe(204);
    expect(await api.db.prisma.segment.count({ where: { datasetId, userId: BigInt(owner.id) } })).toBe(3);
    expect(await defaults(datasetId)).toEqual([[owner.id, own[1]]]);
  });
});

describe("getSegmentPreference", () => {
  let datasetId: string;
  let users: Person[];
  let segment: number;
  let otherSegment: number;
  beforeAll(async () => {
    ({ datasetId, users } = await freshDataset(tenant, 3));
    segment = await newSegment(tenant, datasetId);
    otherSegment = await newSegment(tenant, datasetId);
    await setDefaults(tenant, segment, datasetId, [users[2]!.id, users[0]!.id]);
    // users[1] gets a default of another segment: written directly, since a PUT would reset the others
    await api.db.prisma.segmentPreference.create({ data: { accountId: tenant.accountId, datasetId, userId: BigInt(users[1]!.id), segmentId: otherSegment } });
  });
  const get = (query: Record<string, string | number>, t = tenant) =>
    api.request().get("/v1/segment/preference").query({ email: t.admin.email, segmentId: segment, datasetId, ...query }).set(as(t.key));

  it("when users have the segment as default, then 200 with exactly their ids, ascending", async () => {
    const res = await get({});
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [users[0]!.id, users[2]!.id].sort((a, b) => a - b) });
  });

  it("when nobody has the segment as default, then 200 with an empty list", async () => {
    const unused = await newSegment(tenant, datasetId);
    const res = await get({ segmentId: unused });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [] });
  });

  it("when a member who reaches the dataset asks, then 200", async () => {
    const res = await get({ email: users[1]!.email });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(2);
  });

  it("when a member who cannot reach the dataset asks, then 403", async () => {
    const res = await get({ email: tenant.member.email });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "forbidden", message: expect.any(String) });
  });

  it("when the segment is not of the dataset, then 404 (also for a member who cannot reach the dataset)", async () => {
    const foreign = await newSegment(tenant, tenant.datasets[0]);
    expect((await get({ segmentId: foreign })).status).toBe(404);
    const res = await get({ segmentId: foreign, email: tenant.member.email });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
  });

  it("when the dataset and segment are another account's, then 404", async () => {
    const foreign = await newSegment(other, other.datasets[0]);
    const res = await get({ segmentId: foreign, datasetId: other.datasets[0] });
    expect(res.status).toBe(404);
  });

  it("when the acting e-mail is not a member of the account, then 403", async () => {
    const res = await get({ email: other.admin.email });
    expect(res.status).toBe(403);
  });

  it("when segmentId is missing, then 400 naming it", async () => {
    const res = await api.request().get("/v1/segment/preference").query({ email: tenant.admin.email, datasetId }).set(as(tenant.key));
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "segmentId" }));
  });
});

describe("deleteSegmentPreference", () => {
  const remove = (t: Tenant, email: string, datasetId: string) =>
    api.request().delete(`/v1/segment/preference?email=${encodeURIComponent(email)}&datasetId=${datasetId}`).set(as(t.key));

  it("when the user has a default under the dataset, then 204 and only that one is removed", async () => {
    const { datasetId, users } = await freshDataset(tenant, 2);
    const s = await newSegment(tenant, datasetId);
    await setDefaults(tenant, s, datasetId, users.map((u) => u.id));
    const second = await freshDataset(tenant, 0);
    await userDatasets.grant(api.services, tenant.accountId, users[0]!.id, second.datasetId);
    const s2 = await newSegment(tenant, second.datasetId);
    await setDefaults(tenant, s2, second.datasetId, [users[0]!.id]);

    const res = await remove(tenant, users[0]!.email, datasetId);
    expect(res.status).toBe(204);
    expect(await defaults(datasetId)).toEqual([[users[1]!.id, s]]);
    expect(await defaults(second.datasetId)).toEqual([[users[0]!.id, s2]]);
  });

  it("when the e-mail carries a raw @ and another letter case, then 204", async () => {
    const { datasetId, users } = await freshDataset(tenant, 1);
    const s = await newSegment(tenant, datasetId);
    await setDefaults(tenant, s, datasetId, [users[0]!.id]);
    const res = await api
      .request()
      .delete(`/v1/segment/preference?email=${users[0]!.email.toUpperCase()}&datasetId=${datasetId}`)
      .set(as(tenant.key));
    expect(res.status).toBe(204);
    expect(await defaults(datasetId)).toEqual([]);
  });

  it("when the user has no default under the dataset, then 404", async () => {
    const { datasetId, users } = await freshDataset(tenant, 1);
    const res = await remove(tenant, users[0]!.email, datasetId);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
  });

  it("when the e-mail is not a member of the account, then 404 and nobody's default changes", async () => {
    const s = await newSegment(other, other.datasets[0]);
    await setDefaults(other, s, other.datasets[0], [other.admin.id]);
    const res = await remove(tenant, other.admin.email, tenant.datasets[0]);
    expect(res.status).toBe(404);
    expect(await defaults(other.datasets[0])).toEqual([[other.admin.id, s]]);
  });

  it("when the dataset is another account's, then 404 and its defaults stay", async () => {
    const s = await newSegment(other, other.datasets[1]);
    await setDefaults(other, s, other.datasets[1], [other.admin.id]);
    const res = await remove(tenant, tenant.admin.email, other.datasets[1]);
    expect(res.status).toBe(404);
    expect(await defaults(other.datasets[1])).toEqual([[other.admin.id, s]]);
  });

  it("when the e-mail is not an e-mail address, then 400 naming it", async () => {
    const res = await remove(tenant, "not-an-address", tenant.datasets[0]);
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "email" }));
  });
});

// The races below are decided by the database: each round sends both requests at once. On
// PostgreSQL they run on separate connections and interleave; the in-memory PGlite has one
// session (the adapter runs one transaction at a time), so there the rounds only check that
// every outcome is an allowed one.
describe("setSegmentPreference races", () => {
  const ROUNDS = 40;
  const put = (t: Tenant, body: object) =>
    api.request().put(`/v1/segment/preference?email=${encodeURIComponent(t.admin.email)}`).set(as(t.key)).send(body);

  it("when a member's access is removed while a default is set for them, then no default is left that the member cannot reach", async () => {
    const { datasetId } = await freshDataset(tenant, 0);
    const segmentId = await newSegment(tenant, datasetId);
    const statuses = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const user = await newMember(tenant, [datasetId]);
      // not a wait for an outcome: the removal starts 0 to 18 ms later each round, to land in
      // different places of the set (both outcomes are allowed)
      const later = (round % 10) * 2;
      const [revoked, set] = await Promise.all([
        new Promise((r) => setTimeout(r, later)).then(() =>
          api.request().delete("/v1/user-datasets").set(as(tenant.key)).send({ userId: user.id, datasetId })),
        put(tenant, { segmentId, datasetId, userIds: [user.id] }),
      ]);
      statuses.add(`${revoked.status}/${set.status}`);
      expect(revoked.status).toBe(204);
      // set first (then removed with the access), or refused: the user no longer reaches the dataset
      expect([204, 409]).toContain(set.status);
      const left = await api.db.prisma.segmentPreference.count({ where: { datasetId, userId: BigInt(user.id) } });
      expect({ round, left }).toEqual({ round, left: 0 });
    }
    expect([...statuses].every((s) => ["204/204", "204/409"].includes(s))).toBe(true);
  });

  it("when a segment is deleted while it is set as a default, then the set answers 204 or 404 and no default points at it", async () => {
    const { datasetId, users } = await freshDataset(tenant, 2);
    for (let round = 0; round < ROUNDS; round++) {
      const segmentId = await newSegment(tenant, datasetId);
      // not a wait for an outcome: the delete starts 0 to 18 ms later each round, to land between
      // the set's checks and its writes (both outcomes are allowed)
      const later = (round % 10) * 2;
      const [deleted, set] = await Promise.all([
        new Promise((r) => setTimeout(r, later)).then(() => api.request().delete(`/v1/segments/${segmentId}`).set(as(tenant.key))),
        put(tenant, { segmentId, datasetId, userIds: users.map((u) => u.id) }),
      ]);
      expect(deleted.status).toBe(204);
      expect({ round, status: [204, 404].includes(set.status) ? "204 or 404" : set.status }).toEqual({ round, status: "204 or 404" });
      if (set.status === 404) expect(set.body).toMatchObject({ error: "not_found" });
      expect(await api.db.prisma.segmentPreference.count({ where: { segmentId } })).toBe(0);
    }
  });
});
