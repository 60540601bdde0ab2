// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
)

// Breach is what a range lookup found of a password: a string type,
// so it marshals to JSON as "breached", "clean" or "unknown".
type Breach string

// The answers of Breached.
const (
	// BreachBreached: the password is in the breach corpus.
	BreachBreached Breach = "breached"
	// BreachClean: the corpus was asked and does not hold it.
	BreachClean Breach = "clean"
	// BreachUnknown: no corpus loaded (a 404), any other answer but
	// 200, no answer in time, or the breaker open. Treat it as not
	// breached, but do not say so.
	BreachUnknown Breach = "unknown"
)

// Breached looks a password up in abuseguard's breached-password corpus
// as the Pwned Passwords range API does: only the first 5 hex digits of
// its SHA-1 are sent (with Add-Padding, so the answer's size says little
// of them), and the rest is matched here; the password and its full
// hash never leave the process. Padding lines (count 0) never match.
//
// It takes at most the client's Timeout, like every call; give ctx an
// earlier deadline to wait less. Without a usable answer (a 404: no
// corpus loaded; any other status but 200, which cannot be the
// caller's mistake, the prefix being computed here; a timeout; the
// breaker open) it is BreachUnknown, with a nil error. The only error is
// the caller's context error, beside BreachUnknown, when ctx was
// cancelled or its deadline came before the client's own.
func (c *Client) Breached(ctx context.Context, password string) (Breach, error) {
	sum := sha1.Sum([]byte(password))
	digest := strings.ToUpper(hex.EncodeToString(sum[:]))
	ex := c.send(ctx, request{
		method: http.MethodGet,
		path:   "/range/" + digest[:5],
		header: http.Header{"Add-Padding": {"true"}},
	})
	switch {
	case ex.cancelled != nil:
		return BreachUnknown, ex.cancelled
	case ex.failed != "" || ex.status != http.StatusOK:
		return BreachUnknown, nil
	case rangeHolds(ex.raw, digest[5:]):
		return BreachBreached, nil
	}
	return BreachClean, nil
}

// rangeHolds says whether a range answer (SUFFIX:COUNT lines) lists the
// suffix with a count above 0.
func rangeHolds(answer []byte, suffix string) bool {
	lines := bufio.NewScanner(bytes.NewReader(answer))
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		s, count, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(s, suffix) {
			continue
		}
		if n, err := strconv.ParseUint(count, 10, 64); err == nil && n > 0 {
			return true
		}
	}
	return false
}
