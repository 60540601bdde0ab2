// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// MinFingerprintKey is the shortest key PasswordFingerprint takes, in
// bytes: HMAC-SHA-256's own output size.
const MinFingerprintKey = 32

// PasswordFingerprint is the password_fp to send with checks and
// reports: the lower-case hex HMAC-SHA-256, keyed by key, of the
// password's bytes exactly as typed. Go strings are bytes already, so a
// UTF-8 password is hashed as received, without Unicode normalisation
// (two spellings of one password stay two fingerprints, as they stay
// two passwords to your password check).
//
// The key is your own secret, the same for every user (so a password
// sprayed across accounts shows as one fingerprint), and never the
// stored password hash. A key shorter than MinFingerprintKey bytes is a
// *UsageError.
func PasswordFingerprint(key []byte, password string) (string, error) {
	if len(key) < MinFingerprintKey {
		return "", usage("key", "must be at least %d bytes, got %d", MinFingerprintKey, len(key))
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(password))
	return hex.EncodeToString(mac.Sum(nil)), nil
}
