// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxies reads your own proxies' addresses for ClientIP:
// each a CIDR ("10.0.0.0/8", "2001:db8::/32") or a single address.
// Spaces around an entry are dropped and empty entries skipped, so the
// pieces of an empty or comma-separated setting can be passed as they
// are. An entry that is neither is a *UsageError.
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := parseProxy(s)
		if err != nil {
			return nil, usage("trusted_proxies", "%q is not an address or CIDR", s)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseProxy(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	// Addresses are compared unmapped, so a mapped range is its IPv4 one.
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// ClientIP is the address to send as a check's IP, from the TCP peer
// (an http.Request's RemoteAddr) and, when that peer is one of your
// trusted proxies, the forwarding header they set.
//
// header names that header: "x-forwarded-for" (or "" for it), or
// "forwarded" for RFC 7239's (every for= of every element). Several
// lines of it are read as one list. The list is walked from the right,
// skipping trusted proxies; the first address that is not one is the
// answer, and if all are, the leftmost. An entry that is no address
// ("unknown", an obfuscated "_name", garbage) ends the walk: the answer
// is then the last trusted address walked, as nothing left of it can be
// believed. Ports and brackets are stripped, an IPv4-mapped IPv6 address
// becomes its IPv4 address, and an IPv6 address is written in its
// canonical form.
//
// Name only the header your own proxy sets: one it passes through
// untouched is whatever the attacker wrote. A remoteAddr that is no
// address is returned as it is (abuseguard then refuses the check).
func ClientIP(remoteAddr string, h http.Header, trusted []netip.Prefix, header string) string {
	remote, ok := parseHostPort(remoteAddr)
	if !ok {
		return remoteAddr
	}
	if !isTrusted(remote, trusted) {
		return remote.String()
	}
	if header == "" {
		header = "x-forwarded-for"
	}
	joined := strings.Join(h.Values(header), ",")
	var entries []string
	if strings.EqualFold(header, "forwarded") {
		entries = forwardedFor(joined)
	} else {
		for _, e := range strings.Split(joined, ",") {
			// An empty list element is no entry (RFC 9110's #rule).
			if e = strings.TrimSpace(e); e != "" {
				entries = append(entries, e)
			}
		}
	}
	last := remote
	for i := len(entries) - 1; i >= 0; i-- {
		a, ok := parseHostPort(entries[i])
		if !ok {
			break
		}
		if !isTrusted(a, trusted) {
			return a.String()
		}
		last = a
	}
	return last.String()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHostPort reads an address with or without a port: "1.2.3.4",
// "1.2.3.4:80", "2001:db8::1", "[2001:db8::1]:4711" (a port may be
// RFC 7239's obfuscated "_name"). The zone of a link-local address is
// dropped, and a mapped IPv4 address unmapped.
func parseHostPort(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	host := s
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		host = s[1:end]
		if rest := s[end+1:]; rest != "" && !(rest[0] == ':' && isPort(rest[1:])) {
			return netip.Addr{}, false
		}
	} else if h, port, ok := strings.Cut(s, ":"); ok && !strings.Contains(port, ":") {
		if !isPort(port) {
			return netip.Addr{}, false
		}
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

// obfuscatedChars are those of RFC 7239's obfnode and obfport after "_".
const obfuscatedChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

// isPort takes a decimal port or an obfuscated one ("_" and a token).
func isPort(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '_' {
		token := s[1:]
		return token != "" && strings.Trim(token, obfuscatedChars) == ""
	}
	return len(s) <= 5 && strings.Trim(s, "0123456789") == ""
}

// forwardedFor lists the for= values of an RFC 7239 Forwarded list, in
// order, unquoted; an element without for= adds nothing.
func forwardedFor(value string) []string {
	var out []string
	for _, element := range splitUnquoted(value, ',') {
		for _, pair := range splitUnquoted(element, ';') {
			name, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if ok && strings.EqualFold(strings.TrimSpace(name), "for") {
				out = append(out, unquote(strings.TrimSpace(v)))
			}
		}
	}
	return out
}

// splitUnquoted splits s at sep outside quoted strings.
func splitUnquoted(s string, sep byte) []string {
	var parts []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\':
			i++ // the escaped byte is never a separator or a quote
		case s[i] == '"':
			quoted = !quoted
		case !quoted && s[i] == sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// unquote undoes an RFC 7230 quoted-string; a bare token is kept.
func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		if s[i] == '\\' && i+1 < len(s)-1 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
