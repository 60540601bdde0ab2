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
// whose v1 must be the HMAC-SHA-256 of "<t>.<body>" keyed by the
// webhook secret file's bytes (compared in constant time), and whose t
// must be within tolerance of now. Verify before parsing the body, with
// the body's bytes exactly as received.
//
// A zero now means time.Now(); a tolerance of 0 or less means
// DefaultWebhookTolerance. Anything malformed (a missing or repeated t
// or v1, a t that is not decimal digits) is false; other fields are
// ignored, for a later scheme beside v1.
func VerifyWebhook(secret, body []byte, header string, now time.Time, tolerance time.Duration) bool {
	if now.IsZero() {
		now = time.Now()
	}
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	fields := map[string]string{}
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return false
		}
		if _, seen := fields[k]; seen && (k == "t" || k == "v1") {
			return false
		}
		fields[k] = v
	}
	t, v1 := fields["t"], fields["v1"]
	if t == "" || v1 == "" || strings.TrimLeft(t, "0123456789") != "" {
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
	want := hex.EncodeToString(mac.Sum(nil))
	return subtle.ConstantTimeCompare([]byte(want), []byte(v1)) == 1
}
