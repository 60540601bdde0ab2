// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"math/rand"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The defaults of clients/README.md's option table.
const (
	// DefaultTimeout bounds one call, retries included. It sits above the
	// service's own degraded answer (50 ms after Redis stops answering,
	// plus its queue), so a hung Redis gives a degraded answer rather
	// than a client timeout.
	DefaultTimeout = 500 * time.Millisecond
	// DefaultBreakerFailures is how many calls in a row that got no
	// answer open the breaker.
	DefaultBreakerFailures = 5
	// DefaultBreakerOpen is how long the breaker stays open before one
	// call may try again.
	DefaultBreakerOpen = 10 * time.Second
	// DefaultRetries is how many times a request that abuseguard cannot
	// have read is sent again, at most.
	DefaultRetries = 2
	// DefaultIdleTimeout closes a kept-alive connection idle this long:
	// below the service's --conn-timeout-s (10 s), so that a reused
	// connection is rarely one the service is closing.
	DefaultIdleTimeout = 5 * time.Second
)

// maxIdleConns is how many idle connections the client keeps for later
// calls. Go's default of 2 would make a server answering many logins at
// once open and close a connection for most of them; 64 stays well
// under the service's --max-conns-per-ip (256 by default).
const maxIdleConns = 64

// Options configures a Client. Only BaseURL is required; every zero
// value (or nil pointer) means the default of clients/README.md.
type Options struct {
	// BaseURL is where abuseguard listens, such as
	// "http://127.0.0.1:8080": http only, as abuseguard serves plain
	// HTTP beside the application. A path, if any, is kept as a prefix.
	BaseURL string
	// Timeout is the deadline of one call, retries included (default
	// 500 ms); its passing is FailedTimeout and the fail mode. A
	// context's earlier deadline bounds a call too, but is the
	// caller's: the call then returns the context's error, beside a
	// deny.
	Timeout time.Duration
	// FailOpenLogin says whether a login check that got no answer is
	// allowed (nil: true, so an outage does not lock everyone out).
	FailOpenLogin *bool
	// FailOpenOTP says whether an OTP check (send or verify) that got
	// no answer is allowed (nil: false, as each send costs money and
	// each verification is a guess).
	FailOpenOTP *bool
	// BreakerFailures is how many calls in a row that got no answer
	// open the breaker (default 5).
	BreakerFailures int
	// BreakerOpen is how long the breaker stays open before one call
	// tries again (default 10 s).
	BreakerOpen time.Duration
	// Retries is the most times a request is sent again, and only one
	// abuseguard cannot have read (nil: 2; Int(0) never retries).
	Retries *int
	// IdleTimeout closes a kept-alive connection idle this long
	// (default 5 s).
	IdleTimeout time.Duration
	// Clock is the breaker's only time source (nil: time.Now, whose
	// readings carry the monotonic clock). Tests move it.
	Clock func() time.Time
}

// Bool returns a pointer to v, for the *bool options.
func Bool(v bool) *bool { return &v }

// Int returns a pointer to v, for the *int options.
func Int(v int) *int { return &v }

// Client calls one abuseguard service. It is safe for concurrent use
// and meant to be long-lived: it keeps connections alive between calls
// and holds the breaker's state. Close releases its idle connections.
type Client struct {
	base          *url.URL
	timeout       time.Duration
	failOpenLogin bool
	failOpenOTP   bool
	retries       int
	transport     *http.Transport
	http          *http.Client
	breaker       *breaker

	jitterMu sync.Mutex
	jitter   *rand.Rand // the backoff's full jitter; guarded by jitterMu
}

// New checks the options and makes a Client. The only error is a
// *UsageError naming the option at fault.
func New(o Options) (*Client, error) {
	base, err := parseBaseURL(o.BaseURL)
	if err != nil {
		return nil, err
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"Timeout", o.Timeout}, {"BreakerOpen", o.BreakerOpen}, {"IdleTimeout", o.IdleTimeout}} {
		if d.value < 0 {
			return nil, usage(d.name, "must not be negative, got %v", d.value)
		}
	}
	if o.BreakerFailures < 0 {
		return nil, usage("BreakerFailures", "must not be negative, got %d", o.BreakerFailures)
	}
	if o.Retries != nil && *o.Retries < 0 {
		return nil, usage("Retries", "must not be negative, got %d", *o.Retries)
	}
	clock := o.Clock
	if clock == nil {
		clock = time.Now
	}
	transport := &http.Transport{
		// No proxy, whatever HTTP_PROXY says (net/http's default
		// transport honours it): a proxy would see every user name,
		// address and fingerprint, and its errors would fail logins
		// open. abuseguard sits beside the application, reached
		// directly.
		Proxy:               nil,
		DialContext:         newDialer().DialContext,
		MaxIdleConns:        maxIdleConns,
		MaxIdleConnsPerHost: maxIdleConns,
		IdleConnTimeout:     orDefault(o.IdleTimeout, DefaultIdleTimeout),
		// abuseguard answers small JSON uncompressed; asking for gzip
		// would only add a header to every request.
		DisableCompression: true,
	}
	return &Client{
		base:          base,
		timeout:       orDefault(o.Timeout, DefaultTimeout),
		failOpenLogin: o.FailOpenLogin == nil || *o.FailOpenLogin,
		failOpenOTP:   o.FailOpenOTP != nil && *o.FailOpenOTP,
		retries:       intOr(o.Retries, DefaultRetries),
		transport:     transport,
		http: &http.Client{
			Transport: transport,
			// A redirect is not abuseguard's answer: it is a proxy's,
			// and following it would send the body elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		breaker: newBreaker(
			orDefaultInt(o.BreakerFailures, DefaultBreakerFailures),
			orDefault(o.BreakerOpen, DefaultBreakerOpen), clock),
		jitter: rand.New(rand.NewSource(time.Now().UnixNano())),
	}, nil
}

// Close closes the client's idle connections. Calls made afterwards
// still work, opening new ones.
func (c *Client) Close() {
	c.transport.CloseIdleConnections()
}

// parseBaseURL accepts an absolute http URL without a query, fragment
// or credentials; its path, without the trailing slash, prefixes every
// route. https is refused, as the other clients refuse it: abuseguard
// serves plain HTTP, so an https URL reaches something else (a proxy in
// front) or nothing.
func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, usage("BaseURL", "%v", err)
	}
	if u.Scheme != "http" || u.Host == "" {
		return nil, usage("BaseURL", "must be an http:// URL with a host, got %q", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, usage("BaseURL", "must have no query, fragment or credentials, got %q", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// url returns the address of one route.
func (c *Client) url(path string) string {
	u := *c.base
	u.Path += path
	return u.String()
}

func orDefault(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

func orDefaultInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}
