// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// DefaultWebhookTolerance is how far a webhook's signing time may be
// from the receiver's clock: a delivery recorded on its way is refused
// as a replay after this long.
const DefaultWebhookTolerance = 5 * time.Minute

// VerifyWebhook says whether a webhook delivery is abuseguard's: header
// is the X-Abuseguard-Signature value, "t=<Unix seconds>,v1=<hex>",
// whose v1 must be the lower-case hex HMAC-SHA-256 of "<t>.<body>"
// keyed by the webhook secret file's bytes (compared in constant time),
// and whose t must be within tolerance of now. Verify before parsing
// the body, with the body's bytes exactly as received.
//
// A zero now means time.Now(). A tolerance of 0 means
// DefaultWebhookTolerance; a negative one accepts nothing (false for
// every delivery), never a window of its own. Anything malformed (a
// missing or repeated t, no v1, a t that is not decimal digits) is
// false. Several v1 fields may be sent, as in Stripe's scheme this one
// follows (a sender rotating its secret signs with both): any one that
// matches is enough, and each is compared, so the time taken does not
// say which. Other fields are ignored, for a later scheme beside v1.
func VerifyWebhook(secret, body []byte, header string, now time.Time, tolerance time.Duration) bool {
	if now.IsZero() {
		now = time.Now()
	}
	switch {
	case tolerance < 0:
		return false
	case tolerance == 0:
		tolerance = DefaultWebhookTolerance
	}
	var t string
	var seenT bool
	var macs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(part, "=")
		switch {
		case !ok, k == "t" && seenT:
			return false
		case k == "t":
			t, seenT = v, true
		case k == "v1":
			macs = append(macs, v)
		}
	}
	if t == "" || len(macs) == 0 || strings.TrimLeft(t, "0123456789") != "" {
		return false
	}
	sec, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return false
	}
	if skew := now.Sub(time.Unix(sec, 0)); skew > tolerance || skew < -tolerance {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(t + "."))
	mac.Write(body)
	want := []byte(hex.EncodeToString(mac.Sum(nil)))
	matched := 0
	for _, v1 := range macs {
		matched |= subtle.ConstantTimeCompare(want, []byte(v1))
	}
	return matched == 1
}
