/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hashes Pwned Passwords is keyed by, computed from a password: SHA-1
 * of its UTF-8 bytes, or NTLM, which is MD4 of its UTF-16LE form. For
 * `abuseguard pwned check` and the tests; the service itself never sees
 * a password (clients send it a hash prefix).
 *
 * MD4 is written out here (RFC 1320) rather than taken from OpenSSL: 3.0
 * moved it to the legacy provider, a loadable module that a minimal
 * install may not ship and that, once loaded, changes what the whole
 * process may use. MD4 is broken as a hash: it is here only because NTLM
 * is defined with it, never to protect anything.
 *
 * No state; safe from any thread.
 */
#ifndef AG_PWNED_HASH_H
#define AG_PWNED_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "ag_pwned.h"

/* The password's hash under mode into out (AG_PWNED_SHA1_LEN or
 * AG_PWNED_NTLM_LEN bytes). AG_EINVAL if mode is unknown, or for NTLM if
 * the password is not valid UTF-8 (it has no UTF-16 form then); AG_EIO if
 * OpenSSL fails. */
int ag_pwned_hash_password(enum ag_pwned_mode mode, const char *pw, size_t len,
                           uint8_t *out);

/* MD4 of len bytes into out (16 bytes). */
void ag_pwned_md4(const uint8_t *data, size_t len, uint8_t *out);

#endif
