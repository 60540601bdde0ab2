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
func DeviceCookie(user, token string, maxAge int, secure bool) *http.Cookie {
	if maxAge <= 0 {
		// net/http leaves out Max-Age 0 (a session cookie) and writes
		// Max-Age=0 for a negative one: keep "expire now" meaning that.
		maxAge = -1
	}
	return &http.Cookie{
		Name:     DeviceCookieName(user),
		Value:    strings.Map(cookieOctet, token),
		MaxAge:   maxAge,
		Path:     "/",
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	}
}

// DeviceSetCookie is DeviceCookie's Set-Cookie header value as every
// abuseguard client writes it, byte for byte: "<name>=<token>;
// Max-Age=<maxAge>; Path=/; HttpOnly; SameSite=Lax", and "; Secure"
// unless secure is false. (http.Cookie's String method writes the same
// attributes in another order.)
func DeviceSetCookie(user, token string, maxAge int, secure bool) string {
	c := DeviceCookie(user, token, maxAge, secure)
	if maxAge < 0 {
		maxAge = 0
	}
	header := fmt.Sprintf("%s=%s; Max-Age=%d; Path=%s; HttpOnly; SameSite=Lax", c.Name, c.Value, maxAge, c.Path)
	if c.Secure {
		header += "; Secure"
	}
	return header
}

// cookieOctet keeps the bytes RFC 6265 allows in a cookie value and
// drops the rest, as net/http does: a token is base64url and loses
// nothing, while a ";" could never smuggle in an attribute.
func cookieOctet(r rune) rune {
	if r == 0x21 || r >= 0x23 && r <= 0x2B || r >= 0x2D && r <= 0x3A ||
		r >= 0x3C && r <= 0x5B || r >= 0x5D && r <= 0x7E {
		return r
	}
	return -1
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
