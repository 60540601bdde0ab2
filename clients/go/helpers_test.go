// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func TestPasswordFingerprintVectors(t *testing.T) {
	raw, err := os.ReadFile("../../tests/conformance/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors struct {
		PasswordFingerprint []struct {
			KeyHex   string `json:"key_hex"`
			Password string `json:"password"`
			FP       string `json:"fp"`
		} `json:"password_fingerprint"`
		ShortKeys []string `json:"short_keys"`
	}
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors.PasswordFingerprint) == 0 || len(vectors.ShortKeys) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range vectors.PasswordFingerprint {
		key, _ := hex.DecodeString(v.KeyHex)
		if fp, err := PasswordFingerprint(key, v.Password); err != nil || fp != v.FP {
			t.Errorf("%q: got %s, %v; want %s", v.Password, fp, err, v.FP)
		}
	}
	for _, k := range vectors.ShortKeys {
		key, _ := hex.DecodeString(k)
		var ue *UsageError
		if _, err := PasswordFingerprint(key, "pw"); !errors.As(err, &ue) || ue.Field != "key" {
			t.Errorf("%d-byte key: got %v", len(key), err)
		}
	}
}

func TestClientIP(t *testing.T) {
	trusted, err := ParseTrustedProxies([]string{"10.0.0.0/8", " 192.0.2.1 ", "", "2001:db8::/32", "::ffff:172.16.0.0/108"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, remote, header string
		values               []string
		want                 string
	}{
		{"untrusted peer is the answer, header ignored", "203.0.113.7:5555", "", []string{"198.51.100.1"}, "203.0.113.7"},
		{"peer without a port", "203.0.113.7", "", nil, "203.0.113.7"},
		{"trusted peer without header", "10.0.0.1:80", "", nil, "10.0.0.1"},
		{"first untrusted from the right", "10.0.0.1:80", "", []string{"1.1.1.1, 198.51.100.9, 10.1.1.1"}, "198.51.100.9"},
		{"several lines join", "10.0.0.1:80", "", []string{"1.1.1.1, 198.51.100.9", "10.1.1.1"}, "198.51.100.9"},
		{"all trusted: the leftmost", "10.0.0.1:80", "", []string{"10.2.2.2, 192.0.2.1"}, "10.2.2.2"},
		{"garbage ends the walk", "10.0.0.1:80", "", []string{"198.51.100.9, unknown, 10.3.3.3"}, "10.3.3.3"},
		{"garbage at once: the peer", "10.0.0.1:80", "", []string{"198.51.100.9, not-an-ip"}, "10.0.0.1"},
		{"empty elements skipped", "10.0.0.1:80", "", []string{"198.51.100.9,, 10.3.3.3,"}, "198.51.100.9"},
		{"IPv4 with port", "10.0.0.1:80", "", []string{"198.51.100.9:4711"}, "198.51.100.9"},
		{"IPv6 bracketed with port", "[2001:db8::5]:443", "", []string{"[2001:DB8:1::0:1]:4711"}, "2001:db8:1::1"},
		{"IPv6 bare", "10.0.0.1:80", "", []string{"2001:db8:1::1"}, "2001:db8:1::1"},
		{"IPv6 peer untrusted", "[2001:db9::1]:443", "", []string{"1.1.1.1"}, "2001:db9::1"},
		{"mapped IPv4 peer", "[::ffff:203.0.113.7]:80", "", nil, "203.0.113.7"},
		{"mapped IPv4 entry", "10.0.0.1:80", "", []string{"::ffff:198.51.100.9"}, "198.51.100.9"},
		{"mapped trusted proxy", "[::ffff:172.16.0.9]:80", "", []string{"::ffff:198.51.100.9"}, "198.51.100.9"},
		{"bad port is garbage", "10.0.0.1:80", "", []string{"198.51.100.9:http"}, "10.0.0.1"},
		{"header named in any case", "10.0.0.1:80", "X-Real-IP", []string{"198.51.100.9"}, "198.51.100.9"},
		{"forwarded", "10.0.0.1:80", "forwarded", []string{`for=198.51.100.9;proto=https, for=10.3.3.3`}, "198.51.100.9"},
		{"forwarded quoted IPv6 with port", "10.0.0.1:80", "Forwarded", []string{`For="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::17"},
		{"forwarded element without for", "10.0.0.1:80", "forwarded", []string{`for=198.51.100.9, by=10.0.0.1;proto=http`}, "198.51.100.9"},
		{"forwarded unknown ends the walk", "10.0.0.1:80", "forwarded", []string{`for=198.51.100.9, for=unknown, for=10.3.3.3`}, "10.3.3.3"},
		{"forwarded obfuscated ends the walk", "10.0.0.1:80", "forwarded", []string{`for=198.51.100.9, for=_hidden`}, "10.0.0.1"},
		{"forwarded obfuscated port", "10.0.0.1:80", "forwarded", []string{`for="198.51.100.9:_p1"`}, "198.51.100.9"},
		{"forwarded quoted comma", "10.0.0.1:80", "forwarded", []string{`for=198.51.100.9;x="a,for=10.9.9.9", for=10.3.3.3`}, "198.51.100.9"},
		{"garbage peer returned as is", "not an address", "", nil, "not an address"},
	} {
		h := http.Header{}
		name := c.header
		if name == "" {
			name = "X-Forwarded-For"
		}
		for _, v := range c.values {
			h.Add(name, v)
		}
		if got := ClientIP(c.remote, h, trusted, c.header); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func TestParseTrustedProxiesRefusesGarbage(t *testing.T) {
	var ue *UsageError
	if _, err := ParseTrustedProxies([]string{"10.0.0.0/8", "nope"}); !errors.As(err, &ue) || ue.Field != "trusted_proxies" {
		t.Fatalf("got %v", err)
	}
}

func TestDeviceCookie(t *testing.T) {
	// Names computed with Python's hashlib.
	for user, name := range map[string]string{
		"ana@example.com": "ag_device_7c76ad47e1f78d6c",
		"密码":              "ag_device_db3a53df78e49c9c",
	} {
		if got := DeviceCookieName(user); got != name {
			t.Errorf("%s: got %s, want %s", user, got, name)
		}
	}
	const name = "ag_device_7c76ad47e1f78d6c"
	for _, c := range []struct {
		token  string
		maxAge int
		secure bool
		want   string
	}{
		{"v1.tok-en_", 7776000, true, name + "=v1.tok-en_; Max-Age=7776000; Path=/; HttpOnly; SameSite=Lax; Secure"},
		{"v1.t", 60, false, name + "=v1.t; Max-Age=60; Path=/; HttpOnly; SameSite=Lax"},
		{"v1.t", 0, true, name + "=v1.t; Max-Age=0; Path=/; HttpOnly; SameSite=Lax; Secure"},
	} {
		if got, err := DeviceSetCookie("ana@example.com", c.token, c.maxAge, c.secure); err != nil || got != c.want {
			t.Errorf("DeviceSetCookie: got %s, %v; want %s", got, err, c.want)
		}
		// net/http writes the same cookie, in its own order.
		cookie, err := DeviceCookie("ana@example.com", c.token, c.maxAge, c.secure)
		if err != nil {
			t.Fatalf("DeviceCookie: %v", err)
		}
		if got, want := attributes(cookie.String()), attributes(c.want); got != want {
			t.Errorf("DeviceCookie: got %s, want %s", got, want)
		}
	}
}

func TestDeviceCookieRefusesATokenThatIsNoCookieValueOrANegativeMaxAge(t *testing.T) {
	for _, c := range []struct {
		token  string
		maxAge int
		field  string
	}{
		{"v1.a;b", 60, "token"},
		{"v1.t; Domain=evil", 60, "token"},
		{"", 60, "token"},
		{"v1 t", 60, "token"},
		{`v1."t"`, 60, "token"},
		{"v1.t\r\nX: y", 60, "token"},
		{"v1.tö", 60, "token"},
		{"v1.t\xff", 60, "token"},
		{"v1.t", -1, "maxAge"},
	} {
		var ue *UsageError
		if got, err := DeviceSetCookie("ana@example.com", c.token, c.maxAge, true); !errors.As(err, &ue) ||
			ue.Field != c.field || ue.Status != 0 || got != "" {
			t.Errorf("DeviceSetCookie(%q, %d): got %q, %v", c.token, c.maxAge, got, err)
		}
		if got, err := DeviceCookie("ana@example.com", c.token, c.maxAge, true); !errors.As(err, &ue) ||
			ue.Field != c.field || got != nil {
			t.Errorf("DeviceCookie(%q, %d): got %v, %v", c.token, c.maxAge, got, err)
		}
	}
}

// attributes puts a Set-Cookie value's attributes in a fixed order.
func attributes(setCookie string) string {
	parts := strings.Split(setCookie, "; ")
	return parts[0] + "; " + strings.Join(sortedCopy(parts[1:]), "; ")
}

func TestDeviceTokenFromCookies(t *testing.T) {
	header := "theme=dark; ag_device_e44f72ffa4b3b1da=v1.bob; ag_device_7c76ad47e1f78d6c=v1.ana"
	if got := DeviceTokenFromCookies(header, "ana@example.com"); got != "v1.ana" {
		t.Errorf("ana: got %q", got)
	}
	if got := DeviceTokenFromCookies(header, "bob@example.com"); got != "v1.bob" {
		t.Errorf("bob: got %q", got)
	}
	if got := DeviceTokenFromCookies(header, "eve@example.com"); got != "" {
		t.Errorf("eve: got %q", got)
	}
	if got := DeviceTokenFromCookies("", "ana@example.com"); got != "" {
		t.Errorf("no cookies: got %q", got)
	}
	r, _ := http.NewRequest("GET", "/", nil)
	r.Header.Set("Cookie", header)
	if got := DeviceTokenFromRequest(r, "ana@example.com"); got != "v1.ana" {
		t.Errorf("request: got %q", got)
	}
}

func TestVerifyWebhook(t *testing.T) {
	secret := []byte(strings.Repeat("k", 32))
	body := []byte(`{"a":1}`)
	// Computed with Python's hmac over "1700000000." and the body.
	const mac = "6935b796c0fec66e5dee52c86c7fd1218a424c32f1adb239ff2893c31e54f033"
	at := time.Unix(1700000000, 0)
	good := "t=1700000000,v1=" + mac
	for _, c := range []struct {
		name   string
		body   []byte
		header string
		now    time.Time
		tol    time.Duration
		want   bool
	}{
		{"good", body, good, at, 0, true},
		{"fields in any order", body, "v1=" + mac + ",t=1700000000", at, 0, true},
		{"unknown field ignored", body, good + ",v0=abc", at, 0, true},
		{"within tolerance", body, good, at.Add(300 * time.Second), 0, true},
		{"old t", body, good, at.Add(301 * time.Second), 0, false},
		{"future t", body, good, at.Add(-301 * time.Second), 0, false},
		{"custom tolerance", body, good, at.Add(20 * time.Second), 10 * time.Second, false},
		{"bad mac", body, "t=1700000000,v1=" + strings.Repeat("0", 64), at, 0, false},
		{"other body", []byte(`{"a":2}`), good, at, 0, false},
		{"upper-case mac", body, "t=1700000000,v1=" + strings.ToUpper(mac), at, 0, false},
		{"no v1", body, "t=1700000000", at, 0, false},
		{"no t", body, "v1=" + mac, at, 0, false},
		{"t twice", body, good + ",t=1700000000", at, 0, false},
		{"signed t", body, "t=+1700000000,v1=" + mac, at, 0, false},
		{"garbage", body, "garbage", at, 0, false},
		{"empty", body, "", at, 0, false},
		{"old scheme", body, "sha256=" + mac, at, 0, false},
		{"huge t", body, "t=99999999999999999999999,v1=" + mac, at, 0, false},
		{"empty t, then t", body, "t=,t=1700000000,v1=" + mac, at, 0, false},
		{"any v1 may match", body, "t=1700000000,v1=" + strings.Repeat("0", 64) + ",v1=" + mac, at, 0, true},
		{"the matching v1 first", body, good + ",v1=" + strings.Repeat("0", 64), at, 0, true},
		{"several v1, none matching", body, "t=1700000000,v1=00,v1=" + strings.ToUpper(mac), at, 0, false},
		{"negative tolerance accepts nothing", body, good, at, -time.Second, false},
		{"negative tolerance, wide", body, good, at, -time.Hour, false},
	} {
		if got := VerifyWebhook(secret, c.body, c.header, c.now, c.tol); got != c.want {
			t.Errorf("%s: got %v", c.name, got)
		}
	}
	if VerifyWebhook(secret, body, good, time.Time{}, 0) {
		t.Error("a zero now is the current time, long after t")
	}
}
