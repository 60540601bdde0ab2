// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The SHA-1 of "correct horse battery staple", split as a range lookup
// splits it.
const (
	pwPrefix = "ABF7A"
	pwSuffix = "AD6438836DBE526AA231ABDE2D0EEF74D42"
)

func rangeFake(t *testing.T, status int, lines ...string) *fake {
	return newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		w.Write([]byte(strings.Join(lines, "\r\n")))
	})
}

func breached(t *testing.T, f *fake) Breach {
	t.Helper()
	b, err := newClient(t, f.URL, Options{}).Breached(context.Background(), "correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBreachedMatchesTheSuffixWithACount(t *testing.T) {
	f := rangeFake(t, 200, "0018A45C4D1DEF81644B54AB7F969B88D65:1", pwSuffix+":3", "FFF7E0AC2C5B3C73D8D4C8A8E2C4E0C2F12:0")
	if b := breached(t, f); b != BreachBreached {
		t.Fatalf("got %v", b)
	}
	r := f.request(0)
	if r.method != "GET" || r.path != "/range/"+pwPrefix || r.header.Get("Add-Padding") != "true" {
		t.Fatalf("sent %s %s %v", r.method, r.path, r.header)
	}
	for _, v := range r.header {
		if strings.Contains(strings.Join(v, ""), pwSuffix[:8]) {
			t.Fatal("the rest of the hash left the process")
		}
	}
}

func TestBreachedSkipsPaddingLines(t *testing.T) {
	f := rangeFake(t, 200, "0018A45C4D1DEF81644B54AB7F969B88D65:1", pwSuffix+":0")
	if b := breached(t, f); b != BreachClean {
		t.Fatalf("got %v", b)
	}
}

func TestBreachedAbsentOrEmptyRangeIsClean(t *testing.T) {
	if b := breached(t, rangeFake(t, 200, "0018A45C4D1DEF81644B54AB7F969B88D65:1")); b != BreachClean {
		t.Fatalf("got %v", b)
	}
	if b := breached(t, rangeFake(t, 200)); b != BreachClean {
		t.Fatalf("empty: got %v", b)
	}
}

func TestBreachedWithoutCorpusOrAnswerIsUnknown(t *testing.T) {
	f := newFake(t, reply(404, `{"error":"mode sha1: no SHA-1 corpus is loaded (--pwned-file)","field":"mode"}`))
	if b := breached(t, f); b != BreachUnknown {
		t.Fatalf("404: got %v", b)
	}
	if b := breached(t, newFake(t, reply(500, ""))); b != BreachUnknown {
		t.Fatalf("500: got %v", b)
	}
	c := newClient(t, newFake(t, hang).URL, Options{Timeout: 20 * time.Millisecond})
	if b, err := c.Breached(context.Background(), "pw"); b != BreachUnknown || err != nil {
		t.Fatalf("timeout: got %v, %v", b, err)
	}
}

// The prefix is computed here, so no answer of the range route can be
// the caller's mistake: anything but 200 is unknown, with no error.
func TestBreachedAnyOtherAnswerIsUnknownWithoutError(t *testing.T) {
	for _, status := range []int{204, 302, 400, 401, 403, 405, 429} {
		f := newFake(t, reply(status, `{"error":"no","field":"prefix"}`))
		b, err := newClient(t, f.URL, Options{}).Breached(context.Background(), "pw")
		if b != BreachUnknown || err != nil {
			t.Fatalf("%d: got %v, %v", status, b, err)
		}
	}
}

func TestBreachMarshalsAsItsWord(t *testing.T) {
	for b, want := range map[Breach]string{BreachBreached: "breached", BreachClean: "clean", BreachUnknown: "unknown"} {
		if string(b) != want {
			t.Errorf("%q, want %q", b, want)
		}
	}
}
