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
	// jsonAnswer says the route answers 200 with a JSON object (every
	// route but /range): without one, it was not abuseguard that
	// answered.
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
	// cancelled is the caller's context error when the caller gave up
	// (see callerGaveUp); every other field is then empty.
	cancelled error
}

// send makes one call as clients/README.md rules: past the breaker,
// under the client's deadline (and the context's, if earlier), retried
// only when the service cannot have read the request.
//
// A call whose caller gave up is not an outage ("The caller's
// cancellation is not an outage"): it comes back with cancelled set,
// never with a Failure and so never with the fail mode, and it does not
// count for the breaker. An attacker who hangs up on a login handler
// cancels its request's context at will; were that a timeout, each of
// his guesses would be let through (logins fail open) and, counted for
// the breaker, would fail everyone's logins open.
func (c *Client) send(ctx context.Context, r request) exchange {
	if err := ctx.Err(); err != nil {
		// Given up already: the breaker's trial, if due, is left for a
		// call that wants an answer.
		return exchange{cancelled: err}
	}
	p := c.breaker.admit()
	if !p.ok {
		return exchange{failed: FailedBreakerOpen}
	}
	own := time.Now().Add(c.timeout)
	callCtx, cancel := context.WithDeadline(ctx, own)
	defer cancel()
	ex := c.sendWithRetries(callCtx, r)
	switch {
	case ex.failed == "":
		// An answer stands even if the caller gave up as it arrived.
		c.breaker.record(p, answered)
	case callerGaveUp(ctx, own):
		// That says nothing of the service; an abandoned half-open
		// trial frees its slot for the next call.
		c.breaker.record(p, abandoned)
		ex = exchange{cancelled: ctx.Err()}
	default:
		c.breaker.record(p, noAnswer)
	}
	return ex
}

// callerGaveUp says whether a call that got no answer ended because the
// caller's context did: it was cancelled, or its deadline came before
// own, the client's. Once own has passed the timeout is the client's,
// whatever the context says by then.
func callerGaveUp(ctx context.Context, own time.Time) bool {
	err := ctx.Err()
	if err == nil {
		return false
	}
	deadline, ok := ctx.Deadline()
	return errors.Is(err, context.Canceled) || !ok || deadline.Before(own)
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
	case ex.status >= 500:
		// A fault, or a proxy's error: no answer.
		ex.failed = FailedUnavailable
	case r.jsonAnswer && ex.status == http.StatusOK && ex.body == nil:
		// A 200 that is not a JSON object (a captive portal's page) is
		// not abuseguard's allow. A 403 or 429 refuses whatever its
		// body, and any other status is an answer the caller must hear
		// of (verdictOf, reportOf): neither is an outage.
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
