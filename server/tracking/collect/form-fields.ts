// Which form fields are never kept: the rule the tracking script applies in the browser (it gets
// SECRET_FIELD_NAME's source with its settings) and the collector applies again to what arrives.
// A field is dropped when its name says password, PIN, secret, payment card, security code or
// account/identity number (English, German, French, Spanish, Dutch, Italian), or when its value
// is a payment card number with any separators.

/** Words that name a secret anywhere in a field name (compound words: "benutzerkennwort"). */
const SECRET_PARTS = [
  "pass(word|wd|wort|phrase|code)", "kennwort", "motdepasse", "contrasena", "wachtwoord", "parolachiave", "parola d ?ordine",
  "geheim", "secret", "secreto", "segreto", "token",
  "card", "karte", "kaart", "carte", "tarjeta", "carta", "cc ?(num|number|exp|csc|cvc|name)",
  "security ?code", "sicherheitscode", "pruefziffer", "prufziffer", "cryptogramme", "code ?de ?securite", "codigo ?de ?seguridad",
  "beveiligingscode", "codice ?di ?sicurezza", "iban", "kontonummer", "rekeningnummer", "social ?security",
  "sozialversicherung", "securite ?sociale", "codice ?fiscale", "burgerservicenummer",
];
/** Short words that name a secret only as a whole word ("pin", but not "shipping"). */
const SECRET_WORDS = [
  "pass", "pwd", "mdp", "pin", "pincode", "nip", "tan", "otp", "2fa", "mfa", "cvc", "cvv", "cvn", "csc", "bic", "ssn", "bsn", "dni",
  "nie", "nif", "clave",
];

/** Tested against `fieldNameWords(name)`. */
export const SECRET_FIELD_NAME = new RegExp(`(${SECRET_PARTS.join("|")})|(^| )(${SECRET_WORDS.join("|")})( |$)`);

/**
 * A field name as lower-case words without accents: "userPIN" -> "user pin", "Mot_de_passe" ->
 * "mot de passe", "Contraseña" -> "contrasena". The script does the same in the browser.
 */
export function fieldNameWords(name: string): string {
  return ` ${name
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .normalize("NFD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, " ")
    .trim()} `;
}

/** Also matches the words joined ("motdepasse" in "mot de passe"). */
export function isSecretFieldName(name: string): boolean {
  const words = fieldNameWords(name);
  return SECRET_FIELD_NAME.test(words) || SECRET_FIELD_NAME.test(words.replaceAll(" ", ""));
}

function passesLuhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i += 1) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
}

/**
 * Whether a value holds a payment card number, however it is decorated: within a stretch of the
 * value that no word (two letters or more) interrupts, 13 to 19 digits passing the Luhn check,
 * with any separators and single letters mixed in ("4111 1111-1111/1111", "4111-1111-1111-1111x",
 * "Order 4111 1111 1111 1111"); or 12 to 18 digits with one letter for the first or last digit
 * ("4111 1111 1111 111a"), since the check digit restores it. Full-width digits count as digits.
 * A letter inside such a stretch ("2026-11-25T10:30") is not taken for a digit.
 */
export function looksLikeCardNumber(value: string): boolean {
  return value.normalize("NFKC").split(/\p{L}{2,}/u).some((stretch) => {
    const digits = stretch.replace(/\D/g, "");
    if (digits.length >= 13 && digits.length <= 19 && passesLuhn(digits)) return true;
    const letters = stretch.match(/\p{L}/gu)?.length ?? 0;
    const letterForEndDigit = /^[^\p{L}\d]*\p{L}\d|\d\p{L}[^\p{L}\d]*$/u.test(stretch);
    return letters === 1 && letterForEndDigit && digits.length >= 12 && digits.length <= 18;
  });
}

/** The collector's own net under the script's rule: secret-named fields and card numbers dropped. */
export function keptFields(fields: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(fields).filter(([key, value]) => !isSecretFieldName(key) && !looksLikeCardNumber(value)));
}
