// SPDX-License-Identifier: Apache-2.0

package abuseguard

import "fmt"

// UsageError is the one error this package returns: abuseguard refused
// a request as malformed (Status is its HTTP status, 400 mostly), or the
// client refused input itself before sending anything (Status 0), such
// as an option New cannot use or a key too short for a fingerprint.
//
// It is never an outage, and a caller must not fail open on it: an
// attacker can provoke a 400 at will (an over-long user name, say).
// Match it with errors.As.
type UsageError struct {
	// Status is the HTTP status abuseguard answered, or 0 when the
	// client refused the input without asking.
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
