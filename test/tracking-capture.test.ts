// What the collector keeps of what a browser sends: secret-named fields in six languages and card
// numbers with any separators are dropped; an X-Forwarded-For entry with a port is still an address.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isSecretFieldName, keptFields, looksLikeCardNumber } from "../server/tracking/collect/form-fields.ts";
import { withoutPort } from "../server/tracking/ipdata/ip.ts";
import { ADDRESSES, startTracking, type TrackingSuite } from "./support/tracking.ts";
import * as datasets from "../server/services/datasets.ts";

describe("form fields (the script's and the collector's rule)", () => {
  const secret = [
    // English, German, French, Spanish, Dutch, Italian
    "password", "user_password", "passwd", "PIN", "pin_code", "userPin", "security-code", "cvv", "card_number", "iban", "ssn", "otp",
    "Kennwort", "Passwort", "benutzerkennwort", "Kartennummer", "Sicherheitscode", "Prüfziffer", "Kontonummer", "TAN",
    "mot_de_passe", "motDePasse", "mdp", "numero_carte", "cryptogramme", "code de sécurité", "code NIP",
    "contraseña", "Contrasena", "clave", "número de tarjeta", "código de seguridad", "DNI",
    "wachtwoord", "kaartnummer", "beveiligingscode", "rekeningnummer", "BSN",
    "parola d'ordine", "numero_carta", "codice di sicurezza", "codice fiscale",
  ];
  it.each(secret)("when a field is named %s, then it is a secret", (name) => {
    expect(isSecretFieldName(name)).toBe(true);
  });

  const plain = ["email", "company", "shipping", "opinion", "distance", "companyName", "first_name", "Firma", "société", "empresa", "bedrijf", "azienda", "message", "phone", "spin_class"];
  it.each(plain)("when a field is named %s, then it is kept", (name) => {
    expect(isSecretFieldName(name)).toBe(false);
  });

  it("when a value is a card number with any separators, then it is one; a phone number or a text with digits is not", () => {
    for (const card of ["4111111111111111", "4111 1111 1111 1111", "4111-1111-1111-1111", "4111.1111.1111.1111", "4111/1111/1111/1111", " 5555_5555_5555_4444 "]) {
      expect(looksLikeCardNumber(card), card).toBe(true);
    }
    for (const other of ["4111.1111.1111.1112", "+49 30 1234567", "Order 12345, call +49 30 1234567", "2026-11-25", "12.30", "2026-11-25T10:30", "+49 30 1234567 x12"]) {
      expect(looksLikeCardNumber(other), other).toBe(false);
    }
  });

  it("when a card number has letters added or mixed in, or a letter for its first or last digit, then it is still one", () => {
    const decorated = [
      "4111-1111-1111-1111x", "4111 1111 1111 1111a", "x4111111111111111", "4111a1111b1111c1111", "4111 1111 1111 111a", "a111 1111 1111 1111",
      "Order 4111 1111 1111 1111", "card: 5555 5555 5555 4444, exp 12/30", "４１１１ １１１１ １１１１ １１１１",
    ];
    for (const card of decorated) expect(looksLikeCardNumber(card), card).toBe(true);
  });

  it("when a form carries secrets and card numbers, then only the other fields are kept", () => {
    expect(
      keptFields({ email: "a@b.example", Kennwort: "x", pin: "1234", note: "4111.1111.1111.1111", Firma: "Apple", telefon: "+49 30 1234567", phone: "4111 1111 1111 111a" }),
    ).toEqual({ email: "a@b.example", Firma: "Apple", telefon: "+49 30 1234567" });
  });
});

describe("withoutPort", () => {
  it("when a forwarded address carries a port, then the address is read without it", () => {
    expect(withoutPort("17.253.144.34:443")).toBe("17.253.144.34");
    expect(withoutPort("[2620:149:a44::33]:443")).toBe("2620:149:a44::33");
    expect(withoutPort("[2620:149:a44::33]")).toBe("2620:149:a44::33");
    expect(withoutPort("2620:149:a44::33")).toBe("2620:149:a44::33");
    expect(withoutPort("17.253.144.34")).toBe("17.253.144.34");
  });
});

describe("collect", () => {
  let t: TrackingSuite;
  beforeAll(async () => {
    t = await startTracking();
  });
  afterAll(async () => {
    await t?.close();
  });

  it.each([
    ["an IPv4 address", `${ADDRESSES.business.replace(/\.\d+$/, ".34")}:443`],
    ["an IPv6 address", "[2620:149:a44::33]:443"],
  ])("when X-Forwarded-For gives %s with a port, then the visit counts for its organisation", async (_what, forwarded) => {
    const ds = await datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: `Ports ${forwarded}` });
    const res = await t.collect(ds, forwarded, [t.pageView("portvisitor0001")]);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ received: 1, queued: 1 });
    await t.writer.drain();
    expect(await t.leads(ds)).toMatchObject([{ organizationName: "Apple Inc.", visitCount: 1 }]);
  });

  it("when a form's fields are named as secrets in other languages or hold a decorated card number, then they are never stored", async () => {
    const ds = await datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: "Secrets" });
    await t.settings(ds, { formTracking: true });
    const vid = "secretvisitor001";
    await t.collect(ds, ADDRESSES.business, [
      t.pageView(vid),
      t.form(vid, { email: "x@apple-visitor.example", kennwort: "geheim", pin: "1234", wachtwoord: "w", card: "4111.1111.1111.1111", phone: "4111 1111 1111 111a", fax: "4111-1111-1111-1111x", company: "Apple" }),
    ]);
    await t.writer.drain();
    const form = await t.api.db.prisma.formSubmission.findFirst({ where: { datasetId: ds } });
    expect(form?.fields).toEqual({ email: "x@apple-visitor.example", company: "Apple" });
  });
});
