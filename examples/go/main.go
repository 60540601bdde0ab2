// SPDX-License-Identifier: Apache-2.0

// Command example is a login service that asks abuseguard before each
// password and OTP check: the integration of clients/README.md in one
// file. Configured by ABUSEGUARD_URL, PORT, FP_KEY_HEX, TRUSTED_PROXIES
// (comma-separated CIDRs) and COOKIE_SECURE ("0" for plain HTTP).
package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"

	abuseguard "github.com/abuseguard/abuseguard/clients/go"
)

// account is a demo user. A real service stores a bcrypt or argon2 hash;
// Go's standard library has neither (nor scrypt or PBKDF2), so this demo
// keeps a salted SHA-256, which is far too fast for real passwords.
type account struct {
	salt, hash []byte
	phone      string
}

func newAccount(password, phone string) account {
	salt := make([]byte, 16)
	rand.Read(salt)
	return account{salt, digest(salt, password), phone}
}

func digest(salt []byte, password string) []byte {
	sum := sha256.Sum256(append(append([]byte(nil), salt...), password...))
	return sum[:]
}

type server struct {
	ag      *abuseguard.Client
	key     []byte // the password-fingerprint key
	trusted []netip.Prefix
	secure  bool
	users   map[string]account
	mu      sync.Mutex
	codes   map[string]string // phone -> the OTP code sent last
}

func main() {
	key, err := hex.DecodeString(os.Getenv("FP_KEY_HEX"))
	if _, fpErr := abuseguard.PasswordFingerprint(key, ""); err != nil || fpErr != nil {
		log.Fatal("FP_KEY_HEX must be 64 hex digits")
	}
	trusted, err := abuseguard.ParseTrustedProxies(strings.Split(os.Getenv("TRUSTED_PROXIES"), ","))
	if err != nil {
		log.Fatal(err)
	}
	ag, err := abuseguard.New(abuseguard.Options{BaseURL: os.Getenv("ABUSEGUARD_URL")})
	if err != nil {
		log.Fatal(err)
	}
	s := &server{ag: ag, key: key, trusted: trusted, secure: os.Getenv("COOKIE_SECURE") != "0",
		codes: map[string]string{}, users: map[string]account{
			"ana@example.com": newAccount("correct horse battery staple", "+14155550100"),
			"bob@example.com": newAccount("Tr0ub4dor&3", "+14155550101"),
		}}
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening on", ln.Addr())
	log.Fatal(http.Serve(ln, s))
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	routes := map[string]func(http.ResponseWriter, *http.Request, map[string]string, string){
		"/login": s.login, "/otp/send": s.otpSend, "/otp/verify": s.otpVerify}
	route, ok := routes[r.URL.Path]
	if !ok || r.Method != http.MethodPost {
		reply(w, 404, map[string]any{"error": "not found"})
		return
	}
	var in map[string]string // every field these routes take is a string
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil || json.Unmarshal(body, &in) != nil {
		reply(w, 400, map[string]any{"error": "invalid request"})
		return
	}
	// The client's address: the TCP peer's, or what our own proxies say.
	route(w, r, in, abuseguard.ClientIP(r.RemoteAddr, r.Header, s.trusted, "x-forwarded-for"))
}

func (s *server) login(w http.ResponseWriter, r *http.Request, in map[string]string, ip string) {
	// Every abuseguard call takes context.Background(), on purpose not
	// r.Context(): net/http cancels a request's context when the client
	// hangs up (half-closing the connection is enough), and a client
	// that hangs up must not cancel the check, nor lose the report of
	// its wrong guess. The abuseguard client's own Timeout (500 ms)
	// bounds each call. (A call cancelled anyway returns the context's
	// error beside a deny, which this handler refuses like any error.)
	ctx, user, password := context.Background(), in["user"], in["password"]
	fp, _ := abuseguard.PasswordFingerprint(s.key, password) // the key was checked at start
	breach, err := s.ag.Breached(ctx, password)
	if err != nil {
		log.Print(err) // BreachUnknown: log in without the answer
	}
	breached := breach == abuseguard.BreachBreached
	token := abuseguard.DeviceTokenFromRequest(r, user)
	v, err := s.ag.CheckLogin(ctx, abuseguard.LoginCheck{User: user, IP: ip, DeviceToken: token,
		PasswordFP: fp, PasswordBreached: breached, ChallengePassed: in["challenge_passed"]})
	switch {
	case err != nil:
		reply(w, 400, map[string]any{"error": "invalid request"})
		return
	case v.Outcome == abuseguard.OutcomeDeny:
		limited(w, "too many attempts", v.RetryAfter)
		return
	case v.Outcome == abuseguard.OutcomeChallenge:
		// A real service runs its second factor here; the demo takes a
		// later request carrying the nonce as having passed it.
		var nonce any
		if v.ChallengeNonce != "" {
			nonce = v.ChallengeNonce
		}
		reply(w, 401, map[string]any{"error": "second factor required", "challenge_nonce": nonce})
		return
	}
	acct, known := s.users[user]
	if !known {
		acct = s.users["ana@example.com"] // hash anyway: the time tells nothing
	}
	if ok := subtle.ConstantTimeCompare(digest(acct.salt, password), acct.hash) == 1; !known || !ok {
		reason := "unknown_user"
		if known {
			reason = "bad_password"
		}
		s.ag.ReportLogin(ctx, abuseguard.LoginReport{User: user, IP: ip, Reason: reason, PasswordFP: fp, DeviceToken: token})
		reply(w, 401, map[string]any{"error": "wrong user or password"})
		return
	}
	rep, _ := s.ag.ReportLogin(ctx, abuseguard.LoginReport{User: user, IP: ip, Success: true,
		PasswordFP: fp, PasswordBreached: breached, DeviceToken: token})
	if rep.DeviceToken != "" {
		// An error here is a token that is no cookie value: keep none.
		if cookie, err := abuseguard.DeviceSetCookie(user, rep.DeviceToken, rep.ExpiresIn, s.secure); err == nil {
			w.Header().Add("Set-Cookie", cookie)
		} else {
			log.Print(err)
		}
	}
	reply(w, 200, map[string]any{"ok": true, "breached": breached})
}

// The OTP routes call abuseguard with context.Background() too, as
// login says why: a hang-up must not cancel a check or lose a report.
func (s *server) otpSend(w http.ResponseWriter, r *http.Request, in map[string]string, ip string) {
	v, err := s.ag.CheckOTP(context.Background(), abuseguard.OTPCheck{Phone: in["phone"], IP: ip})
	if !otpAllowed(w, v, err) {
		return
	}
	n, _ := rand.Int(rand.Reader, big.NewInt(1000000))
	code := fmt.Sprintf("%06d", n)
	s.mu.Lock()
	s.codes[in["phone"]] = code
	s.mu.Unlock()
	// A demo: a real service sends the code by SMS and never returns it.
	reply(w, 200, map[string]any{"sent": true, "code": code})
}

func (s *server) otpVerify(w http.ResponseWriter, r *http.Request, in map[string]string, ip string) {
	phone := in["phone"]
	v, err := s.ag.CheckOTPVerify(context.Background(), abuseguard.OTPCheck{Phone: phone, IP: ip})
	if !otpAllowed(w, v, err) {
		return
	}
	s.mu.Lock()
	code, sent := s.codes[phone]
	right := sent && subtle.ConstantTimeCompare([]byte(code), []byte(in["code"])) == 1
	if right {
		delete(s.codes, phone)
	}
	s.mu.Unlock()
	if !right {
		reply(w, 401, map[string]any{"error": "wrong code"})
		return
	}
	s.ag.ReportOTP(context.Background(), abuseguard.OTPReport{Phone: phone, IP: ip, Verified: true})
	reply(w, 200, map[string]any{"ok": true})
}

// otpAllowed answers an OTP check's usage error (400) or refusal (429),
// and says whether the request may go on.
func otpAllowed(w http.ResponseWriter, v abuseguard.Verdict, err error) bool {
	if err != nil {
		reply(w, 400, map[string]any{"error": "invalid request"})
		return false
	}
	if !v.Allowed {
		limited(w, "try later", v.RetryAfter)
	}
	return v.Allowed
}

// limited answers a 429 that says, in its body and Retry-After, when
// to try again (at least a second).
func limited(w http.ResponseWriter, why string, retryAfter int) {
	if retryAfter < 1 {
		retryAfter = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	reply(w, 429, map[string]any{"error": why, "retry_after": retryAfter})
}

func reply(w http.ResponseWriter, status int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
