// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestAllowedAnswerIsAllow(t *testing.T) {
	f := newFake(t, reply(200, allowBody))
	v := mustCheck(t, newClient(t, f.URL, Options{}), login)
	want := Verdict{Outcome: OutcomeAllow, Allowed: true, Device: "untrusted", Status: 200, Body: v.Body}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %+v, want %+v", v, want)
	}
	r := f.request(0)
	if r.method != "POST" || r.path != "/check-login" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("sent %s %s %v", r.method, r.path, r.header)
	}
}

func TestBadRequestIsUsageErrorWithField(t *testing.T) {
	f := newFake(t, reply(400, `{"error":"user is empty","field":"user"}`))
	v, err := newClient(t, f.URL, Options{}).CheckLogin(context.Background(), login)
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("want a *UsageError, got %v (verdict %+v)", err, v)
	}
	if ue.Status != 400 || ue.Field != "user" || ue.Message != "user is empty" {
		t.Fatalf("got %+v", ue)
	}
	if v.Allowed {
		t.Fatal("a usage error must never come with an allowed verdict")
	}
}

func TestOtherClientErrorsAreUsageErrorsWithoutField(t *testing.T) {
	for _, status := range []int{401, 404, 405, 413, 415} {
		f := newFake(t, reply(status, `<html>not json</html>`))
		_, err := newClient(t, f.URL, Options{}).CheckOTP(context.Background(), otp)
		var ue *UsageError
		if !errors.As(err, &ue) || ue.Status != status || ue.Field != "" || ue.Message != http.StatusText(status) {
			t.Fatalf("%d: got %#v", status, err)
		}
	}
}

func TestChallengeCarriesNonce(t *testing.T) {
	f := newFake(t, reply(429, `{"allowed":false,"policy":"login.user_ip","action":"challenge",
		"retry_after":900,"challenge_nonce":"c1.nonce","device":"untrusted","decisions":[]}`))
	v := mustCheck(t, newClient(t, f.URL, Options{}), login)
	if v.Outcome != OutcomeChallenge || v.Allowed || v.RetryAfter != 900 || v.Policy != "login.user_ip" ||
		v.ChallengeNonce != "c1.nonce" || v.Device != "untrusted" || v.Status != 429 || v.Failed != "" {
		t.Fatalf("got %+v", v)
	}
}

func TestRateLimitedIsDeny(t *testing.T) {
	f := newFake(t, reply(429, `{"allowed":false,"policy":"login.user","action":"deny",
		"retry_after":60,"device":"trusted","decisions":[]}`))
	v := mustCheck(t, newClient(t, f.URL, Options{}), login)
	if v.Outcome != OutcomeDeny || v.RetryAfter != 60 || v.Policy != "login.user" || v.ChallengeNonce != "" ||
		v.Device != "trusted" {
		t.Fatalf("got %+v", v)
	}
}

func TestDenyListedIsDeny(t *testing.T) {
	f := newFake(t, reply(403, `{"allowed":false,"list":"deny","device":"untrusted",
		"decisions":[{"list":"deny","id":7,"kind":"ip","allowed":false}]}`))
	v := mustCheck(t, newClient(t, f.URL, Options{}), login)
	if v.Outcome != OutcomeDeny || v.Allowed || v.RetryAfter != 0 || v.Policy != "" || v.Status != 403 ||
		v.Failed != "" {
		t.Fatalf("got %+v", v)
	}
}

func TestDegradedAllowIsAllowMarkedDegraded(t *testing.T) {
	f := newFake(t, reply(200, `{"allowed":true,"degraded":true,"device":"untrusted","decisions":[]}`))
	v := mustCheck(t, newClient(t, f.URL, Options{}), login)
	if !v.Allowed || !v.Degraded || v.Failed != "" {
		t.Fatalf("got %+v", v)
	}
}

func TestDegraded503IsDenyEvenForLogins(t *testing.T) {
	f := newFake(t, reply(503, `{"allowed":false,"reason":"store_unavailable","policy":"login.user",
		"retry_after":1,"device":"untrusted","degraded":true}`))
	v := mustCheck(t, newClient(t, f.URL, Options{}), login)
	if v.Outcome != OutcomeDeny || !v.Degraded || v.Policy != "login.user" || v.RetryAfter != 1 ||
		v.Failed != "" || v.Status != 503 {
		t.Fatalf("got %+v", v)
	}
	if f.hits() != 1 {
		t.Fatalf("a degraded answer is an answer, never retried: %d requests", f.hits())
	}
}

// retryTimeout is ample for every retry's backoff (at most 20 + 40 ms)
// on a loaded machine, so that the tests count every try.
const retryTimeout = 10 * time.Second

const capBody = `{"error":"too many connections from this address"}`

func TestConnectionCap503IsRetriedThenSucceeds(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			w.Header().Set("Connection", "close")
			write(w, 503, capBody)
			return
		}
		write(w, 200, allowBody)
	})
	c := newClient(t, f.URL, Options{FailOpenLogin: Bool(false), Timeout: retryTimeout})
	v := mustCheck(t, c, login)
	if !v.Allowed || v.Failed != "" || f.hits() != 2 {
		t.Fatalf("got %+v after %d requests", v, f.hits())
	}
}

func TestADrainingInstances503IsRetried(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			w.Header().Set("Connection", "close")
			write(w, 503, `{"error":"shutting down"}`)
			return
		}
		write(w, 200, allowBody)
	})
	c := newClient(t, f.URL, Options{FailOpenLogin: Bool(false), Timeout: retryTimeout})
	v := mustCheck(t, c, login)
	if !v.Allowed || v.Failed != "" || f.hits() != 2 {
		t.Fatalf("got %+v after %d requests", v, f.hits())
	}
}

func TestConnectionCapAfterLastRetryIsUnavailable(t *testing.T) {
	f := newFake(t, reply(503, `{"error":"too many connections; try again"}`))
	v, err := newClient(t, f.URL, Options{Timeout: retryTimeout}).CheckOTP(context.Background(), otp)
	if err != nil || v.Failed != FailedUnavailable || v.Allowed || v.Status != 503 {
		t.Fatalf("got %+v, %v", v, err)
	}
	if f.hits() != 1+DefaultRetries {
		t.Fatalf("want %d tries, got %d", 1+DefaultRetries, f.hits())
	}
}

func TestOtherServerErrorsAreUnavailableAndNotRetried(t *testing.T) {
	for _, answer := range []struct {
		status int
		body   string
	}{{500, `{"error":"database row unreadable"}`}, {503, `{"error":"policies are not loaded yet"}`}, {502, "bad gateway"}} {
		f := newFake(t, reply(answer.status, answer.body))
		v := mustCheck(t, newClient(t, f.URL, Options{}), login)
		if v.Failed != FailedUnavailable || !v.Allowed || v.Policy != "" || v.Device != "" || f.hits() != 1 {
			t.Fatalf("%d: got %+v after %d requests", answer.status, v, f.hits())
		}
	}
}

func TestRedirectIsNotFollowedButAUsageError(t *testing.T) {
	f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	})
	v, err := newClient(t, f.URL, Options{}).CheckLogin(context.Background(), login)
	var ue *UsageError
	if !errors.As(err, &ue) || ue.Status != 307 || ue.Field != "" || v.Allowed || v.Outcome != OutcomeDeny ||
		f.hits() != 1 {
		t.Fatalf("got %+v, %v after %d requests", v, err, f.hits())
	}
}

// A status no check or report answers means the BaseURL leads elsewhere:
// loud, with no field, never the fail mode (a login let through), and an
// answer all the same, so the breaker does not count it.
func TestStatusNoCheckOrReportAnswersIsAUsageErrorAndNoFailure(t *testing.T) {
	for _, status := range []int{201, 202, 204, 206, 300, 301, 302, 303, 304, 307, 308} {
		f := newFake(t, reply(status, `{"allowed":true,"field":"user"}`))
		// One failure would open this breaker.
		c := newClient(t, f.URL, Options{BreakerFailures: 1})
		v, err := c.CheckLogin(context.Background(), login)
		var ue *UsageError
		if !errors.As(err, &ue) || ue.Status != status || ue.Field != "" || v.Allowed || v.Failed != "" {
			t.Fatalf("%d: got %+v, %v", status, v, err)
		}
		if v, err := c.CheckOTP(context.Background(), otp); !errors.As(err, &ue) || v.Allowed {
			t.Fatalf("%d: the breaker counted it: got %+v, %v", status, v, err)
		}
	}
	for _, status := range []int{201, 202, 206, 302, 307} {
		f := newFake(t, reply(status, ""))
		r, err := newClient(t, f.URL, Options{}).ReportLogin(context.Background(), LoginReport{User: "u", IP: "ip"})
		var ue *UsageError
		if !errors.As(err, &ue) || ue.Status != status || ue.Field != "" || r.Recorded {
			t.Fatalf("report %d: got %+v, %v", status, r, err)
		}
	}
}

// switchingProtocols answers every request 101, which net/http hands
// back as the answer (it skips only the other 1xx).
func switchingProtocols(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\n")
				}
			}(c)
		}
	}()
	return "http://" + l.Addr().String()
}

func TestInformationalAnswerIsAUsageError(t *testing.T) {
	c := newClient(t, switchingProtocols(t), Options{})
	v, err := c.CheckLogin(context.Background(), login)
	var ue *UsageError
	if !errors.As(err, &ue) || ue.Status != 101 || ue.Field != "" || v.Allowed {
		t.Fatalf("got %+v, %v", v, err)
	}
	r, err := c.ReportOTP(context.Background(), OTPReport{Phone: "+1", IP: "ip", Verified: true})
	if !errors.As(err, &ue) || ue.Status != 101 || r.Recorded {
		t.Fatalf("report: got %+v, %v", r, err)
	}
}

// A proxy's refusal page is still a refusal: a 403 or 429 denies (or
// challenges) whatever its body, with the wait from Retry-After.
func TestRefusalWhoseBodyIsNotJSONStillDenies(t *testing.T) {
	for _, status := range []int{403, 429} {
		f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(status)
			io.WriteString(w, "<html>slow down</html>")
		})
		v := mustCheck(t, newClient(t, f.URL, Options{}), login)
		if v.Outcome != OutcomeDeny || v.Allowed || v.Failed != "" || v.Status != status || v.RetryAfter != 30 ||
			v.Policy != "" || v.Body != nil {
			t.Fatalf("%d: got %+v", status, v)
		}
	}
	f := newFake(t, reply(429, `{"action":"challenge","challenge_nonce":"c1.n","policy":"p"}`))
	v := mustCheck(t, newClient(t, f.URL, Options{}), login)
	if v.Outcome != OutcomeChallenge || v.ChallengeNonce != "c1.n" || v.RetryAfter != 0 {
		t.Fatalf("challenge without retry_after: got %+v", v)
	}
}

func TestReportRefusedWith403Or429IsAUsageError(t *testing.T) {
	for _, status := range []int{403, 429} {
		f := newFake(t, reply(status, `{"error":"no"}`))
		r, err := newClient(t, f.URL, Options{}).ReportLogin(context.Background(), LoginReport{User: "u", IP: "ip"})
		var ue *UsageError
		if !errors.As(err, &ue) || ue.Status != status || r.Recorded {
			t.Fatalf("%d: got %+v, %v", status, r, err)
		}
	}
}

// bodyOfSize is a login check whose JSON body is exactly n bytes.
func bodyOfSize(t *testing.T, n int) LoginCheck {
	in := LoginCheck{IP: "203.0.113.7"}
	empty, _ := json.Marshal(in)
	in.User = strings.Repeat("a", n-len(empty))
	if b, _ := json.Marshal(in); len(b) != n {
		t.Fatalf("built %d bytes, want %d", len(b), n)
	}
	return in
}

// The service answers a body over its 64 KiB cap 413 and closes the
// connection mid-write, which would look like an outage and fail open:
// the client refuses it before sending, and the breaker never hears.
func TestBodyOverTheServiceCapIsRefusedBeforeSending(t *testing.T) {
	f := newFake(t, reply(200, allowBody))
	c := newClient(t, f.URL, Options{BreakerFailures: 1})
	for i := 0; i < 3; i++ {
		v, err := c.CheckLogin(context.Background(), bodyOfSize(t, 65537))
		var ue *UsageError
		if !errors.As(err, &ue) || ue.Status != 413 || ue.Field != "body" || v.Allowed || v.Outcome != OutcomeDeny {
			t.Fatalf("check: got %+v, %v", v, err)
		}
	}
	r, err := c.ReportLogin(context.Background(), LoginReport{User: strings.Repeat("a", 70000), IP: "ip"})
	var ue *UsageError
	if !errors.As(err, &ue) || ue.Status != 413 || ue.Field != "body" || r.Recorded {
		t.Fatalf("report: got %+v, %v", r, err)
	}
	if f.hits() != 0 {
		t.Fatalf("sent %d requests", f.hits())
	}
	// At the cap exactly it is sent, and the breaker is still closed.
	if v := mustCheck(t, c, bodyOfSize(t, 65536)); !v.Allowed || v.Failed != "" || f.hits() != 1 {
		t.Fatalf("at the cap: got %+v after %d requests", v, f.hits())
	}
}

func TestAnswerThatIsNotJSONIsUnavailable(t *testing.T) {
	f := newFake(t, reply(200, `<html>a captive portal</html>`))
	v := mustCheck(t, newClient(t, f.URL, Options{FailOpenLogin: Bool(false)}), login)
	if v.Failed != FailedUnavailable || v.Allowed {
		t.Fatalf("got %+v", v)
	}
}

func TestRefusedConnectionIsRetriedThenSucceeds(t *testing.T) {
	f := newFake(t, reply(200, allowBody))
	c := newClient(t, f.URL, Options{Timeout: retryTimeout})
	refused := closedAddr(t)
	dials := countDials(c, func(n int, ctx context.Context, network, addr string) (net.Conn, error) {
		if n == 0 {
			addr = refused
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	})
	v := mustCheck(t, c, login)
	if !v.Allowed || v.Failed != "" || *dials != 2 || f.hits() != 1 {
		t.Fatalf("got %+v after %d dials", v, *dials)
	}
}

func TestRefusedConnectionAfterLastRetryIsUnavailable(t *testing.T) {
	c := newClient(t, "http://"+closedAddr(t), Options{Retries: Int(1), Timeout: retryTimeout})
	dials := countDials(c, func(_ int, ctx context.Context, network, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	})
	v := mustCheck(t, c, login)
	if v.Failed != FailedUnavailable || !v.Allowed || v.Status != 0 || *dials != 2 {
		t.Fatalf("got %+v after %d dials", v, *dials)
	}
	vo, err := c.CheckOTPVerify(context.Background(), otp)
	if err != nil || vo.Failed != FailedUnavailable || vo.Allowed {
		t.Fatalf("got %+v, %v", vo, err)
	}
}

func TestTimeoutFollowsEachKindsFailMode(t *testing.T) {
	f := newFake(t, hang)
	c := newClient(t, f.URL, Options{Timeout: 30 * time.Millisecond})
	v := mustCheck(t, c, login)
	if v.Failed != FailedTimeout || v.Outcome != OutcomeAllow || v.Status != 0 {
		t.Fatalf("login: got %+v", v)
	}
	for name, check := range map[string]func(context.Context, OTPCheck) (Verdict, error){
		"CheckOTP": c.CheckOTP, "CheckOTPVerify": c.CheckOTPVerify,
	} {
		v, err := check(context.Background(), otp)
		if err != nil || v.Failed != FailedTimeout || v.Outcome != OutcomeDeny || v.Allowed {
			t.Fatalf("%s: got %+v, %v", name, v, err)
		}
	}
	if f.hits() > 3 {
		t.Fatalf("a timeout is never retried: %d requests for 3 calls", f.hits())
	}
}

func TestFailModesAreOptions(t *testing.T) {
	c := newClient(t, "http://"+closedAddr(t), Options{
		FailOpenLogin: Bool(false), FailOpenOTP: Bool(true), Retries: Int(0)})
	if v := mustCheck(t, c, login); v.Allowed || v.Failed != FailedUnavailable {
		t.Fatalf("login: got %+v", v)
	}
	if v, _ := c.CheckOTP(context.Background(), otp); !v.Allowed || v.Failed != FailedUnavailable {
		t.Fatalf("otp: got %+v", v)
	}
}

func TestUnknownFieldsAreKeptInBody(t *testing.T) {
	f := newFake(t, reply(200, `{"allowed":true,"device":"trusted","decisions":[],
		"new_field":{"nested":[1,2]},"degraded":false}`))
	v := mustCheck(t, newClient(t, f.URL, Options{}), login)
	if !v.Allowed || v.Device != "trusted" || v.Degraded {
		t.Fatalf("got %+v", v)
	}
	if _, ok := v.Body["new_field"].(map[string]any); !ok {
		t.Fatalf("the unknown field is not in Body: %v", v.Body)
	}
}

// sentKeys decodes the n-th request's body and lists its keys, failing
// the test on a null anywhere in it.
func sentKeys(t *testing.T, f *fake, n int) []string {
	t.Helper()
	body := f.request(n).body
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k, v := range m {
		if v == nil {
			t.Fatalf("null sent for %s in %s", k, body)
		}
		keys = append(keys, k)
	}
	if strings.Contains(string(body), "null") {
		t.Fatalf("null in %s", body)
	}
	return sortedCopy(keys)
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestUnsetFieldsAreNeverSent(t *testing.T) {
	f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/report") {
			write(w, 204, "")
			return
		}
		write(w, 200, allowBody)
	})
	c := newClient(t, f.URL, Options{})
	ctx := context.Background()
	mustCheck(t, c, login)
	mustCheck(t, c, LoginCheck{User: "u", IP: "ip", Device: "d", DeviceToken: "t", PasswordFP: "fp",
		PasswordBreached: true, ChallengePassed: "c1.x", Ref: "r"})
	c.ReportLogin(ctx, LoginReport{User: "u", IP: "ip"})
	c.CheckOTP(ctx, otp)
	c.ReportOTP(ctx, OTPReport{Phone: "+1", IP: "ip", Ref: "r"})
	// Issue 40: a success brings back the nonce its check passed.
	c.ReportLogin(ctx, LoginReport{User: "u", IP: "ip", Success: true, ChallengePassed: "c1.x"})
	want := [][]string{
		{"ip", "user"},
		{"challenge_passed", "device", "device_token", "ip", "password_breached", "password_fp", "ref", "user"},
		{"ip", "success", "user"},
		{"ip", "phone"},
		{"ip", "phone", "ref", "verified"},
		{"challenge_passed", "ip", "success", "user"},
	}
	for n, keys := range want {
		if got := sentKeys(t, f, n); !reflect.DeepEqual(got, keys) {
			t.Errorf("request %d (%s) sent %v, want %v", n, f.request(n).path, got, keys)
		}
	}
}

func TestKeptAliveConnectionIsReused(t *testing.T) {
	f := newFake(t, reply(200, allowBody))
	c := newClient(t, f.URL, Options{})
	for i := 0; i < 5; i++ {
		mustCheck(t, c, login)
	}
	if f.connections() != 1 {
		t.Fatalf("5 calls in a row opened %d connections", f.connections())
	}
}

func TestIdleConnectionIsClosedByTheClient(t *testing.T) {
	// The fake never closes an idle connection itself, so the close
	// waited for here is the client's, after its idle timeout.
	f := newFake(t, reply(200, allowBody))
	c := newClient(t, f.URL, Options{IdleTimeout: 20 * time.Millisecond})
	mustCheck(t, c, login)
	select {
	case <-f.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle connection was never closed")
	}
	mustCheck(t, c, login)
	if f.connections() != 2 {
		t.Fatalf("want a new connection after the idle one closed, %d opened", f.connections())
	}
}

func TestReports(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		switch n {
		case 0:
			write(w, 200, `{"device_token":"v1.abc","expires_in":7776000}`)
		case 1:
			write(w, 204, "")
		case 2:
			write(w, 400, `{"error":"reason is only for a failure (\"success\": false)","field":"reason"}`)
		default:
			write(w, 500, `{"error":"fault"}`)
		}
	})
	c := newClient(t, f.URL, Options{})
	ctx := context.Background()
	r, err := c.ReportLogin(ctx, LoginReport{User: "u", IP: "ip", Success: true})
	if err != nil || r != (Report{Recorded: true, DeviceToken: "v1.abc", ExpiresIn: 7776000, Status: 200}) {
		t.Fatalf("success: got %+v, %v", r, err)
	}
	r, err = c.ReportOTP(ctx, OTPReport{Phone: "+1", IP: "ip", Verified: true})
	if err != nil || r != (Report{Recorded: true, Status: 204}) {
		t.Fatalf("otp: got %+v, %v", r, err)
	}
	_, err = c.ReportLogin(ctx, LoginReport{User: "u", IP: "ip", Success: true, Reason: "bad_password"})
	var ue *UsageError
	if !errors.As(err, &ue) || ue.Field != "reason" {
		t.Fatalf("usage: got %v", err)
	}
	r, err = c.ReportLogin(ctx, LoginReport{User: "u", IP: "ip"})
	if err != nil || r != (Report{Failed: FailedUnavailable, Status: 500}) {
		t.Fatalf("outage: got %+v, %v", r, err)
	}
}

func TestBaseURLPathIsAPrefix(t *testing.T) {
	f := newFake(t, reply(200, allowBody))
	mustCheck(t, newClient(t, f.URL+"/abuseguard/", Options{}), login)
	if p := f.request(0).path; p != "/abuseguard/check-login" {
		t.Fatalf("sent to %s", p)
	}
}

func TestNewRefusesOptionsItCannotUse(t *testing.T) {
	for _, o := range []Options{
		{},
		{BaseURL: "127.0.0.1:8080"},
		{BaseURL: "ftp://h"},
		{BaseURL: "https://h"},
		{BaseURL: "HTTPS://h:443"},
		{BaseURL: "http://h?x=1"},
		{BaseURL: "http://h", Timeout: -1},
		{BaseURL: "http://h", Retries: Int(-1)},
		{BaseURL: "http://h", BreakerFailures: -1},
	} {
		var ue *UsageError
		if _, err := New(o); !errors.As(err, &ue) || ue.Status != 0 || ue.Field == "" {
			t.Errorf("%+v: got %v", o, err)
		}
	}
}

func TestBackoffNeverWaitsPastTheDeadline(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:1", Options{})
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if c.backoff(past, 0) {
		t.Fatal("waited for a retry the deadline leaves no time for")
	}
	later, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !c.backoff(later, 0) {
		t.Fatal("gave up a retry the deadline leaves time for")
	}
}
