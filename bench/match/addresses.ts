// IPv4 and IPv6 addresses as the world handles them: numbers (IPv4) and bigints (IPv6), their
// text forms, and the reverse DNS names (in-addr.arpa, ip6.arpa nibbles) the world's DNS answers.

export const ipOf = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
export const numberOf = (ip: string) => ip.split(".").reduce((n, octet) => n * 256 + Number(octet), 0);

const V6_BITS = 128n;
const V6_MAX = (1n << V6_BITS) - 1n;

/** An IPv6 address's bigint from its text (`::` and embedded zeros allowed; no IPv4 tail). */
export function v6Value(text: string): bigint {
  const [head, tail] = text.toLowerCase().split("::") as [string, string | undefined];
  const groups = (part: string | undefined) => (part ? part.split(":") : []);
  const left = groups(head);
  const right = groups(tail);
  const middle = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill("0");
  const all = [...left, ...middle, ...right];
  if (all.length !== 8) throw new Error(`not an IPv6 address: ${text}`);
  return all.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n);
}

/** The canonical text of an IPv6 address (RFC 5952: lower case, the longest run of zero groups as `::`). */
export function v6Text(value: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn));
  let [bestStart, bestLength] = [-1, 1];
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

/** The first address of the /`bits` prefix holding `value`. */
export const v6Prefix = (value: bigint, bits: number) => value & (V6_MAX ^ ((1n << (V6_BITS - BigInt(bits))) - 1n));

/** `prefix/bits` of an address's /`bits` prefix, as text. */
export const v6Cidr = (value: bigint, bits: number) => `${v6Text(v6Prefix(value, bits))}/${bits}`;

export const isV6 = (ip: string) => ip.includes(":");

/** The reverse name of an address: `4.3.2.1.in-addr.arpa`, or the 32 nibbles of an IPv6 address under ip6.arpa. */
export function reverseName(ip: string): string {
  if (!isV6(ip)) return `${ip.split(".").reverse().join(".")}.in-addr.arpa`;
  const hex = v6Value(ip).toString(16).padStart(32, "0");
  return `${[...hex].reverse().join(".")}.ip6.arpa`;
}
