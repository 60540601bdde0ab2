// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"sync"
	"time"
)

// The breaker of clients/README.md: calls that got no answer, in a row,
// open it; while open every call returns at once without the network;
// once the open period has passed on the client's clock one call goes
// through (half-open), and its result closes the breaker or opens it
// for another period. Any answer, a usage error or a degraded one too,
// closes it and resets the count.
//
// Its only time source is the injected clock, so tests move time rather
// than wait for it. It is safe for concurrent use.
type breaker struct {
	threshold int
	openFor   time.Duration
	clock     func() time.Time

	mu       sync.Mutex
	failures int // calls in a row that got no answer
	state    breakerState
	openedAt time.Time // when it last opened (state open or trying)
}

type breakerState int

const (
	breakerClosed breakerState = iota
	breakerOpen
	breakerTrying // half-open: one call is out, every other is refused
)

// A pass is what admit lets through: whether the call may go on, and
// whether it is the half-open trial whose result decides the breaker.
type pass struct {
	ok    bool
	trial bool
}

// The result of a call as the breaker counts it.
type result int

const (
	answered  result = iota // abuseguard answered, whatever it said
	noAnswer                // timeout or unavailable
	abandoned               // the caller cancelled: says nothing of the service
)

func newBreaker(threshold int, openFor time.Duration, clock func() time.Time) *breaker {
	return &breaker{threshold: threshold, openFor: openFor, clock: clock}
}

// admit decides whether a call may go to the network now.
func (b *breaker) admit() pass {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case breakerClosed:
		return pass{ok: true}
	case breakerOpen:
		if b.clock().Sub(b.openedAt) >= b.openFor {
			b.state = breakerTrying
			return pass{ok: true, trial: true}
		}
	}
	return pass{}
}

// record counts the result of a call admit let through.
func (b *breaker) record(p pass, r result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case r == answered:
		// Even a call begun before the breaker opened proves the
		// service answers again.
		b.state, b.failures = breakerClosed, 0
	case r == abandoned:
		// A trial the caller gave up on decided nothing: let the next
		// call try instead, at once, since the period has passed.
		if p.trial && b.state == breakerTrying {
			b.state = breakerOpen
		}
	case p.trial && b.state == breakerTrying:
		b.state, b.openedAt = breakerOpen, b.clock()
	case b.state == breakerClosed:
		b.failures++
		if b.failures >= b.threshold {
			b.state, b.openedAt = breakerOpen, b.clock()
		}
	}
	// A failure of a call begun before the breaker opened, arriving
	// while it is open or trying, changes nothing: the period already
	// runs, and the trial decides.
}
