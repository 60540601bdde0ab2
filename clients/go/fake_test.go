// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// fake is a local HTTP server standing in for abuseguard: it records
// each request and counts the connections it accepted and closed.
type fake struct {
	*httptest.Server
	mu       sync.Mutex
	requests []seen
	opened   int
	closed   chan struct{} // one value per connection closed
}

// seen is one request as the fake received it.
type seen struct {
	method, path string
	header       http.Header
	body         []byte
}

// newFake serves answer(n, w, r) for the n-th request (from 0).
func newFake(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *fake {
	t.Helper()
	f := &fake{closed: make(chan struct{}, 100)}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.requests)
		f.requests = append(f.requests, seen{r.Method, r.URL.Path, r.Header.Clone(), body})
		f.mu.Unlock()
		answer(n, w, r)
	}))
	f.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			f.mu.Lock()
			f.opened++
			f.mu.Unlock()
		case http.StateClosed, http.StateHijacked:
			f.closed <- struct{}{}
		}
	}
	f.Start()
	t.Cleanup(f.Close)
	return f
}

func (f *fake) hits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fake) connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opened
}

func (f *fake) request(n int) seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[n]
}

// reply answers every request with one status and body.
func reply(status int, body string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		write(w, status, body)
	}
}

func write(w http.ResponseWriter, status int, body string) {
	if body != "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// hang never answers: it returns when the client goes away.
func hang(_ int, _ http.ResponseWriter, r *http.Request) {
	<-r.Context().Done()
}

const allowBody = `{"allowed":true,"device":"untrusted","decisions":[]}`

// fakeClock is the breaker's clock in tests: it moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) read() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newClient makes a client of the fake with opts' other fields.
func newClient(t *testing.T, url string, opts Options) *Client {
	t.Helper()
	opts.BaseURL = url
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// closedAddr is an address nothing listens on: a connection is refused.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// countDials makes the client's dials go through dial, counting them.
func countDials(c *Client, dial func(n int, ctx context.Context, network, addr string) (net.Conn, error)) *int {
	var mu sync.Mutex
	count := 0
	c.transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		n := count
		count++
		mu.Unlock()
		return dial(n, ctx, network, addr)
	}
	return &count
}

var login = LoginCheck{User: "ana@example.com", IP: "203.0.113.7"}
var otp = OTPCheck{Phone: "+14155550100", IP: "203.0.113.7"}

func mustCheck(t *testing.T, c *Client, in LoginCheck) Verdict {
	t.Helper()
	v, err := c.CheckLogin(context.Background(), in)
	if err != nil {
		t.Fatalf("CheckLogin: %v", err)
	}
	return v
}
