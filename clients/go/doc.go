// SPDX-License-Identifier: Apache-2.0

// Package abuseguard is the Go client of abuseguard, the login and OTP
// abuse-protection service, with nothing beyond the standard library.
//
// A login handler asks before it verifies a password and reports after:
//
//	c, _ := abuseguard.New(abuseguard.Options{BaseURL: "http://127.0.0.1:8080"})
//	v, err := c.CheckLogin(ctx, abuseguard.LoginCheck{User: user, IP: ip})
//	if err == nil && !v.Allowed { /* refuse, or show v.ChallengeNonce's challenge */ }
//
// Errors are values, and only one kind is returned: *UsageError, for a
// request abuseguard refused as malformed (a 4xx other than its
// verdicts) or an option the client cannot use. An outage is never an
// error: it is a Verdict whose Failed says why the client decided alone
// (a timeout, no answer, the breaker open) and whose Outcome is the fail
// mode (logins allowed, OTP sends and verifications denied, by default).
// So a caller cannot fail open by mistake on an error an attacker can
// provoke at will, such as a 400.
//
// The rules every official client follows (timeouts, retries, the
// breaker, what each answer means) are in clients/README.md of the
// abuseguard repository; this package implements them. A Client is safe
// for concurrent use by many goroutines and should be reused: it keeps
// its connections alive between calls.
//
// The helpers (PasswordFingerprint, ClientIP, the device cookie
// functions and VerifyWebhook) need no client.
package abuseguard
