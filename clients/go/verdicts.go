// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
)

// Outcome is what a check asks of the caller.
type Outcome string

// The outcomes of a check.
const (
	// OutcomeAllow: go on (verify the password, send the code).
	OutcomeAllow Outcome = "allow"
	// OutcomeChallenge: ask for a CAPTCHA or second factor first, then
	// check again with the verdict's ChallengeNonce as ChallengePassed.
	OutcomeChallenge Outcome = "challenge"
	// OutcomeDeny: refuse; RetryAfter says when to try again.
	OutcomeDeny Outcome = "deny"
)

// Failure says why the client decided alone, without abuseguard's
// answer; the empty Failure means abuseguard answered.
type Failure string

// The reasons a call got no answer.
const (
	// FailedTimeout: the client's own Timeout passed. (A context the
	// caller cancelled, or whose deadline came first, is no Failure:
	// the call returns the context's error, beside a deny.)
	FailedTimeout Failure = "timeout"
	// FailedUnavailable: the connection failed, or the answer was no
	// answer (a 5xx, a 200 that is not a JSON object such as a captive
	// portal's page, the connection cap after the last retry).
	FailedUnavailable Failure = "unavailable"
	// FailedBreakerOpen: recent calls got no answer, so this one was
	// not sent.
	FailedBreakerOpen Failure = "breaker_open"
)

// Verdict is the answer to a check, or the client's own decision when
// there was none (Failed set).
//
// Beside an error (a *UsageError, or the caller's context error) the
// Verdict is a deny, never an allow: Outcome OutcomeDeny, Allowed
// false, Failed empty (the error says why), Status the refusing
// answer's status or 0, and nothing else set. A caller that looks only
// at the Verdict still refuses.
type Verdict struct {
	// Outcome is allow, challenge or deny; when Failed is set, the fail
	// mode (allow for logins, deny for OTP, by default).
	Outcome Outcome
	// Allowed is Outcome == OutcomeAllow.
	Allowed bool
	// RetryAfter is in whole seconds; 0 when allowed or unknown.
	RetryAfter int
	// Policy names the policy that denied or challenged; "" otherwise.
	Policy string
	// ChallengeNonce, on a challenge, goes back as ChallengePassed once
	// the person passed the challenge your server checked; "" otherwise.
	ChallengeNonce string
	// Device is the lane the check was judged in, "trusted" or
	// "untrusted"; "" without an answer.
	Device string
	// Degraded says abuseguard answered without Redis, from its
	// fallback store.
	Degraded bool
	// Failed is empty when abuseguard answered (or the call returned
	// an error), else why the client decided alone.
	Failed Failure
	// Status is the HTTP status of the answer; 0 without one.
	Status int
	// Body is the answer's JSON body as parsed, fields unknown to this
	// package included; nil without one.
	Body map[string]any
}

// Report is the answer to a report. Beside an error it is not
// recorded, with only Status set (the refusing answer's, or 0).
type Report struct {
	// Recorded says abuseguard took the report (it answered 200 or 204).
	Recorded bool
	// DeviceToken, after a login success, is the token to keep in the
	// user's device cookie (see DeviceCookie); "" otherwise.
	DeviceToken string
	// ExpiresIn is the device token's lifetime in seconds; 0 without one.
	ExpiresIn int
	// Failed is empty when abuseguard answered, else why not.
	Failed Failure
	// Status is the HTTP status of the answer; 0 without one.
	Status int
}

// verdictOf reads a check's exchange. failOpen is the fail mode of the
// check's kind, used when there was no answer.
func verdictOf(ex exchange, failOpen bool) (Verdict, error) {
	if ex.cancelled != nil {
		return denied(0), ex.cancelled
	}
	v := Verdict{Status: ex.status, Body: ex.body}
	if ex.failed == "" {
		switch ex.status {
		case http.StatusOK:
			v.Outcome = OutcomeAllow
		case http.StatusTooManyRequests, http.StatusForbidden:
			// Rate-limited (429) or deny-listed (403), whatever the body:
			// a proxy's refusal page refuses too, and its Retry-After
			// still says when to come back.
			v.Outcome = OutcomeDeny
			if ex.status == http.StatusTooManyRequests && ex.body["action"] == string(OutcomeChallenge) {
				v.Outcome = OutcomeChallenge
				v.ChallengeNonce = stringField(ex.body, "challenge_nonce")
			}
			v.Policy = stringField(ex.body, "policy")
			v.RetryAfter = retryAfter(ex)
		case http.StatusServiceUnavailable:
			// A fail-closed policy while Redis is down (attempt let only
			// the degraded 503 through).
			v.Outcome = OutcomeDeny
			v.Policy = stringField(ex.body, "policy")
			v.RetryAfter = retryAfter(ex)
		default:
			// Another 4xx, or no status a check answers (1xx, 3xx, a
			// 2xx but 200).
			return denied(ex.status), notAnAnswer(ex)
		}
	}
	if ex.failed != "" {
		v.Outcome, v.Failed = OutcomeDeny, ex.failed
		if failOpen {
			v.Outcome = OutcomeAllow
		}
	} else {
		v.Device = stringField(ex.body, "device")
		v.Degraded = ex.body["degraded"] == true
	}
	v.Allowed = v.Outcome == OutcomeAllow
	return v, nil
}

// denied is the verdict returned beside an error: a deny, so that a
// caller who reads only the verdict refuses too.
func denied(status int) Verdict {
	return Verdict{Outcome: OutcomeDeny, Status: status}
}

// reportOf reads a report's exchange.
func reportOf(ex exchange) (Report, error) {
	if ex.cancelled != nil {
		return Report{}, ex.cancelled
	}
	r := Report{Status: ex.status, Failed: ex.failed}
	if ex.failed != "" {
		return r, nil
	}
	switch ex.status {
	case http.StatusOK, http.StatusNoContent:
		r.Recorded = true
		r.DeviceToken = stringField(ex.body, "device_token")
		if r.DeviceToken != "" {
			r.ExpiresIn = intField(ex.body, "expires_in")
		}
	case http.StatusServiceUnavailable:
		// The degraded 503 attempt lets through, which no report
		// answers: not recorded, and not an answer to act on.
		r.Failed = FailedUnavailable
	default:
		// A 4xx (no report answers 403 or 429), or a status no report
		// answers (1xx, 3xx, a 2xx but 200 and 204).
		return Report{Status: ex.status}, notAnAnswer(ex)
	}
	return r, nil
}

// notAnAnswer is the usage error of an answer that is neither a verdict
// nor a report: a 4xx, with the body's field and sentence, or any other
// status a check or report never gets (a 101, a redirect, a 201), with
// no field. The latter is a BaseURL that leads elsewhere, which must be
// loud rather than fail open quietly, and it is an answer all the same
// (the breaker closes).
func notAnAnswer(ex exchange) *UsageError {
	if ex.status >= 400 && ex.status < 500 {
		msg := errorText(ex.body)
		if msg == "" {
			msg = http.StatusText(ex.status)
		}
		return &UsageError{Status: ex.status, Field: stringField(ex.body, "field"), Message: msg}
	}
	return &UsageError{Status: ex.status, Message: fmt.Sprintf(
		"%d %s is no answer of abuseguard's to this route: does BaseURL lead elsewhere?",
		ex.status, http.StatusText(ex.status))}
}

// retryAfter is a denial's wait in whole seconds: the body's, else the
// Retry-After header's, else 0 (unknown).
func retryAfter(ex exchange) int {
	if n := intField(ex.body, "retry_after"); n > 0 {
		return n
	}
	n, err := strconv.Atoi(ex.header.Get("Retry-After"))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func stringField(body map[string]any, name string) string {
	s, _ := body[name].(string)
	return s
}

// intField reads a whole number; anything else (absent, a string, a
// fraction, out of range) is 0.
func intField(body map[string]any, name string) int {
	f, ok := body[name].(float64)
	if !ok || f < 0 || f > 1<<53 || f != math.Trunc(f) {
		return 0
	}
	return int(f)
}
