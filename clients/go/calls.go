// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// The calls' arguments. Their JSON tags are the wire names; an empty
// optional field is left out of the body (never sent as null), and so
// is a false PasswordBreached, which means the same as leaving it out.
// The required fields are always sent, so that abuseguard's 400 names
// the one left empty.

// LoginCheck is the body of CheckLogin: a login attempt, before the
// password is verified.
type LoginCheck struct {
	// User is the account name as typed (required).
	User string `json:"user"`
	// IP is the client's address (required); see ClientIP.
	IP string `json:"ip"`
	// Device is your own device identifier, for policies keyed on it.
	Device string `json:"device,omitempty"`
	// DeviceToken is the token of this user's device cookie, if any;
	// see DeviceTokenFromRequest.
	DeviceToken string `json:"device_token,omitempty"`
	// PasswordFP is the keyed digest of the password being tried; see
	// PasswordFingerprint.
	PasswordFP string `json:"password_fp,omitempty"`
	// PasswordBreached says your range lookup (Breached) found the
	// password in a breach corpus.
	PasswordBreached bool `json:"password_breached,omitempty"`
	// ChallengePassed is the ChallengeNonce of the verdict that asked
	// for a challenge, once your server verified the person passed it.
	ChallengePassed string `json:"challenge_passed,omitempty"`
	// Ref is your own reference (1 to 64 printable ASCII bytes), echoed
	// in the security events this request causes.
	Ref string `json:"ref,omitempty"`
}

// LoginReport is the body of ReportLogin: how a password check went.
type LoginReport struct {
	// User is the account name as typed (required).
	User string `json:"user"`
	// IP is the client's address (required).
	IP string `json:"ip"`
	// Success says the login went through (always sent).
	Success bool `json:"success"`
	// Reason, on a failure: "bad_password" (the default),
	// "unknown_user" or "second_factor_failed".
	Reason string `json:"reason,omitempty"`
	// Method, on a success: "password" (the default) or "recovery"
	// (your own account recovery went through).
	Method string `json:"method,omitempty"`
	// PasswordFP is the keyed digest of the password tried.
	PasswordFP string `json:"password_fp,omitempty"`
	// PasswordBreached, on a success, raises the breached_password_login
	// event: have the user change the password.
	PasswordBreached bool `json:"password_breached,omitempty"`
	// DeviceToken is the token of this user's device cookie, if any.
	DeviceToken string `json:"device_token,omitempty"`
	// ChallengePassed, on a success, is the ChallengeNonce its check
	// passed: it proves the login, which then teaches the user's usual
	// places a new country.
	ChallengePassed string `json:"challenge_passed,omitempty"`
	// Ref is your own reference, echoed in the events.
	Ref string `json:"ref,omitempty"`
}

// OTPCheck is the body of CheckOTP (before sending a code) and of
// CheckOTPVerify (before checking a code the person typed).
type OTPCheck struct {
	// Phone is the E.164 number (required).
	Phone string `json:"phone"`
	// IP is the client's address (required).
	IP string `json:"ip"`
	// User is the account, if known; a DeviceToken is trusted only
	// beside it.
	User string `json:"user,omitempty"`
	// DeviceToken is the token of this user's device cookie, if any.
	DeviceToken string `json:"device_token,omitempty"`
	// ChallengePassed is the ChallengeNonce of the verdict that asked
	// for a challenge, once your server verified the person passed it.
	ChallengePassed string `json:"challenge_passed,omitempty"`
	// Ref is your own reference, echoed in the events.
	Ref string `json:"ref,omitempty"`
}

// OTPReport is the body of ReportOTP.
type OTPReport struct {
	// Phone is the E.164 number (required).
	Phone string `json:"phone"`
	// IP is the client's address (required).
	IP string `json:"ip"`
	// Verified: the code was typed correctly (true) or expired unused
	// (false, which changes nothing). Always sent.
	Verified bool `json:"verified"`
	// User is the account, if known.
	User string `json:"user,omitempty"`
	// DeviceToken is the token of this user's device cookie, if any.
	DeviceToken string `json:"device_token,omitempty"`
	// Ref is your own reference, echoed in the events.
	Ref string `json:"ref,omitempty"`
}

// maxBody is the service's cap on a request body (64 KiB). A body over
// it would be answered 413 and the connection closed while the client
// still writes, which looks like an outage and would fail open: such a
// body is refused here, before anything is sent.
const maxBody = 64 << 10

// CheckLogin asks whether a login attempt may go on, before the
// password is verified. Without an answer the verdict is the login fail
// mode (allowed, by default). err is a *UsageError or the caller's
// context error; neither is an allow.
func (c *Client) CheckLogin(ctx context.Context, in LoginCheck) (Verdict, error) {
	return c.check(ctx, "/check-login", in, c.failOpenLogin)
}

// CheckOTP asks whether a one-time code may be sent. Without an answer
// the verdict is the OTP fail mode (denied, by default). err is a
// *UsageError or the caller's context error; neither is an allow.
func (c *Client) CheckOTP(ctx context.Context, in OTPCheck) (Verdict, error) {
	return c.check(ctx, "/check-otp", in, c.failOpenOTP)
}

// CheckOTPVerify asks whether a code the person typed may be checked
// (its own policies limit guessing). Without an answer the verdict is
// the OTP fail mode (denied, by default). err is a *UsageError or the
// caller's context error; neither is an allow.
func (c *Client) CheckOTPVerify(ctx context.Context, in OTPCheck) (Verdict, error) {
	return c.check(ctx, "/check-otp-verify", in, c.failOpenOTP)
}

// ReportLogin tells abuseguard how a password check went. A success's
// Report carries the device token to keep. An outage is a Report with
// Failed set, never an error; err is a *UsageError or the caller's
// context error (the report was then not recorded).
func (c *Client) ReportLogin(ctx context.Context, in LoginReport) (Report, error) {
	return c.report(ctx, "/report-login", in)
}

// ReportOTP tells abuseguard a code sent was verified (or expired). An
// outage is a Report with Failed set, never an error; err is a
// *UsageError or the caller's context error (the report was then not
// recorded).
func (c *Client) ReportOTP(ctx context.Context, in OTPReport) (Report, error) {
	return c.report(ctx, "/report-otp", in)
}

func (c *Client) check(ctx context.Context, path string, in any, failOpen bool) (Verdict, error) {
	body, err := marshalBody(in)
	if err != nil {
		return denied(0), err
	}
	return verdictOf(c.send(ctx, post(path, body)), failOpen)
}

func (c *Client) report(ctx context.Context, path string, in any) (Report, error) {
	body, err := marshalBody(in)
	if err != nil {
		return Report{}, err
	}
	return reportOf(c.send(ctx, post(path, body)))
}

// marshalBody is a call's JSON body, or the *UsageError of one the
// client will not send. Nothing is sent then, so the breaker never
// hears of it.
func marshalBody(in any) ([]byte, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, usage("body", "%v", err)
	}
	if len(body) > maxBody {
		return nil, &UsageError{Status: http.StatusRequestEntityTooLarge, Field: "body",
			Message: fmt.Sprintf("the request body is %d bytes, over abuseguard's %d", len(body), maxBody)}
	}
	return body, nil
}

func post(path string, body []byte) request {
	return request{method: http.MethodPost, path: path, body: body, jsonAnswer: true}
}
