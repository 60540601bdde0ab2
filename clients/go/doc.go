// SPDX-License-Identifier: Apache-2.0

// Package abuseguard is the Go client of abuseguard, the login and OTP
// abuse-protection service, with nothing beyond the standard library.
//
// A login handler asks before it verifies a password and reports after:
//
//	c, _ := abuseguard.New(abuseguard.Options{BaseURL: "http://127.0.0.1:8080"})
//	v, err := c.CheckLogin(context.Background(), abuseguard.LoginCheck{User: user, IP: ip})
//	if err != nil || !v.Allowed { /* refuse, or show v.ChallengeNonce's challenge */ }
//
// Errors are values, of two kinds, and neither is an allow: a
// *UsageError, for a request abuseguard refused as malformed (a 4xx
// other than its verdicts), an answer that is not abuseguard's (a
// redirect), a body over the service's 64 KiB cap or an option the
// client cannot use; and the caller's context error, when ctx was
// cancelled or its deadline came before the client's own Timeout.
// Beside either, a check's Verdict is a deny. An outage is never an
// error: it is a Verdict whose Failed says why the client decided alone
// (the client's timeout, no answer, the breaker open) and whose Outcome
// is the fail mode (logins allowed, OTP sends and verifications denied,
// by default). So a caller cannot fail open by mistake on an error an
// attacker can provoke at will, such as a 400 or a hang-up.
//
// Pass a context your visitor cannot cancel, such as
// context.Background(), not a handler's r.Context(): net/http cancels
// that one when the visitor hangs up, and the check would then be a
// refusal with context.Canceled rather than abuseguard's answer. The
// client's Timeout bounds every call.
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
