// SPDX-License-Identifier: Apache-2.0

// Command go is the Go client's conformance driver (clients/README.md,
// "The conformance driver"): one JSON request a line on stdin, one JSON
// answer a line on stdout, so that tests/integration/test_conformance.py
// runs the same scenario through every client and compares the answers.
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	abuseguard "github.com/abuseguard/abuseguard/clients/go"
)

// command is one line of input.
type command struct {
	ID   json.RawMessage `json:"id"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args"`
}

// optional lists the calls' optional string fields: the Go client
// leaves an empty one out, as encoding/json's omitempty does, so it has
// no way to send one set to "".
var optional = map[string]bool{
	"device": true, "device_token": true, "password_fp": true, "challenge_passed": true,
	"ref": true, "reason": true, "method": true,
}

// args holds every op's arguments by their wire names; a pointer is nil
// when the argument was not given.
type args struct {
	BaseURL         string            `json:"base_url"`
	TimeoutMS       *int              `json:"timeout_ms"`
	FailOpenLogin   *bool             `json:"fail_open_login"`
	FailOpenOTP     *bool             `json:"fail_open_otp"`
	BreakerFailures *int              `json:"breaker_failures"`
	BreakerOpenMS   *int              `json:"breaker_open_ms"`
	Retries         *int              `json:"retries"`
	MS              int64             `json:"ms"`
	User            string            `json:"user"`
	IP              string            `json:"ip"`
	Phone           string            `json:"phone"`
	Device          string            `json:"device"`
	DeviceToken     string            `json:"device_token"`
	PasswordFP      string            `json:"password_fp"`
	PasswordBreach  bool              `json:"password_breached"`
	ChallengePassed any               `json:"challenge_passed"`
	Ref             string            `json:"ref"`
	Success         bool              `json:"success"`
	Verified        bool              `json:"verified"`
	Reason          string            `json:"reason"`
	Method          string            `json:"method"`
	Password        string            `json:"password"`
	KeyHex          string            `json:"key_hex"`
	RemoteAddr      string            `json:"remote_addr"`
	Headers         map[string]string `json:"headers"`
	TrustedProxies  []string          `json:"trusted_proxies"`
	Header          string            `json:"header"`
	UserID          string            `json:"user_id"`
	Token           string            `json:"token"`
	MaxAge          int               `json:"max_age"`
	Secure          *bool             `json:"secure"`
	CookieHeader    string            `json:"cookie_header"`
	SecretHex       string            `json:"secret_hex"`
	Body            string            `json:"body"`
	Now             float64           `json:"now"`
	Tolerance       *float64          `json:"tolerance"`
}

// driver is the state the ops share: the client and its clock's offset.
type driver struct {
	client *abuseguard.Client
	offset time.Duration
}

func main() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	d := &driver{}
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			out.Write(d.handle(line))
			out.WriteByte('\n')
			out.Flush()
		}
		if err != nil {
			return
		}
	}
}

// handle answers one line.
func (d *driver) handle(line []byte) []byte {
	var cmd command
	answer := map[string]any{}
	if err := json.Unmarshal(line, &cmd); err != nil {
		answer["error"] = "bad command: " + err.Error()
		return mustJSON(answer)
	}
	answer["id"] = cmd.ID
	var a args
	var given map[string]any
	if len(cmd.Args) > 0 {
		if err := json.Unmarshal(cmd.Args, &a); err != nil {
			answer["error"] = "bad args: " + err.Error()
			return mustJSON(answer)
		}
		json.Unmarshal(cmd.Args, &given)
	}
	for name, v := range given {
		if v == "" && (optional[name] || name == "user" && cmd.Op != "check_login" && cmd.Op != "report_login") {
			answer["error"] = fmt.Sprintf("%s is \"\": the Go client cannot send an empty optional field", name)
			return mustJSON(answer)
		}
	}
	result, err := d.run(cmd.Op, a)
	var ue *abuseguard.UsageError
	switch {
	case errors.As(err, &ue):
		answer["usage_error"] = map[string]any{"status": ue.Status, "field": nullable(ue.Field)}
	case err != nil:
		answer["error"] = err.Error()
	default:
		answer["result"] = result
	}
	return mustJSON(answer)
}

func (d *driver) run(op string, a args) (any, error) {
	ctx := context.Background()
	switch op {
	case "new_client":
		return nil, d.newClient(a)
	case "advance_clock":
		d.offset += time.Duration(a.MS) * time.Millisecond
		return nil, nil
	case "password_fingerprint":
		key, err := hex.DecodeString(a.KeyHex)
		if err != nil {
			return nil, err
		}
		fp, err := abuseguard.PasswordFingerprint(key, a.Password)
		if err != nil {
			return map[string]string{"error": "key"}, nil
		}
		return fp, nil
	case "client_ip":
		trusted, err := abuseguard.ParseTrustedProxies(a.TrustedProxies)
		if err != nil {
			return nil, err
		}
		h := http.Header{}
		for name, value := range a.Headers {
			h.Add(name, value)
		}
		return abuseguard.ClientIP(a.RemoteAddr, h, trusted, a.Header), nil
	case "device_cookie":
		header, err := abuseguard.DeviceSetCookie(a.UserID, a.Token, a.MaxAge, a.Secure == nil || *a.Secure)
		if err != nil {
			return nil, err
		}
		return map[string]string{"name": abuseguard.DeviceCookieName(a.UserID), "set_cookie": header}, nil
	case "device_cookie_name":
		return abuseguard.DeviceCookieName(a.UserID), nil
	case "device_token_from_cookies":
		return nullable(abuseguard.DeviceTokenFromCookies(a.CookieHeader, a.UserID)), nil
	case "verify_webhook":
		secret, err := hex.DecodeString(a.SecretHex)
		if err != nil {
			return nil, err
		}
		now := time.Unix(0, int64(a.Now*float64(time.Second)))
		tolerance := abuseguard.DefaultWebhookTolerance
		if a.Tolerance != nil {
			tolerance = time.Duration(*a.Tolerance * float64(time.Second))
		}
		return abuseguard.VerifyWebhook(secret, []byte(a.Body), a.Header, now, tolerance), nil
	}
	if d.client == nil {
		return nil, fmt.Errorf("%s before new_client", op)
	}
	return d.call(ctx, op, a)
}

// call runs the ops that need the client.
func (d *driver) call(ctx context.Context, op string, a args) (any, error) {
	c := d.client
	switch op {
	case "breached":
		if a.TimeoutMS == nil {
			return c.Breached(ctx, a.Password)
		}
		// Go spells the lookup's own timeout as a context deadline.
		// When it passes first, Breached returns the context's error
		// beside BreachUnknown: the "unknown" of a timeout.
		ctx, cancel := context.WithTimeout(ctx, time.Duration(*a.TimeoutMS)*time.Millisecond)
		defer cancel()
		b, err := c.Breached(ctx, a.Password)
		if errors.Is(err, context.DeadlineExceeded) {
			err = nil
		}
		return b, err
	case "report_login":
		r, err := c.ReportLogin(ctx, abuseguard.LoginReport{User: a.User, IP: a.IP, Success: a.Success,
			Reason: a.Reason, Method: a.Method, PasswordFP: a.PasswordFP, PasswordBreached: a.PasswordBreach,
			DeviceToken: a.DeviceToken, Ref: a.Ref})
		return reportJSON(r), err
	case "report_otp":
		r, err := c.ReportOTP(ctx, abuseguard.OTPReport{Phone: a.Phone, IP: a.IP, Verified: a.Verified,
			User: a.User, DeviceToken: a.DeviceToken, Ref: a.Ref})
		return reportJSON(r), err
	}
	passed, err := challengePassed(a.ChallengePassed)
	if err != nil {
		return nil, err
	}
	var v abuseguard.Verdict
	switch op {
	case "check_login":
		v, err = c.CheckLogin(ctx, abuseguard.LoginCheck{User: a.User, IP: a.IP, Device: a.Device,
			DeviceToken: a.DeviceToken, PasswordFP: a.PasswordFP, PasswordBreached: a.PasswordBreach,
			ChallengePassed: passed, Ref: a.Ref})
	case "check_otp", "check_otp_verify":
		in := abuseguard.OTPCheck{Phone: a.Phone, IP: a.IP, User: a.User, DeviceToken: a.DeviceToken,
			ChallengePassed: passed, Ref: a.Ref}
		if op == "check_otp" {
			v, err = c.CheckOTP(ctx, in)
		} else {
			v, err = c.CheckOTPVerify(ctx, in)
		}
	default:
		return nil, fmt.Errorf("unknown op %q", op)
	}
	return verdictJSON(v), err
}

func (d *driver) newClient(a args) error {
	o := abuseguard.Options{
		BaseURL:       a.BaseURL,
		FailOpenLogin: a.FailOpenLogin,
		FailOpenOTP:   a.FailOpenOTP,
		Retries:       a.Retries,
		// The monotonic clock (time.Now's readings carry it) plus the
		// offset advance_clock moves.
		Clock: func() time.Time { return time.Now().Add(d.offset) },
	}
	if a.TimeoutMS != nil {
		o.Timeout = time.Duration(*a.TimeoutMS) * time.Millisecond
	}
	if a.BreakerFailures != nil {
		o.BreakerFailures = *a.BreakerFailures
	}
	if a.BreakerOpenMS != nil {
		o.BreakerOpen = time.Duration(*a.BreakerOpenMS) * time.Millisecond
	}
	if d.client != nil {
		d.client.Close()
	}
	c, err := abuseguard.New(o)
	d.client = c
	return err
}

// challengePassed takes a nonce; false is as absent. The Go client
// sends only nonces: true, which proves nothing, has no spelling in it.
func challengePassed(v any) (string, error) {
	switch v := v.(type) {
	case nil, bool:
		if v == true {
			return "", errors.New("challenge_passed true: the Go client takes only a nonce")
		}
		return "", nil
	case string:
		return v, nil
	}
	return "", fmt.Errorf("challenge_passed %v: not a string", v)
}

func verdictJSON(v abuseguard.Verdict) map[string]any {
	return map[string]any{
		"outcome": v.Outcome, "allowed": v.Allowed, "retry_after": v.RetryAfter,
		"policy": nullable(v.Policy), "challenge_nonce": nullable(v.ChallengeNonce),
		"device": nullable(v.Device), "degraded": v.Degraded, "failed": nullable(string(v.Failed)),
		"status": v.Status,
	}
}

func reportJSON(r abuseguard.Report) map[string]any {
	return map[string]any{
		"recorded": r.Recorded, "device_token": nullable(r.DeviceToken), "expires_in": r.ExpiresIn,
		"failed": nullable(string(r.Failed)), "status": r.Status,
	}
}

// nullable is the JSON of a Go string the client leaves empty for none.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(fmt.Sprintf(`{"error":%q}`, err.Error()))
	}
	return b
}
