// Government networks (issue 38, item 6): every one of 13 government networks was typed business,
// and there was no government type for the public-sector visitors B2B sellers ask for. Now a
// `government` type, from the curated lists (ministries, parliaments, armed forces, national,
// regional and municipal governments of the largest economies, each with its source) and from a
// rule for names that plainly say government, which keeps companies out. Government networks are
// their own organisation's, like business and education ones: their visits become its lead.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { classifyNetwork, CURATED_NETWORKS, LEAD_NETWORKS } from "../server/tracking/ipdata/network-class.ts";
import { isCompany, isGovernmentName } from "../server/tracking/ipdata/public-bodies.ts";
import { sharedResolver } from "../server/tracking/ipdata/resolver.ts";
import { as } from "./support/suite.ts";
import { leadsOfVisitsFrom, startTracking, type TrackingSuite } from "./support/tracking.ts";

/** Addresses of government networks and what the data set names them. */
const GOVERNMENTS = [
  ["6.1.0.7", 749, "United States Department of Defense (DoD)", "curated"],
  ["25.0.0.7", 203665, "UK Ministry of Defence", "curated"],
  ["59.192.0.7", 37937, "China eGovNet Information Center", "curated"],
  ["128.102.0.7", 270, "National Aeronautics and Space Administration", "curated"],
  ["140.241.0.7", 27370, "City of Boston", "rule"],
] as const;

describe("government networks (curated)", () => {
  const resolver = sharedResolver();
  const typeOf = (asn: number) => classifyNetwork({ asn, name: resolver.asns.nameOf(asn)! }, resolver.evidenceOf(asn));

  it.each(GOVERNMENTS)("when %s (AS%i) is resolved, then it is a government network", (ip, asn, name, source) => {
    expect(resolver.resolve(ip)).toMatchObject({ asn, organizationName: name, networkType: "government", networkTypeSource: source });
  });

  it.each([
    [1540, "US Army"], [2749, "US Navy"], [409, "US Air Force"], [3527, "NIH"], [3477, "NOAA"], [3766, "Shared Services Canada"],
    [3633, "Province of British Columbia"], [42848, "European Commission"], [49234, "German Federal Ministry of the Interior"],
    [60855, "French DINUM"], [4758, "India's National Informatics Centre"], [17841, "Korea's National Information Resources Service"],
    [10954, "SERPRO"], [8103, "State of Florida, whose name says telecommunications"], [6559, "State of North Carolina"],
  ])("when AS%i (%s) is classified, then it is government from the curated list", (asn) => {
    expect(typeOf(asn)).toEqual({ type: "government", source: "curated" });
  });

  it("when the curated list is read, then every government entry names its source and the list spans hundreds of ASNs", () => {
    const governments = CURATED_NETWORKS.filter((entry) => entry.type === "government");
    expect(governments.length).toBeGreaterThanOrEqual(300);
    expect(governments.filter((entry) => !entry.source)).toEqual([]);
  });

  it("when a city's own broadband network or a government's satellite carrier is classified, then it is an operator, not the city", () => {
    // Loveland's Pulse, Fort Collins' Connexion, Tacoma's Click! and Inmarsat Government sell access
    for (const asn of [394838, 397142, 14677, 31753]) expect(typeOf(asn).type, `AS${asn}`).toBe("isp");
  });
});

describe("government networks (rule)", () => {
  it.each([
    "Ministry of Finance of Ukraine", "Bundesministerium fuer europaeische und internationale Angelegenheiten", "Ministerie van Buitenlandse Zaken",
    "MINISTERIO DE HACIENDA Y FINANZAS", "Ministerstvo financi", "Ministeries van de Vlaamse Gemeenschap", "Government of Jersey",
    "Gobierno de Navarra", "Seoul Metropolitan Government", "California Department of Technology", "Department for Work and Pensions",
    "U.S. Dept. of Commerce - ITA", "State of Wyoming Department A&I", "Commonwealth of Massachusetts", "Province of British Columbia",
    "City of Boston", "The City of New York", "County of Riverside", "Town of Concord MA", "Warrington Borough Council", "Gemeente Amsterdam",
    "Ayuntamiento de Madrid", "Comune di Milano", "Landratsamt Muenchen", "Landeshauptstadt Muenchen, it@M", "Stadt Koeln", "Oslo kommune",
    "Goteborgs Stad", "Prefeitura Municipal de Bauru", "Municipalidad de Rosario", "Istanbul Metropolitan Municipality",
    "The Corporation of the City of Guelph", "City of Vallejo, A municipal corporation", "Federal Aviation Administration",
    "Federal Service for Transport Supervision (Rostransnadzor)", "Bundesamt fur Eich und Vermessungswesen", "US Senate",
    "THE HOUSE OF COMMONS", "New York State Assembly", "Hellenic Parliament", "SUPERIOR TRIBUNAL DE JUSTICA", "Vermont Judiciary",
    "Navy Network Information Center (NNIC)", "Swedish Armed Forces", "Estonian Defence Forces", "Bundeswehr", "Royal Thai Police",
    "Jefferson Parish Sheriff's Office", "Presidenza del Consiglio dei Ministri", "Executive Office Of The President",
  ])("when the name %j says government, then the network is government", (name) => {
    expect(isGovernmentName(name)).toBe(true); // the rule, whether or not a curated AS bears the name too
    expect(classifyNetwork({ asn: 64_700, name }).type).toBe("government");
  });

  it.each([
    // namesakes and financial companies
    "Navy Federal Credit Union", "Pentagon Federal Credit Union", "Police Bank Ltd", "Government Employees Insurance Company",
    "Government Savings Bank", "Federal Home Loan Bank of Des Moines", "Federal Express Corporation Hong Kong Branch",
    "Federal Signal Corporation", "Accenture Federal Services LLC", "The Salvation Army", "City of Hope Medical Center",
    "The Ministry of Compute Inc.", "State Street Corporation", "Government Technology Services Inc.", "Airbus Defence and Space SAS",
    "OJSC The Russian Armed Forces Broadcasting Company ZVEZDA", "Military commercial join stock bank", "Stadtwerke Muenchen GmbH",
    "Bredband i Kristianstad AB", "N.V. Lelystad Airport", "Kommunalkredit Austria AG",
    // municipal utilities, which often sell broadband
    "Electric Plant Board of the City of Glasgow, Kentucky", "City of Westfield (Gas & Electric Light Department)",
    "Elektrizitaets- und Wasserwerk der Stadt Buchs SG", "Utilities Board of the City of Sylacauga",
  ])("when the company %j bears government words, then the network is not government", (name) => {
    expect(isGovernmentName(name)).toBe(false);
    expect(classifyNetwork({ asn: 64_701, name }).type).not.toBe("government");
  });

  it("when a government's name also has an operator's keyword, then the keyword decides (a state's telecom network)", () => {
    expect(classifyNetwork({ asn: 64_702, name: "Example State Department of Management Services - Division of Telecommunications" }).type).toBe("isp");
    expect(classifyNetwork({ asn: 64_702, name: "Example Ministry of Education" }).type).toBe("government");
  });

  it("when a name has a company's legal form at its end or anywhere, then it is a company's; an abbreviation inside is not", () => {
    expect(isCompany("Example Holding S.A.")).toBe(true);
    expect(isCompany("Example Werke GmbH & Co. KG")).toBe(true);
    expect(isCompany("SA Government")).toBe(false); // South Australia's
    expect(isCompany("COA-AS-01 - CITY OF ALLEN")).toBe(false); // a registry's handle
    expect(isGovernmentName("SA Government")).toBe(true);
  });
});

describe("government networks' visits", () => {
  let t: TrackingSuite;
  beforeAll(async () => {
    t = await startTracking();
  });
  afterAll(() => t?.close());

  it.each(GOVERNMENTS)("when %s (AS%i) is looked up, then it is a government network", async (ip, asn, name) => {
    const res = await t.api.request().get("/v1/ip-lookup").query({ ip }).set(as(t.tenant.key));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ asn, organizationName: name, networkType: "government" });
  });

  it("when visitors on government networks view a page, then each network becomes its organisation's lead, as a business's would", async () => {
    expect(LEAD_NETWORKS.has("government")).toBe(true);
    const leads = await leadsOfVisitsFrom(t, "Public sector visitors", GOVERNMENTS.map(([ip]) => ip));
    expect(leads.map((lead) => lead.organizationName).sort()).toEqual(GOVERNMENTS.map(([, , name]) => name).sort());
    expect(leads.every((lead) => lead.visitCount === 1)).toBe(true);
  });
});

describe("Resolver's classification per AS", () => {
  it("when an AS was resolved before an operator's override was set, then the override decides the next resolution", () => {
    const resolver = sharedResolver(); // keeps each AS's type from its first resolution
    expect(resolver.resolve("140.241.0.7", { geo: false })).toMatchObject({ networkType: "government", networkTypeSource: "rule" });
    const overrides = new Map([[27370, "isp" as const]]);
    expect(resolver.resolve("140.241.0.8", { geo: false, overrides })).toMatchObject({ networkType: "isp", networkTypeSource: "override" });
    expect(resolver.resolve("140.241.0.9", { geo: false })).toMatchObject({ networkType: "government", networkTypeSource: "rule" });
  });
});
