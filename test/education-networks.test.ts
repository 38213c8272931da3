// National research and education networks (issue 29): UNAM, RedIRIS and SANET were typed `isp`
// and their visits dropped. Their ASNs, and those of the other NRENs (GEANT and its members,
// Internet2 and the US regional networks, RNP, AARNet, CANARIE, SINET, KREONET, CERNET, ...), are
// on the curated list as `education`, and universities named in other languages than English
// are education by rule: through the resolver, GET /v1/ip-lookup and the collector.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { classifyNetwork, CURATED_NETWORKS } from "../server/tracking/ipdata/network-class.ts";
import { isEducationInstitutionName } from "../server/tracking/ipdata/public-bodies.ts";
import { sharedResolver } from "../server/tracking/ipdata/resolver.ts";
import { as } from "./support/suite.ts";
import { leadsOfVisitsFrom, startTracking, type TrackingSuite } from "./support/tracking.ts";

/** The networks: an address of each, its AS and the name the data set gives it. */
const NRENS = [
  ["132.248.10.7", 278, "Universidad Nacional Autonoma de Mexico"],
  ["130.206.1.5", 766, "Entidad Publica Empresarial Red.es"],
  ["147.175.1.5", 2607, "Zdruzenie pouzivatelov Slovenskej akademickej datovej siete"],
] as const;

describe("research and education networks (resolver)", () => {
  const resolver = sharedResolver();

  it.each(NRENS)("when %s (AS%i) is resolved, then it is an education network", (ip, asn, name) => {
    expect(resolver.resolve(ip)).toMatchObject({ asn, organizationName: name, networkType: "education" });
  });

  it.each([
    [20965, "GEANT"], [680, "DFN"], [2200, "RENATER"], [1103, "SURF"], [559, "SWITCH"], [137, "GARR"], [786, "Jisc"], [2603, "NORDUnet"],
    [11537, "Internet2"], [6509, "CANARIE"], [1916, "RNP"], [7575, "AARNet"], [2907, "SINET"], [1237, "KREONET"], [4538, "CERNET"],
  ])("when the NREN AS%i (%s) is classified, then it is education from the curated list", (asn) => {
    expect(classifyNetwork({ asn, name: resolver.asns.nameOf(asn)! }, resolver.evidenceOf(asn))).toEqual({ type: "education", source: "curated" });
  });

  it("when an unrelated company bears an NREN's short name, then it does not inherit the NREN's type", () => {
    // SWITCH (Swiss NREN) and "SWITCH, LTD" (data centres); BELNET and "BELNET LTD"; OneNet and "OneNet Limited"
    for (const asn of [23005, 44800, 45215]) {
      expect(classifyNetwork({ asn, name: resolver.asns.nameOf(asn)! }, resolver.evidenceOf(asn)).type, `AS${asn}`).not.toBe("education");
    }
  });

  it("when the curated list is read, then every NREN entry is education and names its ASN once", () => {
    const asns = CURATED_NETWORKS.map((entry) => entry.asn);
    expect(new Set(asns).size).toBe(asns.length);
    expect(CURATED_NETWORKS.filter((entry) => entry.type === "education").length).toBeGreaterThanOrEqual(200);
  });
});

describe("research and education networks (rule)", () => {
  it.each([
    "Universidad de Sonora", "UNIVERSIDADE DE SAO PAULO", "Universiteit van Amsterdam", "Aarhus Universitet", "Univerzita Karlova v Praze",
    "Uniwersytet Warszawski", "Atilim Universitesi", "Universiti Teknologi Malaysia", "Universitatea de Vest din Timisoara",
    "Corporacion Universitaria Minuto de Dios", "Budapesti Muszaki es Gazdasagtudomanyi Egyetem", "Helsingin yliopisto",
    "Fachhochschule Nordwestschweiz", "Hogeschool Utrecht", "Academia de Studii Economice",
  ])("when a university is named %j, then it is education", (name) => {
    expect(classifyNetwork({ asn: 64_600, name })).toEqual({ type: "education", source: "rule" });
  });

  it.each(["Universal Music Group", "Universe Networks Ltd", "Unisys Corporation"])("when %j has no university in its name, then it is not education", (name) => {
    expect(classifyNetwork({ asn: 64_601, name }).type).not.toBe("education");
  });
});

// Issue 38, item 6: research institutes and a school district were typed business.
describe("research institutes and school districts", () => {
  const resolver = sharedResolver();
  const typeOf = (asn: number) => classifyNetwork({ asn, name: resolver.asns.nameOf(asn)! }, resolver.evidenceOf(asn));

  it.each([
    [1754, "DESY"], [5501, "Fraunhofer"], [3275, "CINECA"], [1206, "Pittsburgh Supercomputing Center"], [16, "Lawrence Berkeley National Laboratory"],
    [683, "Argonne National Laboratory"], [42873, "Max Planck Society"], [513, "CERN"], [18128, "RIKEN"], [777, "CEA"], [2597, "CNR"],
    [6262, "CSIRO"], [7497, "Chinese Academy of Sciences (CSTNET)"],
  ])("when the research institute AS%i (%s) is classified, then it is education from the curated list", (asn) => {
    expect(typeOf(asn)).toEqual({ type: "education", source: "curated" });
  });

  it("when the curated list is read, then every research institute added with the government type names its source", () => {
    const research = CURATED_NETWORKS.filter((entry) => entry.type === "education" && entry.source);
    expect(research.length).toBeGreaterThanOrEqual(80);
    expect(research.every((entry) => /\S/.test(entry.source!))).toBe(true);
  });

  it.each([
    "Korea Atomic Energy Research Institute", "National Research Center \"Kurchatov Institute\"", "Southwest Research Institute",
    "Forschungsverbund Berlin e.V.", "National Radio Astronomy Observatory", "Alabama Supercomputer Authority",
    "Instituto Venezolano de Investigaciones Cientificas", "Federal State Budgetary Institution of Science \"Space Research Institute\"",
    "IMEC (Interuniversitair Micro-Electronica Centrum) VZW", "Instituto Federal de Sao Paulo",
  ])("when a research or education body is named %j, then it is education", (name) => {
    expect(isEducationInstitutionName(name)).toBe(true); // the rule, whether or not a curated AS bears the name too
    expect(classifyNetwork({ asn: 64_602, name }).type).toBe("education");
  });

  it.each([
    "Fairfax County Public Schools", "Chicago Public Schools", "Cypress-Fairbanks ISD", "OLATHE PUBLIC SCHOOLS USD 233", "Nassau County BOCES",
    "Allegheny Intermediate Unit", "Scarsdale Schools District", "San Bernardino County Superintendent of Schools",
  ])("when a school district is named %j, then it is education", (name) => {
    expect(classifyNetwork({ asn: 64_603, name })).toEqual({ type: "education", source: "rule" });
  });

  it.each([
    // companies named after research or schools, a research hospital, Mexico's telecom regulator
    "FactSet Research Systems, Inc.", "Nomura Research Institute,Ltd.", "Palo Alto Research Center Incorporated", "Desert Schools Federal Credit Union",
    "University Federal Credit Union", "Limited company with foreign investments ISD", "ISD NETWORKS S.A DE C.V",
    "King Faisal Specialist Hospital and Research Centre", "INSTITUTO FEDERAL DE TELECOMUNICACIONES",
  ])("when %j is no school or research institute, then it is not education", (name) => {
    expect(isEducationInstitutionName(name)).toBe(false);
    expect(classifyNetwork({ asn: 64_604, name }).type).not.toBe("education");
  });
});

describe("lookupIp and collectEvents from research and education networks", () => {
  let t: TrackingSuite;
  beforeAll(async () => {
    t = await startTracking();
  });
  afterAll(() => t?.close());

  it.each(NRENS)("when %s (AS%i) is looked up, then it is an education network", async (ip, asn, name) => {
    const res = await t.api.request().get("/v1/ip-lookup").query({ ip }).set(as(t.tenant.key));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ asn, organizationName: name, networkType: "education", networkTypeSource: "curated" });
  });

  it("when visitors on these networks view a page, then each network becomes a lead", async () => {
    const leads = await leadsOfVisitsFrom(t, "University visitors", NRENS.map(([ip]) => ip));
    expect(leads.map((lead) => lead.organizationName).sort()).toEqual(NRENS.map(([, , name]) => name).sort());
    expect(leads.every((lead) => lead.visitCount === 1)).toBe(true);
  });
});
