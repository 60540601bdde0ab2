// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
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
	// FailedTimeout: the call's deadline passed (the client's timeout,
	// or the context's).
	FailedTimeout Failure = "timeout"
	// FailedUnavailable: the connection failed, or an answer was not
	// abuseguard's (a 5xx, a proxy's page, the connection cap after
	// the last retry).
	FailedUnavailable Failure = "unavailable"
	// FailedBreakerOpen: recent calls got no answer, so this one was
	// not sent.
	FailedBreakerOpen Failure = "breaker_open"
)

// Verdict is the answer to a check, or the client's own decision when
// there was none (Failed set).
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
	// Failed is empty when abuseguard answered, else why the client
	// decided alone.
	Failed Failure
	// Status is the HTTP status of the answer; 0 without one.
	Status int
	// Body is the answer's JSON body as parsed, fields unknown to this
	// package included; nil without one.
	Body map[string]any
}

// Report is the answer to a report.
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
	v := Verdict{Status: ex.status, Body: ex.body}
	if ex.failed == "" {
		switch ex.status {
		case http.StatusOK:
			v.Outcome = OutcomeAllow
		case http.StatusTooManyRequests:
			v.Outcome = OutcomeDeny
			if ex.body["action"] == string(OutcomeChallenge) {
				v.Outcome = OutcomeChallenge
				v.ChallengeNonce = stringField(ex.body, "challenge_nonce")
			}
			v.Policy = stringField(ex.body, "policy")
			v.RetryAfter = retryAfter(ex)
		case http.StatusForbidden:
			// Deny-listed: no policy, and nothing to wait for.
			v.Outcome = OutcomeDeny
		case http.StatusServiceUnavailable:
			// A fail-closed policy while Redis is down (attempt let only
			// the degraded 503 through).
			v.Outcome = OutcomeDeny
			v.Policy = stringField(ex.body, "policy")
			v.RetryAfter = retryAfter(ex)
		default:
			if err := usageOf(ex); err != nil {
				return Verdict{}, err
			}
			// A 2xx no check answers: not abuseguard's.
			ex.failed = FailedUnavailable
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

// reportOf reads a report's exchange.
func reportOf(ex exchange) (Report, error) {
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
	default:
		if err := usageOf(ex); err != nil {
			return Report{}, err
		}
		// A status no report answers (a 403, a 429, a degraded 503):
		// not recorded, and not abuseguard's rules at work.
		r.Failed = FailedUnavailable
	}
	return r, nil
}

// usageOf is the usage error of a 4xx that is not a verdict, or nil.
func usageOf(ex exchange) *UsageError {
	if ex.status < 400 || ex.status >= 500 {
		return nil
	}
	msg := errorText(ex.body)
	if msg == "" {
		msg = http.StatusText(ex.status)
	}
	return &UsageError{Status: ex.status, Field: stringField(ex.body, "field"), Message: msg}
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
