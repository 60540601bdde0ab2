// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"
)

// deadProxy is where the environment's proxy variables point for every
// test of this package: an address nothing listens on. They are set
// before any test runs because net/http reads them once per process.
var deadProxy string

func TestMain(m *testing.M) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	deadProxy = l.Addr().String()
	l.Close()
	for _, name := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"} {
		os.Setenv(name, "http://"+deadProxy)
	}
	for _, name := range []string{"NO_PROXY", "no_proxy", "REQUEST_METHOD"} {
		os.Unsetenv(name)
	}
	os.Exit(m.Run())
}

// The client ignores HTTP_PROXY: the request goes straight to the
// service. (net/http never proxies a loopback address, so the base URL
// here is a name, which the test's dialer maps to the fake.)
func TestEnvironmentsProxyIsIgnored(t *testing.T) {
	f := newFake(t, reply(200, allowBody))
	c := newClient(t, "http://abuseguard.invalid:8080", Options{Retries: Int(0)})
	var mu sync.Mutex
	var dialed []string
	c.transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		mu.Unlock()
		if addr == "abuseguard.invalid:8080" {
			addr = f.Listener.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	v := mustCheck(t, c, login)
	mu.Lock()
	defer mu.Unlock()
	if !v.Allowed || v.Failed != "" || f.hits() != 1 {
		t.Fatalf("got %+v after %d requests; dialed %v (the proxy is %s)", v, f.hits(), dialed, deadProxy)
	}
	if len(dialed) != 1 || dialed[0] != "abuseguard.invalid:8080" {
		t.Fatalf("dialed %v, want only abuseguard.invalid:8080", dialed)
	}
}
