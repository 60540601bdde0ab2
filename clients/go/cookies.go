// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
)

// DeviceCookieName is the name of one account's device cookie:
// "ag_device_" and the first 16 hex digits of the SHA-256 of
// "abuseguard-device:" and the user. One cookie per account, so two
// accounts used in one browser do not overwrite each other's token.
func DeviceCookieName(user string) string {
	sum := sha256.Sum256([]byte("abuseguard-device:" + user))
	return "ag_device_" + hex.EncodeToString(sum[:8])
}

// DeviceCookie is the cookie that keeps a device token (a successful
// ReportLogin's DeviceToken, maxAge its ExpiresIn in seconds): Path=/,
// HttpOnly, SameSite=Lax, and Secure unless secure is false (a plain
// HTTP demo). Send it with http.SetCookie, or send DeviceSetCookie's
// header, the same cookie.
//
// A token that is not a cookie value (empty, or holding a byte RFC 6265
// does not allow in one, such as ";" or a space) or a negative maxAge
// is a *UsageError (Field "token" or "maxAge"), as the other clients
// raise it: altered quietly, the cookie would carry another token than
// the one abuseguard issued, or none.
func DeviceCookie(user, token string, maxAge int, secure bool) (*http.Cookie, error) {
	if err := checkCookie(token, maxAge); err != nil {
		return nil, err
	}
	if maxAge == 0 {
		// net/http leaves out Max-Age 0 (a session cookie) and writes
		// Max-Age=0 for a negative one: keep "expire now" meaning that.
		maxAge = -1
	}
	return &http.Cookie{
		Name:     DeviceCookieName(user),
		Value:    token,
		MaxAge:   maxAge,
		Path:     "/",
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	}, nil
}

// DeviceSetCookie is DeviceCookie's Set-Cookie header value as every
// abuseguard client writes it, byte for byte: "<name>=<token>;
// Max-Age=<maxAge>; Path=/; HttpOnly; SameSite=Lax", and "; Secure"
// unless secure is false. (http.Cookie's String method writes the same
// attributes in another order.) Its errors are DeviceCookie's.
func DeviceSetCookie(user, token string, maxAge int, secure bool) (string, error) {
	if err := checkCookie(token, maxAge); err != nil {
		return "", err
	}
	header := fmt.Sprintf("%s=%s; Max-Age=%d; Path=/; HttpOnly; SameSite=Lax", DeviceCookieName(user), token, maxAge)
	if secure {
		header += "; Secure"
	}
	return header, nil
}

// checkCookie refuses a token that is not a cookie value and a negative
// maxAge.
func checkCookie(token string, maxAge int) error {
	if token == "" || strings.IndexFunc(token, notCookieOctet) >= 0 {
		return usage("token", "must be a non-empty cookie value (RFC 6265 cookie-octets), got %q", token)
	}
	if maxAge < 0 {
		return usage("maxAge", "must be a whole number of seconds, not negative, got %d", maxAge)
	}
	return nil
}

// notCookieOctet says whether a byte is outside RFC 6265's cookie-octet,
// what a cookie value may hold unquoted: a device token is base64url and
// never is, while a ";" would smuggle an attribute into Set-Cookie. (A
// non-ASCII rune is outside too, as are the bytes of invalid UTF-8,
// which range over as U+FFFD.)
func notCookieOctet(r rune) bool {
	return !(r == 0x21 || r >= 0x23 && r <= 0x2B || r >= 0x2D && r <= 0x3A ||
		r >= 0x3C && r <= 0x5B || r >= 0x5D && r <= 0x7E)
}

// DeviceTokenFromRequest is the device token of user's cookie in the
// request, or "" when it has none.
func DeviceTokenFromRequest(r *http.Request, user string) string {
	c, err := r.Cookie(DeviceCookieName(user))
	if err != nil {
		return ""
	}
	return c.Value
}

// DeviceTokenFromCookies is the device token of user's cookie in a
// Cookie header's value, or "" when it has none.
func DeviceTokenFromCookies(cookieHeader, user string) string {
	r := http.Request{Header: http.Header{"Cookie": {cookieHeader}}}
	return DeviceTokenFromRequest(&r, user)
}
