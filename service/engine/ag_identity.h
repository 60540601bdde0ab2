/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Identity normalisation and keyed hashing. Every identifier a client sends
 * (user, phone, IP, device) is first normalised, so that spellings of one
 * identity share one limit, then hashed under the service's secret with
 * BLAKE2b (libsodium's crypto_generichash) before it becomes part of a
 * Redis key. Neither the plaintext nor an unkeyed digest of it leaves this
 * module's callers: without the secret, a Redis dump cannot be reversed by
 * hashing a list of phone numbers.
 *
 * The normalisers are pure functions. An ag_hasher is read-only after
 * ag_hasher_init and safe to share between threads.
 */
#ifndef AG_IDENTITY_H
#define AG_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>

#include <sodium.h>

#include "ag_country.h"
#include "ag_error.h"

#define AG_USER_MAX 256   /* bytes of a normalised user or device */
#define AG_IP_TEXT_MAX 46 /* INET6_ADDRSTRLEN */
#define AG_DIGEST_BYTES 16
#define AG_DIGEST_HEX (2 * AG_DIGEST_BYTES)

/* The kinds of identifier a key can be made of. */
enum ag_key_kind {
    AG_KEY_USER,
    AG_KEY_IP, /* an IPv4 address, or an IPv6 one's --ipv6-ip-prefix network */
    AG_KEY_PHONE,
    AG_KEY_DEVICE,
    AG_KEY_IP_PREFIX,    /* by default the /24 of IPv4, the /48 of IPv6 */
    AG_KEY_PHONE_PREFIX, /* '+' and the first --phone-prefix-digits */
    /* The id of a device token the service verified for the request's
     * user (ag_device); a request without a trusted token has none. */
    AG_KEY_DEVICE_TOKEN,
    /* The phone's E.164 country calling code ("+44"; ag_country): all
     * numbers of a country (or of NANP, +1) are one key. Not personal
     * data, but hashed in keys like every identifier. */
    AG_KEY_COUNTRY,
    /* The whole endpoint: one value for every request ("site"), so that a
     * policy keyed on it counts every subject together (surge's shields). */
    AG_KEY_SITE,
    /* The caller's keyed digest of the password tried (login: optional on
     * /check-login and on a failure report), hashed again like any
     * identifier: password spraying is one fingerprint across users. */
    AG_KEY_PASSWORD_FP,
    /* The address's autonomous system (--asn-file) and its country
     * (--geoip-file; ISO 3166-1 alpha-2, not the phone's calling code,
     * AG_KEY_COUNTRY): derived from ip by the service's lookup
     * (ag_request_network); an address the database does not know has
     * none, and a policy keyed on it skips the request. */
    AG_KEY_ASN,
    AG_KEY_IP_COUNTRY,
    AG_KEY_COUNT
};

/* The kind's name: its JSON field, and the tag its digest is keyed with. */
const char *ag_key_kind_name(enum ag_key_kind k);
extern const char *const ag_key_kind_names[AG_KEY_COUNT];

struct ag_ip {
    int family;                /* AF_INET or AF_INET6 */
    unsigned char addr[16];    /* network order; 4 bytes used for AF_INET */
    char text[AG_IP_TEXT_MAX]; /* canonical text form */
};

/* The normalisers refuse with AG_EINVAL and fill err (which may be NULL)
 * naming field, the JSON field the text came from ("user", or "value" in a
 * list entry): "user is empty".
 *
 * User: Unicode white space (White_Space: NBSP, U+3000, ...) trimmed,
 * default-ignorable code points (zero-width space, soft hyphen, ...)
 * removed, then NFKC case folding (libunistring's u8_casefold with
 * UNINORM_NFKC, language-independent), after the PRECIS UsernameCaseMapped
 * profile (RFC 8265): "ÀNA", "àna", its NFD form and fullwidth "ａｎａ" are
 * one user. '+' tags and dots are kept: they can be different accounts.
 * Refuses empty, invalid UTF-8, C0 and C1 controls, U+2028 and U+2029,
 * bidirectional controls, code points unassigned in libunistring's
 * Unicode version, and a result over AG_USER_MAX bytes (folding can
 * lengthen a user). Then, when the user is an address (something before
 * its last '@' and something after it), its domain is folded to U-labels
 * by UTS #46 processing (libidn2): "ana@bücher.example" and
 * "ana@xn--bcher-kva.example" are one user; a domain that is not valid
 * IDNA is refused. An ASCII domain without an "xn--" label is left as it
 * is, and the local part keeps the rules above. Normalising a normalised
 * user gives it back. out holds AG_USER_MAX + 1 bytes. */
int ag_identity_user(const char *in, size_t len, char *out, const char *field,
                     struct ag_error *err);
/* The Unicode path of ag_identity_user, for any input. ag_identity_user
 * takes an ASCII shortcut with the same answer; tests compare the two. */
int ag_identity_user_unicode(const char *in, size_t len, char *out,
                             const char *field, struct ag_error *err);
/* Device: ASCII white space trimmed, case and bytes kept (device ids are
 * opaque tokens); refuses empty, over AG_USER_MAX bytes, or holding ASCII
 * control characters. */
int ag_identity_device(const char *in, size_t len, char *out, const char *field,
                       struct ag_error *err);
/* Phone: spaces, dashes, dots and parentheses removed; the rest must be
 * E.164: '+', a non-zero digit, then 7 to 14 more digits (8 to 15 in
 * all). Then a national (trunk) prefix right after the calling code is
 * folded, kept or refused by ag_country_fold_trunk: "+44 07700 900123"
 * and "+44 (0)7700 900123" are +447700900123, "+1 1 202 555 0143" is
 * +12025550143, "+39 06..." keeps its 0 (Italy has no trunk prefix), and
 * "+44 007700 900123" is refused. Normalising a normalised phone gives
 * it back. out holds AG_PHONE_MAX + 1 bytes. */
int ag_identity_phone(const char *in, size_t len, char *out, const char *field,
                      struct ag_error *err);
/* An address's country as a list entry or a policy names it: two ASCII
 * letters, either case, into upper case in out (3 bytes). Any pair, not
 * only the assigned ISO 3166-1 codes: a database may write a
 * user-assigned one (MaxMind's XK for Kosovo), and an entry or a policy
 * must be able to name what a lookup gives. */
bool ag_identity_ip_country(const char *s, char *out);
/* IP: what inet_pton accepts for IPv4 or IPv6, printed canonically; an
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d) becomes the IPv4 address. */
int ag_identity_ip(const char *in, struct ag_ip *out, const char *field,
                   struct ag_error *err);

/* One host owns an IPv6 /64 and one site a /48, so per-address limits
 * count an IPv6 address's /64 (its ip key) and group it by its /48 (its
 * ip_prefix key); an IPv4 address is its own ip key, grouped by its /24.
 * These are the defaults of --ipv6-ip-prefix, --ipv6-group-prefix and
 * --ipv4-group-prefix. */
#define AG_IPV6_IP_PREFIX_DEFAULT 64
#define AG_IPV6_GROUP_PREFIX_DEFAULT 48
#define AG_IPV4_GROUP_PREFIX_DEFAULT 24

/* The prefix length of a whole address of family: 32 or 128. */
unsigned ag_ip_bits(int family);
/* Copies the first bits bits of addr (16 bytes) into out (16 bytes), the
 * rest zero. */
void ag_ip_mask(const unsigned char *addr, unsigned bits, unsigned char *out);

#define AG_IP_PREFIX_MAX (AG_IP_TEXT_MAX + 4) /* text and "/NNN" */
/* The network of ip's first bits bits, as key text: "203.0.113.0/24" or
 * "2001:db8:1::/48"; the address's own text when bits covers all of it
 * ("192.0.2.1", never "192.0.2.1/32"). out holds AG_IP_PREFIX_MAX bytes. */
void ag_identity_ip_net(const struct ag_ip *ip, unsigned bits, char *out);

#define AG_PHONE_PREFIX_DEFAULT 7 /* digits, the country code included */
/* The number range a normalised phone belongs to for phone_prefix keys: '+'
 * and its first `digits` digits (all of them if it has fewer). out holds
 * AG_PHONE_MAX + 1 bytes. */
void ag_identity_phone_prefix(const char *phone, unsigned digits, char *out);

struct ag_hasher {
    unsigned char key[crypto_generichash_KEYBYTES_MAX];
    size_t keylen;
};

/* Keys the hasher with secret: used as is when it is at most
 * crypto_generichash_KEYBYTES_MAX (64) bytes, otherwise first compressed
 * with unkeyed BLAKE2b-512. Needs sodium_init() to have run. */
void ag_hasher_init(struct ag_hasher *h, const unsigned char *secret,
                    size_t len);
void ag_hasher_wipe(struct ag_hasher *h);

/* One part of a composite identity: a kind tag ("user", "ip", ...) and the
 * normalised value. The tag keeps a user "1.2.3.4" apart from an IP. */
struct ag_ident_part {
    const char *kind;
    const char *value;
};

/* Writes the keyed 128-bit digest of the parts, in order, as lower-case hex
 * into out (AG_DIGEST_HEX + 1 bytes). Parts are length-prefixed, so no two
 * different part lists hash the same input. */
void ag_hasher_digest(const struct ag_hasher *h,
                      const struct ag_ident_part *parts, size_t n, char *out);

/* The keyed digest of one identifier of kind (AG_DIGEST_HEX + 1 bytes into
 * out): what a one-part key hashes to, and what distinct sets and lists
 * hold. */
void ag_identity_digest(const struct ag_hasher *h, enum ag_key_kind kind,
                        const char *value, char *out);

#endif
