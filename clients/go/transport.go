// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"
)

// maxAnswer caps what the client reads of one answer. A padded range
// answer, the largest abuseguard sends, is about 40 KB; anything past
// this is not abuseguard talking.
const maxAnswer = 1 << 20

// The bodies of the 503s the service sends before it reads a byte of the
// request (the connection cap's at once, a draining instance's on a
// kept-alive connection): the only 503s retried.
var capRefusals = map[string]bool{
	"too many connections from this address": true,
	"too many connections; try again":        true,
	"shutting down":                          true,
}

// A request is one route to call.
type request struct {
	method string
	path   string
	body   []byte      // JSON, nil for a GET
	header http.Header // added to the usual ones
	// jsonAnswer says the route answers a JSON object with 200, 403
	// and 429 (every route but /range): without one, it was not
	// abuseguard that answered.
	jsonAnswer bool
}

// An exchange is what a call brought back: an answer (failed empty), or
// why there was none, with the status of the last answer if any.
type exchange struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any // the JSON object answered; nil without one
	failed Failure
}

// send makes one call as clients/README.md rules: past the breaker,
// under the client's deadline (and the context's, if earlier), retried
// only when the service cannot have read the request.
func (c *Client) send(ctx context.Context, r request) exchange {
	p := c.breaker.admit()
	if !p.ok {
		return exchange{failed: FailedBreakerOpen}
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ex := c.sendWithRetries(callCtx, r)
	switch {
	case ex.failed == "":
		c.breaker.record(p, answered)
	case errors.Is(ctx.Err(), context.Canceled):
		// The caller gave up (a browser that went away cancels its
		// request's context): that says nothing of the service, and
		// an attacker who disconnects at will must not open the
		// breaker (and so fail logins open) for everyone.
		c.breaker.record(p, abandoned)
	default:
		c.breaker.record(p, noAnswer)
	}
	return ex
}

func (c *Client) sendWithRetries(ctx context.Context, r request) exchange {
	for try := 0; ; try++ {
		ex, unread := c.attempt(ctx, r)
		if !unread || try >= c.retries || !c.backoff(ctx, try) {
			return ex
		}
	}
}

// attempt sends the request once. unread says the service cannot have
// counted it (the connection was refused, or the connection cap turned
// it away unread), so that sending it again is safe.
func (c *Client) attempt(ctx context.Context, r request) (ex exchange, unread bool) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.url(r.path), body)
	if err != nil {
		return exchange{failed: FailedUnavailable}, false
	}
	for name, values := range r.header {
		req.Header[name] = values
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "abuseguard-go")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return exchange{failed: FailedTimeout}, false
		}
		return exchange{failed: FailedUnavailable}, neverSent(err)
	}
	defer resp.Body.Close()
	ex = exchange{status: resp.StatusCode, header: resp.Header}
	// Reading the answer to its end lets the connection be reused.
	ex.raw, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	switch {
	case err != nil && ctx.Err() != nil:
		ex.failed = FailedTimeout
		return ex, false
	case err != nil || len(ex.raw) > maxAnswer:
		// A reset mid-answer: the request may have counted.
		ex.failed = FailedUnavailable
		return ex, false
	}
	ex.body = jsonObject(ex.raw)
	switch {
	case ex.status == http.StatusServiceUnavailable && capRefusals[errorText(ex.body)]:
		ex.failed = FailedUnavailable
		return ex, true
	case ex.status == http.StatusServiceUnavailable && ex.body["degraded"] == true:
		// A fail-closed policy while Redis is down: an answer.
	case ex.status >= 500 || ex.status < 200 || ex.status >= 300 && ex.status < 400:
		// Not an answer of abuseguard's: a fault, a proxy's error, a
		// redirect.
		ex.failed = FailedUnavailable
	case r.jsonAnswer && ex.body == nil && (ex.status == http.StatusOK ||
		ex.status == http.StatusForbidden || ex.status == http.StatusTooManyRequests):
		ex.failed = FailedUnavailable
	}
	return ex, false
}

// neverSent says whether a transport error happened before a byte of
// the request was written: a refused connection, or any other failure
// to connect (a name that did not resolve, no route).
func neverSent(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// backoff waits before try+1: 20 ms times 2 to the try, full jitter. It
// returns false, at once, when the wait would end past the deadline.
func (c *Client) backoff(ctx context.Context, try int) bool {
	if try > 16 {
		try = 16 // 20 ms << 16 is 22 minutes: past any deadline already
	}
	ceiling := int64(20*time.Millisecond) << try
	c.jitterMu.Lock()
	wait := time.Duration(c.jitter.Int63n(ceiling + 1))
	c.jitterMu.Unlock()
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// jsonObject decodes a JSON object, or returns nil for anything else
// (an empty body, a proxy's HTML page, a /range answer).
func jsonObject(raw []byte) map[string]any {
	var v map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// errorText is the "error" sentence of an error body, or "".
func errorText(body map[string]any) string {
	s, _ := body["error"].(string)
	return s
}
