// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// The caller's cancellation is not an outage (clients/README.md): an
// attacker who hangs up on a login handler cancels its request's
// context, and must get a refusal, never the fail mode's allow.

// enteredThenHang signals each request it receives on entered, then
// waits until the client goes away.
func enteredThenHang(entered chan<- struct{}) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, _ http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-r.Context().Done()
	}
}

// cancelOnEntry is a context cancelled once the fake has the request.
func cancelOnEntry(entered <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-entered
		cancel()
	}()
	return ctx
}

func TestCallerCancellingMidCallGetsContextCanceledBesideADeny(t *testing.T) {
	entered := make(chan struct{})
	f := newFake(t, enteredThenHang(entered))
	// Logins fail open and the client's own timeout is far off: only
	// the caller's cancellation can end these calls.
	c := newClient(t, f.URL, Options{Timeout: time.Minute, FailOpenOTP: Bool(true)})
	for name, check := range map[string]func(context.Context) (Verdict, error){
		"CheckLogin":     func(ctx context.Context) (Verdict, error) { return c.CheckLogin(ctx, login) },
		"CheckOTP":       func(ctx context.Context) (Verdict, error) { return c.CheckOTP(ctx, otp) },
		"CheckOTPVerify": func(ctx context.Context) (Verdict, error) { return c.CheckOTPVerify(ctx, otp) },
	} {
		v, err := check(cancelOnEntry(entered))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: want context.Canceled, got %v", name, err)
		}
		if v.Allowed || v.Outcome != OutcomeDeny || v.Failed != "" || v.Status != 0 {
			t.Fatalf("%s: got %+v", name, v)
		}
	}
}

func TestCallerCancellingAReportOrALookupGetsContextCanceled(t *testing.T) {
	entered := make(chan struct{})
	f := newFake(t, enteredThenHang(entered))
	c := newClient(t, f.URL, Options{Timeout: time.Minute})
	r, err := c.ReportLogin(cancelOnEntry(entered), LoginReport{User: "u", IP: "ip"})
	if !errors.Is(err, context.Canceled) || r != (Report{}) {
		t.Fatalf("report: got %+v, %v", r, err)
	}
	r, err = c.ReportOTP(cancelOnEntry(entered), OTPReport{Phone: "+1", IP: "ip"})
	if !errors.Is(err, context.Canceled) || r.Recorded {
		t.Fatalf("otp report: got %+v, %v", r, err)
	}
	b, err := c.Breached(cancelOnEntry(entered), "pw")
	if !errors.Is(err, context.Canceled) || b != BreachUnknown {
		t.Fatalf("breached: got %v, %v", b, err)
	}
}

func TestContextCancelledBeforeTheCallSendsNothing(t *testing.T) {
	f := newFake(t, reply(200, allowBody))
	c := newClient(t, f.URL, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v, err := c.CheckLogin(ctx, login)
	if !errors.Is(err, context.Canceled) || v.Allowed || v.Outcome != OutcomeDeny {
		t.Fatalf("got %+v, %v", v, err)
	}
	if f.hits() != 0 {
		t.Fatalf("sent %d requests", f.hits())
	}
}

// An open breaker's verdict is the fail mode; a caller who gave up gets
// its context's error even then.
func TestCancelledCallNeverGetsTheOpenBreakersFailMode(t *testing.T) {
	f := newFake(t, reply(500, ""))
	c := newClient(t, f.URL, Options{BreakerFailures: 1})
	mustCheck(t, c, login)
	if v := mustCheck(t, c, login); v.Failed != FailedBreakerOpen || !v.Allowed {
		t.Fatalf("the breaker did not open: %+v", v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v, err := c.CheckLogin(ctx, login)
	if !errors.Is(err, context.Canceled) || v.Allowed || v.Failed != "" {
		t.Fatalf("got %+v, %v", v, err)
	}
}

// A context deadline before the client's own is the caller's: its error,
// beside a deny, and not counted for the breaker.
func TestEarlierContextDeadlineIsTheCallersNotATimeout(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			hang(n, w, r)
			return
		}
		write(w, 200, allowBody)
	})
	c := newClient(t, f.URL, Options{Timeout: time.Hour, BreakerFailures: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	v, err := c.CheckLogin(ctx, login)
	if !errors.Is(err, context.DeadlineExceeded) || v.Allowed || v.Outcome != OutcomeDeny || v.Failed != "" {
		t.Fatalf("got %+v, %v", v, err)
	}
	if v := mustCheck(t, c, login); !v.Allowed || v.Failed != "" {
		t.Fatalf("the breaker counted the caller's deadline: got %+v", v)
	}
}

// The client's own Timeout is an outage: the fail mode, no error, even
// when the context has a later deadline of its own.
func TestOwnTimeoutStaysATimeoutBesideALaterContextDeadline(t *testing.T) {
	f := newFake(t, hang)
	c := newClient(t, f.URL, Options{Timeout: 30 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	v, err := c.CheckLogin(ctx, login)
	if err != nil || v.Failed != FailedTimeout || !v.Allowed {
		t.Fatalf("login: got %+v, %v", v, err)
	}
	r, err := c.ReportLogin(ctx, LoginReport{User: "u", IP: "ip"})
	if err != nil || r != (Report{Failed: FailedTimeout}) {
		t.Fatalf("report: got %+v, %v", r, err)
	}
}

func TestCallerGaveUpTellsTheCallersDeadlineFromTheClients(t *testing.T) {
	// own, the client's deadline, and every deadline near it below have
	// passed: each context is done when asked.
	own := time.Now().Add(-time.Minute)
	at := func(deadline time.Time) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		t.Cleanup(cancel)
		return ctx
	}
	cancelled := func(deadline time.Time) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		cancel()
		return ctx
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"not done", context.Background(), false},
		{"cancelled, its deadline far off", cancelled(time.Now().Add(time.Hour)), true},
		{"its deadline before the client's", at(own.Add(-time.Millisecond)), true},
		{"its deadline the client's", at(own), false},
		{"its deadline after the client's", at(own.Add(time.Millisecond)), false},
	} {
		if got := callerGaveUp(c.ctx, own); got != c.want {
			t.Errorf("%s (%v): got %v", c.name, c.ctx.Err(), got)
		}
	}
}
