// Names that plainly say a public body: the government rule and the education institutions' rule
// of network-class.ts (steps 4 and 5 there). Whole words, case-insensitive, in the languages of
// the AS names. A company whose name borrows such words ("Navy Federal Credit Union", "Police Bank
// Ltd", "Government Employees Insurance Company", "Government Technology Services Inc.", "City of
// Hope Medical Center", "The Salvation Army") is kept out by NOT_GOVERNMENT and by its legal form
// (isCompany); a municipal utility selling broadband ("Electric Plant Board of the City of
// Glasgow") by its utility words; and a name with an operator's keyword is left to the operators'
// rules by network-class.ts ("... Department of Management Services - Division of
// Telecommunications": a state's own network is government only when curated, as Florida's is).

/** Government words, by kind of body. */
const GOVERNMENT_WORDS = [
  // national governments and ministries
  String.raw`ministry of|ministries of|minist[eè]r\w*|\w*ministerium|\w*ministeriet|ministarstv\w*|miniszt[eé]rium|bakanl[ıi][gğ][ıi]|kementerian`,
  String.raw`government|gouvernement|gobierno|governo|guvernul|\w*regierung|regeringskansliet|pemerintah|kerajaan negeri|korm[aá]ny\w*|people'?s (government|committee)|state council|presiden(cy|cia|za)|presid[eê]ncia|office of the president|executive office|prime minister|consiglio dei ministri|cabinet office|royal court|\w*kanzleramt|staatskanzlei`,
  // federal bodies ("Federal Aviation Administration", "Federal Service for ..."), not "Federal Express"
  String.raw`federal(\s+\w+){0,3}?\s+(ministry|office|agency|bureau|service|board|government|reserve|court|authority|department|administration|commission|police|guard|treasury)|bundes(amt|anstalt|agentur|institut|verwaltungsamt|tag|rat|wehr|polizei|kriminalamt|netzagentur)\w*`,
  // departments of a state or nation ("California Department of Technology", "Department for Work and Pensions")
  String.raw`department (of|for)|dept\.? of`,
  // states, regions and provinces
  String.raw`state of|commonwealth of|state government|province of|provincia de|provincial government|prefectural|prefecture|county of|county government|county commission|parish of|regione|provincia (di|autonoma)|provincie|generalitat|diputaci[oó]n|xunta|conseil (d[eé]partemental|r[eé]gional|g[eé]n[eé]ral)|freistaat|kanton|canton d[eu]|landesamt|landesverwaltung|landsting\w*|gobernaci[oó]n|secretar[ií]a|kabupaten|valili[gğ]i`,
  // cities, towns and municipalities
  String.raw`city of|city and county|town of|village of|township of|borough of|city council|county council|borough council|district council|regional council|metropolitan government|municipality|municipalit[eé]|municipio|municipalidad|gemeente|ayuntamiento|ajuntament|concello|comune di|citt[aà] (di|metropolitana)|mairie|ville de|communaut[eé] (urbaine|d.agglom[eé]ration|de communes)|\w*kommune?|stad|\w*kaupunki|stadt|\w*hauptstadt|hansestadt|stadtverwaltung|magistrat|landratsamt|landkreis|kreisverwaltung|bezirksamt|senatsverwaltung|gmina|urz[aą]d|starostwo|[uú]rad|[oö]nkorm[aá]nyzat|prim[aă]ria|consiliul|belediye\w*|prefeitura|c[aâ]mara municipal|alcald[ií]a|intendencia`,
  // parliaments, courts and prosecutors
  String.raw`parliament\w*|bundestag|house of (commons|lords|representatives)|senate|senado|riksdag\w*|storting\w*|folketing\w*|eduskunta|sejm|knesset|duma|legislat\w+|general assembly|national assembly|state assembly|assembl[eé]e nationale|assembleia|library of congress|tribunal|supreme court|court of (justice|appeals?|audit)|judiciary|poder judicial|justi[cç]a federal|prosecutor\w*|fiscal[ií]a|procuradur[ií]a|procuradoria|contralor[ií]a|controladoria`,
  // armed forces and police
  String.raw`army|navy|air force|marine corps|armed forces|defen[cs]e forces?|national guard|coast guard|bundeswehr|military|arm[eé]e|ej[eé]rcito|ex[eé]rcito|fuerza a[eé]rea|for[cç]a a[eé]rea|marinha|armada de|forsvaret|f[oö]rsvarsmakten|puolustusvoimat|police|polizei|polic[ií]a|gendarmerie|carabinieri|guardia civil|sheriff'?s? office`,
];
export const GOVERNMENT = new RegExp(String.raw`\b(${GOVERNMENT_WORDS.join("|")})\b`, "i");

/** Names with government words that are not a government's own network: namesakes, financial
 * companies, hospitals, and municipal utilities (many sell broadband). */
export const NOT_GOVERNMENT =
  /\b(credit union|bank(ing)?|banco|banque|insurance|assurance|seguros|savings|salvation army|old navy|city of hope|hospitals?|medical cent(er|re)|clinics?|utilit(y|ies)|electric (plant|light|power|board|system|department|cooperative)|department of electricity|elektrizit\w*|wasserwerk\w*|gas|light plant|power board|public power|energy authority|lightband)\b/i;

/** Companies' legal forms: long ones anywhere in the name, short ones ("SA", "AG", "Co.") only at
 * its end, where they cannot be an abbreviation ("SA Government" is South Australia's). Dots are
 * removed first: "S.A." is "SA". */
const LEGAL_FORM = /\b(inc|incorporated|llc|ltd|limited|gmbh|corp|corporation|company|plc|pty|pvt|ltda|jsc|pjsc|ojsc|cjsc|ooo|oao|zao|tbk|bhd|sdn|gie|eireli|kft|zrt|llp|sp z oo|sro|doo|spa|srl|sarl|sas|a\/s)\b|\b(sa|ag|ab|as|oy|oyj|nv|bv|sl|ad|co|kk|lp|eood)\s*$/i;
/** Municipalities whose legal name is a corporation's ("The Corporation of the City of Guelph",
 * "City of Vallejo, A municipal corporation", "Incorporated County of Los Alamos"). */
const MUNICIPAL_CORPORATION = /\b(corporation of the|municipal corporation|incorporated (county|city|town|village))\b/gi;

/** A company's name by its legal form. */
export function isCompany(name: string): boolean {
  return LEGAL_FORM.test(name.replace(MUNICIPAL_CORPORATION, " ").replaceAll(".", "").replace(/[,()]+/g, " "));
}

/** A government's own network by its name: government words, no company's legal form, none of
 * NOT_GOVERNMENT. (The caller reads operators' keywords before this.) */
export function isGovernmentName(name: string): boolean {
  return GOVERNMENT.test(name) && !NOT_GOVERNMENT.test(name) && !isCompany(name);
}

/** Schools, school districts and universities ("Fairfax County Public Schools", "Nassau County
 * BOCES", "CINECA Consorzio Interuniversitario", Brazil's Institutos Federais but not Mexico's
 * telecom regulator and electoral institute): "university" in the languages of the AS names
 * (Universidad, Universiteit, Univerzita, Uniwersytet, Universitas, ...). */
export const SCHOOL =
  /\b(uni[vw]er[sz][iy][td]\w*|inter-?uni[vw]er[sz][iy][td]\w*|college|schools?|school district|academy|academi[ac]|polytechnic|\w*hochschule|egyetem|yliopisto|hogeschool|institute of technology|military institute|instituto federal(?! (de telecomunicaciones|electoral))|boces|intermediate unit|k-?12)\b/i;
/** A school district's abbreviation at the end of its name ("Killeen ISD", "Olathe USD 233"). */
const DISTRICT_ABBREVIATION = /\b(isd|usd \d+)\s*$/i;

/** Research institutes ("Lawrence Berkeley National Laboratory", "Korea Atomic Energy Research
 * Institute", "Fraunhofer-Gesellschaft zur Foerderung der angewandten Forschung", "San Diego
 * Supercomputer Center"), when the name has no company's legal form: companies are named
 * "... Research" too ("FactSet Research Systems, Inc.", "Nomura Research Institute, Ltd."). */
export const RESEARCH =
  /\b(national laborator(y|ies)|research (institutes?|institution|cent(er|re)s?|organi[sz]ation|council|foundation)|scientific.research|(recherche|investigaci[oó]n(es)?) cient\w*|\w*forschung\w*|observator(y|ies)|supercomput\w*|max-planck|helmholtz\w*)\b/i;

/** An education or research institution by its name: not a credit union named after a school,
 * nor a research hospital. */
export function isEducationInstitutionName(name: string): boolean {
  if (SCHOOL.test(name)) return !/\bcredit union\b/i.test(name);
  return (DISTRICT_ABBREVIATION.test(name) || (RESEARCH.test(name) && !/\bhospital/i.test(name))) && !isCompany(name);
}
