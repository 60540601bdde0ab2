// SPDX-License-Identifier: Apache-2.0
/**
 * The address to send as `ip`: the TCP peer, or behind trusted proxies
 * the first untrusted address of the header your own proxy sets, walked
 * from the right (clients/README.md, "Helpers"). Addresses are parsed to
 * bytes and written back in one canonical form (RFC 5952 for IPv6, an
 * IPv4-mapped address as its IPv4 address), so one client is seen as one
 * address however a proxy spelled it.
 */
import { UsageError } from './errors.js';

/**
 * The client's address.
 * @param {string} remoteAddr the TCP peer (req.socket.remoteAddress)
 * @param {object} headers name to value (string or string[]), names in any
 *   case, as Node's req.headers; or a WHATWG Headers
 * @param {string[]} trustedProxies CIDRs or single addresses of your
 *   proxies; blank entries are skipped
 * @param {string} [header] "x-forwarded-for" (the default, for "" too)
 *   or "forwarded" (RFC 7239): only the header your own proxy sets
 * @returns {string}
 * @throws {UsageError} status 0 for a trusted proxy that is no CIDR or address
 */
export function clientIp(remoteAddr, headers, trustedProxies, header) {
  if (typeof remoteAddr !== 'string') {
    throw new UsageError(0, 'remoteAddr', 'remoteAddr must be a string');
  }
  const trusted = [];
  for (const text of trustedProxies ?? []) {
    // Blank entries are skipped, as Go's ParseTrustedProxies does, so
    // that an empty or comma-separated setting can be passed as split.
    if (typeof text !== 'string' || trimSpace(text) !== '') {
      trusted.push(parseCidr(text));
    }
  }
  const isTrusted = (ip) => trusted.some((net) => inNet(ip, net));
  const remote = parseHostPort(remoteAddr);
  if (remote === null || !isTrusted(remote)) {
    return remote === null ? remoteAddr : formatIp(remote);
  }
  const name = (header || 'x-forwarded-for').toLowerCase();
  const value = headerValue(headers, name) ?? '';
  const entries = name === 'forwarded' ? forwardedFor(value) : forwardedList(value);
  let last = remote;
  for (let i = entries.length - 1; i >= 0; i--) {
    const ip = parseHostPort(entries[i]);
    if (ip === null) {
      // "unknown", an obfuscated name or garbage: nothing left of it can
      // be believed, so the last address a trusted proxy vouched for.
      break;
    }
    if (!isTrusted(ip)) {
      return formatIp(ip);
    }
    last = ip;
  }
  return formatIp(last);
}

/*
 * What follows reads entries exactly as the Go client's clientip.go does
 * (the reference the three clients are held to by tests/conformance):
 * the same trimming, splitting, unquoting and address syntax, so that
 * one request is one address whichever client reads it. Where Go's
 * net/netip is laxer than the RFCs (more than 4 hex digits in an IPv6
 * group), this file keeps to the RFC.
 */

/** All lines of one header joined with commas, or null when absent. */
function headerValue(headers, name) {
  if (headers == null) {
    return null;
  }
  if (typeof headers.get === 'function') {
    return headers.get(name);
  }
  const values = [];
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name && value != null) {
      values.push(...(Array.isArray(value) ? value : [value]));
    }
  }
  return values.length === 0 ? null : values.join(',');
}

/** X-Forwarded-For: comma-separated entries; an empty one is no entry
 * (RFC 9110's #rule). */
function forwardedList(value) {
  return value
    .split(',')
    .map(trimSpace)
    .filter((s) => s !== '');
}

/** Every `for=` of every element of an RFC 7239 Forwarded value, left to
 * right, unquoted; an element without one adds nothing. Commas and
 * semicolons inside quotes do not split. */
function forwardedFor(value) {
  const found = [];
  for (const element of splitUnquoted(value, ',')) {
    for (const pair of splitUnquoted(element, ';')) {
      const text = trimSpace(pair);
      const eq = text.indexOf('=');
      if (eq >= 0 && trimSpace(text.slice(0, eq)).toLowerCase() === 'for') {
        found.push(unquote(trimSpace(text.slice(eq + 1))));
      }
    }
  }
  return found;
}

/** `s` split at `sep` outside quoted strings; an escaped character is
 * never a separator or a quote. */
function splitUnquoted(s, sep) {
  const parts = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quoted && c === '\\') {
      i++;
    } else if (c === '"') {
      quoted = !quoted;
    } else if (!quoted && c === sep) {
      parts.push(s.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(s.slice(start));
  return parts;
}

/** Undoes an RFC 9110 quoted-string; a bare token is kept. */
function unquote(s) {
  if (s.length < 2 || s[0] !== '"' || s[s.length - 1] !== '"') {
    return s;
  }
  let out = '';
  for (let i = 1; i < s.length - 1; i++) {
    if (s[i] === '\\' && i + 1 < s.length - 1) {
      i++;
    }
    out += s[i];
  }
  return out;
}

/**
 * Space as Go's strings.TrimSpace sees it (Unicode White_Space): not
 * String.prototype.trim's, which also strips U+FEFF and keeps U+0085.
 * A loop, not a regular expression: /\s+$/ is quadratic on a header
 * of spaces.
 */
function isSpace(c) {
  return (
    (c >= 0x09 && c <= 0x0d) ||
    c === 0x20 ||
    c === 0x85 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000
  );
}

function trimSpace(s) {
  let start = 0;
  let end = s.length;
  while (start < end && isSpace(s.charCodeAt(start))) {
    start++;
  }
  while (end > start && isSpace(s.charCodeAt(end - 1))) {
    end--;
  }
  return s.slice(start, end);
}

/**
 * One address as proxies and sockets write it: IPv4 or IPv6, either
 * with a port ("1.2.3.4:80", "[2001:db8::1]:4711") or in brackets
 * ("[1.2.3.4]" too, as some proxies write IPv4 in Forwarded), an IPv6 zone
 * dropped (it names the proxy's interface, not the client), space
 * around it ignored.
 * @returns {{v4: boolean, bytes: number[]}|null} null when not an address
 */
function parseHostPort(input) {
  const s = trimSpace(input);
  let host = s;
  if (s.startsWith('[')) {
    const end = s.indexOf(']');
    if (end < 0) {
      return null;
    }
    host = s.slice(1, end);
    const rest = s.slice(end + 1);
    if (rest !== '' && !(rest[0] === ':' && isPort(rest.slice(1)))) {
      return null;
    }
  } else {
    // One colon is a port; more are IPv6's own.
    const colon = s.indexOf(':');
    if (colon >= 0 && !s.includes(':', colon + 1)) {
      if (!isPort(s.slice(colon + 1))) {
        return null;
      }
      host = s.slice(0, colon);
    }
  }
  const ip = parseAddr(host);
  return ip && mapped(ip);
}

/** A decimal port, or RFC 7239's obfuscated one ("_" and a token). */
function isPort(s) {
  return /^([0-9]{1,5}|_[A-Za-z0-9._-]+)$/.test(s);
}

/** An address without port or brackets, as netip.ParseAddr reads it: the
 * first of ".", ":" and "%" says which syntax it must be. */
function parseAddr(s) {
  const kind = /[.:%]/.exec(s);
  if (kind === null || kind[0] === '%') {
    return null;
  }
  if (kind[0] === '.') {
    const bytes = parseV4(s);
    return bytes && { v4: true, bytes };
  }
  const zone = s.indexOf('%');
  if (zone === s.length - 1) {
    return null;
  }
  return parseV6(zone < 0 ? s : s.slice(0, zone));
}

function parseV4(s) {
  const parts = s.split('.');
  if (parts.length !== 4) {
    return null;
  }
  const bytes = [];
  for (const p of parts) {
    // Leading zeros are refused, as inet_pton does: some parsers read
    // "010" as octal, and two readings of one string must not exist.
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p) || Number(p) > 255) {
      return null;
    }
    bytes.push(Number(p));
  }
  return bytes;
}

/** IPv6 without a zone: 1 to 4 hex digits a group (RFC 4291 2.2).
 * @returns {{v4: false, bytes: number[]}|null} 16 bytes */
function parseV6(s) {
  const halves = s.split('::');
  if (halves.length > 2) {
    return null;
  }
  const groups = (half, last) => {
    if (half === '') {
      return [];
    }
    const out = [];
    const parts = half.split(':');
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (last && i === parts.length - 1 && p.includes('.')) {
        const v4 = parseV4(p);
        if (!v4) {
          return null;
        }
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else if (/^[0-9A-Fa-f]{1,4}$/.test(p)) {
        out.push(parseInt(p, 16));
      } else {
        return null;
      }
    }
    return out;
  };
  const head = groups(halves[0], halves.length === 1);
  const tail = halves.length === 2 ? groups(halves[1], true) : [];
  if (head === null || tail === null) {
    return null;
  }
  const fill = 8 - head.length - tail.length;
  if (halves.length === 1 ? fill !== 0 : fill < 1) {
    return null;
  }
  const words = [...head, ...new Array(halves.length === 2 ? fill : 0).fill(0), ...tail];
  return { v4: false, bytes: words.flatMap((w) => [w >> 8, w & 0xff]) };
}

/** ::ffff:a.b.c.d is the IPv4 address a.b.c.d. */
function mapped(ip) {
  const b = ip.bytes;
  if (b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) {
    return { v4: true, bytes: b.slice(12) };
  }
  return ip;
}

function formatIp(ip) {
  if (ip.v4) {
    return ip.bytes.join('.');
  }
  const words = [];
  for (let i = 0; i < 16; i += 2) {
    words.push((ip.bytes[i] << 8) | ip.bytes[i + 1]);
  }
  // RFC 5952: the longest run of two or more zero groups becomes "::",
  // the first such run on a tie.
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && words[j] === 0) {
      j++;
    }
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j === i ? i + 1 : j;
  }
  const hex = (ws) => ws.map((w) => w.toString(16)).join(':');
  if (best < 0) {
    return hex(words);
  }
  return `${hex(words.slice(0, best))}::${hex(words.slice(best + bestLen))}`;
}

/** A CIDR or a single address; host bits past the prefix are ignored. */
function parseCidr(text) {
  const bad = () =>
    new UsageError(0, 'trustedProxies', `trustedProxies: ${JSON.stringify(text)} is not a CIDR or address`);
  if (typeof text !== 'string') {
    throw bad();
  }
  const [addr, len, extra] = trimSpace(text).split('/');
  const raw = parseAddr(addr);
  // A zone names one interface's address, never a range (netip's rule).
  const zoned = len !== undefined && addr.includes('%');
  if (!raw || zoned || extra !== undefined || (len !== undefined && !/^(0|[1-9][0-9]{0,2})$/.test(len))) {
    throw bad();
  }
  const bits = len === undefined ? (raw.v4 ? 32 : 128) : Number(len);
  if (bits > (raw.v4 ? 32 : 128)) {
    throw bad();
  }
  // A prefix inside ::ffff:0:0/96 is the IPv4 range it maps, as the
  // addresses it is matched against are.
  const ip = mapped(raw);
  if (ip.v4 && !raw.v4 && bits >= 96) {
    return { ip, bits: bits - 96 };
  }
  return { ip: raw, bits };
}

function inNet(ip, net) {
  if (ip.v4 !== net.ip.v4) {
    return false;
  }
  for (let bit = 0; bit < net.bits; bit += 8) {
    const take = Math.min(8, net.bits - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((ip.bytes[bit / 8] & mask) !== (net.ip.bytes[bit / 8] & mask)) {
      return false;
    }
  }
  return true;
}
