// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// breakerFake answers 500 (no answer, as the breaker counts) until up is
// set, then 200.
func breakerFake(t *testing.T, up *atomic.Bool) *fake {
	return newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if up.Load() {
			write(w, 200, allowBody)
			return
		}
		write(w, 500, `{"error":"fault"}`)
	})
}

func TestBreakerOpensAfterFailuresInARowAndSkipsTheNetwork(t *testing.T) {
	var up atomic.Bool
	f := breakerFake(t, &up)
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c := newClient(t, f.URL, Options{Clock: clock.read})
	for i := 0; i < DefaultBreakerFailures; i++ {
		if v := mustCheck(t, c, login); v.Failed != FailedUnavailable {
			t.Fatalf("call %d: got %+v", i, v)
		}
	}
	v := mustCheck(t, c, login)
	if v.Failed != FailedBreakerOpen || !v.Allowed || v.Status != 0 {
		t.Fatalf("got %+v", v)
	}
	vo, _ := c.CheckOTP(context.Background(), otp)
	if vo.Failed != FailedBreakerOpen || vo.Allowed {
		t.Fatalf("otp: got %+v", vo)
	}
	r, err := c.ReportLogin(context.Background(), LoginReport{User: "u", IP: "ip"})
	if err != nil || r != (Report{Failed: FailedBreakerOpen}) {
		t.Fatalf("report: got %+v, %v", r, err)
	}
	if b, err := c.Breached(context.Background(), "pw"); b != BreachUnknown || err != nil {
		t.Fatalf("breached: got %v, %v", b, err)
	}
	up.Store(true)
	clock.advance(DefaultBreakerOpen - time.Millisecond)
	if v := mustCheck(t, c, login); v.Failed != FailedBreakerOpen {
		t.Fatalf("still open: got %+v", v)
	}
	if f.hits() != DefaultBreakerFailures {
		t.Fatalf("an open breaker made network calls: %d", f.hits())
	}
}

func TestBreakerHalfOpenTrialClosesOnAnAnswer(t *testing.T) {
	var up atomic.Bool
	f := breakerFake(t, &up)
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c := newClient(t, f.URL, Options{Clock: clock.read, BreakerFailures: 2, BreakerOpen: time.Minute})
	mustCheck(t, c, login)
	mustCheck(t, c, login)
	clock.advance(time.Minute)
	// The trial gets no answer: open for another period.
	if v := mustCheck(t, c, login); v.Failed != FailedUnavailable {
		t.Fatalf("trial: got %+v", v)
	}
	if v := mustCheck(t, c, login); v.Failed != FailedBreakerOpen {
		t.Fatalf("reopened: got %+v", v)
	}
	clock.advance(time.Minute - time.Millisecond)
	if v := mustCheck(t, c, login); v.Failed != FailedBreakerOpen {
		t.Fatalf("a new period: got %+v", v)
	}
	clock.advance(time.Millisecond)
	up.Store(true)
	if v := mustCheck(t, c, login); v.Failed != "" || !v.Allowed {
		t.Fatalf("trial answered: got %+v", v)
	}
	// Closed, with its count reset: one failure does not open it.
	up.Store(false)
	mustCheck(t, c, login)
	if v := mustCheck(t, c, login); v.Failed != FailedUnavailable {
		t.Fatalf("closed: got %+v", v)
	}
	if f.hits() != 6 {
		t.Fatalf("want 6 requests, got %d", f.hits())
	}
}

func TestBreakerLetsOneTrialThroughAtATime(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var up atomic.Bool
	f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			write(w, 500, "")
			return
		}
		entered <- struct{}{}
		<-release
		write(w, 200, allowBody)
	})
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c := newClient(t, f.URL, Options{Clock: clock.read, BreakerFailures: 1, Timeout: time.Minute})
	mustCheck(t, c, login)
	clock.advance(DefaultBreakerOpen)
	up.Store(true)
	trial := make(chan Verdict)
	go func() {
		v, _ := c.CheckLogin(context.Background(), login)
		trial <- v
	}()
	<-entered
	if v := mustCheck(t, c, login); v.Failed != FailedBreakerOpen {
		t.Fatalf("beside the trial: got %+v", v)
	}
	close(release)
	if v := <-trial; v.Failed != "" {
		t.Fatalf("trial: got %+v", v)
	}
}

func TestBreakerCountResetsOnAnyAnswer(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		switch n {
		case 2:
			write(w, 400, `{"error":"user is empty","field":"user"}`)
		case 5:
			write(w, 503, `{"allowed":false,"reason":"store_unavailable","policy":"p","retry_after":1,
				"device":"untrusted","degraded":true}`)
		default:
			write(w, 500, "")
		}
	})
	c := newClient(t, f.URL, Options{BreakerFailures: 3})
	for n := 0; n < 9; n++ {
		v, _ := c.CheckLogin(context.Background(), login)
		if v.Failed == FailedBreakerOpen {
			t.Fatalf("call %d: the breaker opened", n)
		}
	}
	if v := mustCheck(t, c, login); v.Failed != FailedBreakerOpen {
		t.Fatalf("three failures in a row: got %+v", v)
	}
}

func TestCallerCancellationDoesNotCountForTheBreaker(t *testing.T) {
	var up atomic.Bool
	f := breakerFake(t, &up)
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c := newClient(t, f.URL, Options{Clock: clock.read, BreakerFailures: 1})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 3; i++ {
		v, err := c.CheckLogin(cancelled, login)
		if !errors.Is(err, context.Canceled) || v.Allowed || v.Failed != "" {
			t.Fatalf("got %+v, %v", v, err)
		}
	}
	if v := mustCheck(t, c, login); v.Failed != FailedUnavailable {
		t.Fatalf("the cancelled calls opened the breaker: got %+v", v)
	}
}

// The half-open trial's caller hangs up mid-call: that decided nothing,
// so the next call is the trial, at once.
func TestAbandonedHalfOpenTrialFreesItsSlot(t *testing.T) {
	entered := make(chan struct{})
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 0:
			write(w, 500, "")
		case 1:
			enteredThenHang(entered)(n, w, r)
		default:
			write(w, 200, allowBody)
		}
	})
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c := newClient(t, f.URL, Options{Clock: clock.read, BreakerFailures: 1, Timeout: time.Minute})
	mustCheck(t, c, login)
	clock.advance(DefaultBreakerOpen)
	v, err := c.CheckLogin(cancelOnEntry(entered), login)
	if !errors.Is(err, context.Canceled) || v.Allowed {
		t.Fatalf("trial: got %+v, %v", v, err)
	}
	if v := mustCheck(t, c, login); v.Failed != "" || !v.Allowed {
		t.Fatalf("after an abandoned trial: got %+v", v)
	}
}
