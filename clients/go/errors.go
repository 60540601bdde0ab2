// SPDX-License-Identifier: Apache-2.0

package abuseguard

import "fmt"

// UsageError is the error of a request that is the caller's mistake:
// abuseguard refused it as malformed (Status is its HTTP status, 400
// mostly), it answered with a status no check or report gets (a
// redirect: a BaseURL that leads elsewhere; Field is then empty), or the
// client refused the input itself before sending anything: Status 0 for
// an option New cannot use, a key too short for a fingerprint or a
// device token that is no cookie value; 413 with Field "body" for a body
// over the service's 64 KiB cap.
//
// It is never an outage, and a caller must not fail open on it: an
// attacker can provoke a 400 at will (an over-long user name, say).
// Match it with errors.As. The calls' only other error is the caller's
// own context error; neither is an allow.
type UsageError struct {
	// Status is the HTTP status abuseguard answered, or 0 when the
	// client refused the input without asking (413 for a body over
	// the service's cap, as the service would have answered).
	Status int
	// Field names the input at fault as abuseguard's error body does
	// ("user", "ip", "body"), or the option or argument the client
	// refused; empty when the answer named none.
	Field string
	// Message is the sentence that says what is wrong.
	Message string
}

// Error describes the refusal in one line.
func (e *UsageError) Error() string {
	switch {
	case e.Status == 0:
		return fmt.Sprintf("abuseguard: %s: %s", e.Field, e.Message)
	case e.Field == "":
		return fmt.Sprintf("abuseguard: refused (%d): %s", e.Status, e.Message)
	default:
		return fmt.Sprintf("abuseguard: refused (%d, %s): %s", e.Status, e.Field, e.Message)
	}
}

// usage makes the error of an input the client refuses itself.
func usage(field, format string, args ...any) *UsageError {
	return &UsageError{Field: field, Message: fmt.Sprintf(format, args...)}
}
