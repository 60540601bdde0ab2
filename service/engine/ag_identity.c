/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_identity.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <idn2.h>
#include <unicase.h>
#include <unictype.h>
#include <uninorm.h>
#include <unistr.h>

#include "ag_error.h"

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}

static int too_long(struct ag_error *err, const char *field)
{
    return ag_error_set(err, AG_EINVAL, field, "%s is longer than %d bytes",
                        field, AG_USER_MAX);
}

/* The longest user read before normalising: four bytes for every code
 * point of a user at the cap, so that no spelling of a user that fits
 * (fullwidth, decomposed) is refused for its spelling, while the work one
 * request can ask for stays bounded. */
#define USER_INPUT_MAX (4 * AG_USER_MAX)

/* Unicode White_Space, trimmed around a user, except NEL, U+2028 and
 * U+2029: they end lines in logs and in JavaScript, so they are refused
 * wherever they stand. */
static bool is_trimmed_space(ucs4_t c)
{
    return c != 0x85 && c != 0x2028 && c != 0x2029 &&
           uc_is_property_white_space(c);
}

/* Why c may not be part of a user, or NULL. Bidi controls are refused
 * rather than removed as the other default-ignorables are: they are how a
 * log line or an admin console is made to show one name for another. */
static const char *forbidden(ucs4_t c)
{
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f))
        return "contains a control character";
    if (c == 0x2028 || c == 0x2029)
        return "contains a line or paragraph separator";
    if ((c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) ||
        c == 0x200e || c == 0x200f || c == 0x061c)
        return "contains a bidirectional control character";
    if (uc_is_general_category(c, UC_CATEGORY_Cn))
        return "contains an unassigned code point";
    return NULL;
}

/* Trims is_trimmed_space code points from both ends of valid UTF-8. */
static void trim_unicode(const uint8_t **s, size_t *len)
{
    while (*len > 0) {
        ucs4_t c;
        int n = u8_mbtouc_unsafe(&c, *s, *len);
        if (!is_trimmed_space(c))
            break;
        *s += n;
        *len -= (size_t)n;
    }
    while (*len > 0) {
        ucs4_t c;
        const uint8_t *last = u8_prev(&c, *s + *len, *s);
        if (!last || !is_trimmed_space(c))
            break;
        *len = (size_t)(last - *s);
    }
}

/* Trims, checks and copies an ASCII identifier: a device id (case kept:
 * it is an opaque token no account lookup folds), or a user that is all
 * ASCII, the common case, folded (fold). For ASCII, White_Space is \t-\r
 * and space, no code point is default-ignorable or unassigned, NFKC
 * changes nothing and case folding lowers A-Z alone, so a user gets the
 * Unicode path's answer, checks in its order, without its cost (a quarter
 * of a check's instructions); test_identity holds the two to it. */
static int ascii_ident(const char *in, size_t len, char *out, bool fold,
                       const char *field, struct ag_error *err)
{
    while (len > 0 && is_space((unsigned char)in[0])) {
        in++;
        len--;
    }
    while (len > 0 && is_space((unsigned char)in[len - 1]))
        len--;
    if (len == 0)
        return ag_error_refuse(err, field, "is empty");
    if (len > (fold ? USER_INPUT_MAX : AG_USER_MAX))
        return too_long(err, field);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c < 0x20 || c == 0x7f)
            return ag_error_refuse(err, field, "contains a control character");
    }
    if (len > AG_USER_MAX)
        return too_long(err, field);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        out[i] = (char)(fold && c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    out[len] = '\0';
    return AG_OK;
}

static bool all_ascii(const char *in, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)in[i] >= 0x80)
            return false;
    return true;
}

static int fold_unicode(const char *in, size_t len, char *out,
                        const char *field, struct ag_error *err)
{
    const uint8_t *s = (const uint8_t *)in;
    if (u8_check(s, len))
        return ag_error_refuse(err, field, "is not valid UTF-8");
    trim_unicode(&s, &len);
    if (len == 0)
        return ag_error_refuse(err, field, "is empty");
    if (len > USER_INPUT_MAX)
        return too_long(err, field);
    /* Default-ignorable code points (zero-width spaces and joiners, soft
     * hyphens, variation selectors) go before folding, not after: one
     * between two combining marks keeps them apart, and removing it later
     * would leave them out of canonical order. */
    uint8_t kept[USER_INPUT_MAX];
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        ucs4_t c;
        int k = u8_mbtouc_unsafe(&c, s + i, len - i);
        const char *why = forbidden(c);
        if (why)
            return ag_error_refuse(err, field, why);
        if (!uc_is_property_default_ignorable_code_point(c)) {
            memcpy(kept + n, s + i, (size_t)k);
            n += (size_t)k;
        }
        i += (size_t)k;
    }
    if (n == 0)
        return ag_error_refuse(err, field, "is empty");
    /* libunistring decomposes with NFKD before it folds and composes with
     * NFKC after, so one round is a fixed point (the test
     * normalising_twice_equals_once_for_every_code_point proves it). */
    uint8_t buf[USER_INPUT_MAX];
    size_t flen = sizeof buf;
    uint8_t *f = u8_casefold(kept, n, NULL, UNINORM_NFKC, buf, &flen);
    if (!f)
        return ag_error_set(err, AG_ENOMEM, field,
                            "%s could not be normalised: out of memory", field);
    /* NFKC turns a spacing accent (U+00A8) into a space and a combining
     * mark, so the folded text is trimmed again. */
    const uint8_t *t = f;
    trim_unicode(&t, &flen);
    int rc = AG_OK;
    if (flen == 0)
        rc = ag_error_refuse(err, field, "is empty");
    else if (flen > AG_USER_MAX)
        rc = too_long(err, field);
    if (rc == AG_OK) {
        memcpy(out, t, flen);
        out[flen] = '\0';
    }
    if (f != buf)
        free(f);
    return rc;
}

/* Whether a label of the ASCII domain dom is an A-label ("xn--", any case
 * already folded): the one ASCII spelling that another spelling of the
 * domain has. */
static bool has_alabel(const char *dom)
{
    for (const char *label = dom; label; label = strchr(label, '.')) {
        if (*label == '.')
            label++;
        if (strncmp(label, "xn--", 4) == 0)
            return true;
    }
    return false;
}

static int idna_refused(int rc, const char *field, struct ag_error *err)
{
    if (rc == IDN2_MALLOC)
        return ag_error_set(err, AG_ENOMEM, field,
                            "%s could not be normalised: out of memory", field);
    return ag_error_set(err, AG_EINVAL, field,
                        "%s has a domain that is not valid IDNA (UTS #46): "
                        "%s",
                        field, idn2_strerror(rc));
}

/* Validates dom by UTS #46 non-transitional processing and writes its
 * U-labels into out (AG_USER_MAX + 1 bytes). libidn2's lookup validates an
 * A-label by decoding it and encoding it back.
 *
 * The flags: IDN2_NONTRANSITIONAL, the current UTS #46 processing (and
 * libidn2's default), named so that no default can change under us. No
 * IDN2_USE_STD3_ASCII_RULES: libidn2 2.3.3 (Debian 12) then deletes '_'
 * and ' ' instead of refusing them, which would make "bü_cher.example"
 * and "bücher.example" one domain; without it, a space is refused and an
 * underscore kept. No IDN2_NFC_INPUT: the user is NFKC already, and UTS
 * #46 processing normalises to NFC after mapping anyway. */
static int idna_decode(const char *dom, char *out, const char *field,
                       struct ag_error *err)
{
    uint8_t *ascii = NULL;
    int rc = idn2_lookup_u8((const uint8_t *)dom, &ascii, IDN2_NONTRANSITIONAL);
    if (rc != IDN2_OK)
        return idna_refused(rc, field, err);
    char *u = NULL;
    rc = idn2_to_unicode_8z8z((const char *)ascii, &u, 0);
    idn2_free(ascii);
    if (rc != IDN2_OK)
        return idna_refused(rc, field, err);
    size_t ulen = strlen(u);
    if (ulen > AG_USER_MAX)
        rc = too_long(err, field);
    else
        memcpy(out, u, ulen + 1);
    idn2_free(u);
    return rc;
}

/* Folds the domain of user, a normalised user, in place to one spelling
 * when the user is an address: something before its last '@' and
 * something after it. An ASCII domain without an A-label has only the
 * spelling it has (its case is folded already) and is left as it is, so
 * that no plain address pays for, or is refused by, IDNA processing.
 * Any other domain goes through idna_decode and comes back as U-labels:
 * "bücher.example", "BÜCHER.example" and "xn--bcher-kva.example" are all
 * "bücher.example".
 *
 * The user rules have already folded ß to "ss" and final ς to σ and
 * removed ZWJ and ZWNJ, the four characters non-transitional processing
 * keeps, but an A-label brings them back when it is decoded: so the
 * decoded domain is folded by the same rules, and, if that changed it,
 * validated and decoded once more. "xn--strae-oqa.de" is then
 * "strasse.de", as "straße.de" is, and the answer is a fixed point of the
 * whole normalisation. Folding can turn a valid domain into an invalid
 * one (dropping the ZWNJ of "ب‌ب--ب" puts "--" at positions 3 and 4):
 * such an A-label is refused, as its U-label spelling already is, rather
 * than kept as a user that no other spelling reaches. */
static int fold_domain(char *user, const char *field, struct ag_error *err)
{
    char *at = strrchr(user, '@');
    if (!at || at == user || at[1] == '\0')
        return AG_OK;
    char *dom = at + 1;
    size_t room = AG_USER_MAX - (size_t)(dom - user);
    /* Two rounds suffice: what the second decodes is folded text, which
     * has none of the four characters, and UTS #46 mapping leaves folded
     * text as it is. A third would mean that reasoning is wrong: refused,
     * so that no answer is ever other than a fixed point. */
    for (int round = 0; round < 2; round++) {
        if (all_ascii(dom, strlen(dom)) && !has_alabel(dom))
            return AG_OK;
        char u[AG_USER_MAX + 1];
        char f[AG_USER_MAX + 1];
        int rc = idna_decode(dom, u, field, err);
        if (rc == AG_OK)
            rc = fold_unicode(u, strlen(u), f, field, err);
        if (rc != AG_OK)
            return rc;
        size_t flen = strlen(f);
        if (flen > room)
            return too_long(err, field);
        memcpy(dom, f, flen + 1);
        if (strcmp(f, u) == 0)
            return AG_OK;
    }
    return ag_error_set(err, AG_EINVAL, field,
                        "%s has a domain that does not settle under IDNA "
                        "(UTS #46) processing",
                        field);
}

int ag_identity_user(const char *in, size_t len, char *out, const char *field,
                     struct ag_error *err)
{
    int rc = all_ascii(in, len) ? ascii_ident(in, len, out, true, field, err)
                                : fold_unicode(in, len, out, field, err);
    return rc == AG_OK ? fold_domain(out, field, err) : rc;
}

int ag_identity_user_unicode(const char *in, size_t len, char *out,
                             const char *field, struct ag_error *err)
{
    int rc = fold_unicode(in, len, out, field, err);
    return rc == AG_OK ? fold_domain(out, field, err) : rc;
}

int ag_identity_device(const char *in, size_t len, char *out, const char *field,
                       struct ag_error *err)
{
    return ascii_ident(in, len, out, false, field, err);
}

int ag_identity_phone(const char *in, size_t len, char *out, const char *field,
                      struct ag_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        /* The parentheses of "+44 (0)7911 123456" go with the separators:
         * the zero inside is a digit, which the trunk rules below judge as
         * they judge any other spelling ("+39 (0)6..." is Rome's 06). */
        if (c == ' ' || c == '-' || c == '.' || c == '(' || c == ')')
            continue;
        if (c == '+' && n == 0) {
            out[n++] = c;
            continue;
        }
        if (c < '0' || c > '9') {
            return ag_error_refuse(
                err, field, "must be an E.164 number such as +48600100200");
        }
        if (n >= AG_PHONE_MAX) {
            return ag_error_set(err, AG_EINVAL, field,
                                "%s has more than %d digits", field,
                                AG_PHONE_DIGITS_MAX);
        }
        out[n++] = c;
    }
    if (n == 0 || out[0] != '+' || n < 1 + AG_PHONE_DIGITS_MIN ||
        out[1] == '0') {
        return ag_error_set(err, AG_EINVAL, field,
                            "%s must be an E.164 number: '+' then %d to %d "
                            "digits",
                            field, AG_PHONE_DIGITS_MIN, AG_PHONE_DIGITS_MAX);
    }
    out[n] = '\0';
    char prefix[AG_TRUNK_PREFIX_MAX];
    if (ag_country_fold_trunk(out, prefix) != AG_OK) {
        char cc[AG_COUNTRY_MAX];
        ag_country_code(out, cc);
        if (prefix[0] == '\0')
            return ag_error_set(err, AG_EINVAL, field,
                                "%s is a local number after %s, which is "
                                "read with an area code added: write the "
                                "whole number as dialled from abroad",
                                field, cc);
        return ag_error_set(err, AG_EINVAL, field,
                            "%s has the national prefix or carrier code %s "
                            "after %s, which cannot be dropped here: write "
                            "the number as dialled from abroad, without it",
                            field, prefix, cc);
    }
    return AG_OK;
}

/* The canonical text of addr (family AF_INET or AF_INET6) into out
 * (AG_IP_TEXT_MAX bytes); its length, or 0 if it has none. An IPv4 address
 * is written here: every check formats one or two, and inet_ntop goes
 * through sprintf for them. */
static size_t ip_text(int family, const unsigned char *addr, char *out)
{
    if (family != AF_INET)
        return inet_ntop(family, addr, out, AG_IP_TEXT_MAX) ? strlen(out) : 0;
    size_t n = 0;
    for (int i = 0; i < 4; i++) {
        unsigned v = addr[i];
        if (i)
            out[n++] = '.';
        if (v >= 100)
            out[n++] = (char)('0' + v / 100);
        if (v >= 10)
            out[n++] = (char)('0' + v / 10 % 10);
        out[n++] = (char)('0' + v % 10);
    }
    out[n] = '\0';
    return n;
}

int ag_identity_ip(const char *in, struct ag_ip *out, const char *field,
                   struct ag_error *err)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0,    0,
                                             0, 0, 0, 0, 0xff, 0xff};
    memset(out, 0, sizeof *out);
    if (inet_pton(AF_INET, in, out->addr) == 1) {
        out->family = AF_INET;
    } else if (inet_pton(AF_INET6, in, out->addr) == 1) {
        out->family = AF_INET6;
        if (memcmp(out->addr, mapped, sizeof mapped) == 0) {
            memmove(out->addr, out->addr + 12, 4);
            memset(out->addr + 4, 0, 12);
            out->family = AF_INET;
        }
    } else {
        return ag_error_refuse(err, field,
                               "is not a valid IPv4 or IPv6 address");
    }
    if (!ip_text(out->family, out->addr, out->text)) {
        return ag_error_refuse(err, field,
                               "is not a valid IPv4 or IPv6 address");
    }
    return AG_OK;
}

unsigned ag_ip_bits(int family)
{
    return family == AF_INET ? 32 : 128;
}

void ag_ip_mask(const unsigned char *addr, unsigned bits, unsigned char *out)
{
    memset(out, 0, 16);
    memcpy(out, addr, bits / 8);
    if (bits % 8)
        out[bits / 8] =
            (unsigned char)(addr[bits / 8] & (0xff << (8 - bits % 8)));
}

void ag_identity_ip_net(const struct ag_ip *ip, unsigned bits, char *out)
{
    unsigned max = ag_ip_bits(ip->family);
    if (bits >= max) {
        memcpy(out, ip->text, strlen(ip->text) + 1);
        return;
    }
    unsigned char net[16];
    ag_ip_mask(ip->addr, bits, net);
    size_t n = ip_text(ip->family, net, out);
    snprintf(out + n, AG_IP_PREFIX_MAX - n, "/%u", bits);
}

void ag_identity_phone_prefix(const char *phone, unsigned digits, char *out)
{
    size_t n = strlen(phone);
    if (n > (size_t)digits + 1)
        n = (size_t)digits + 1;
    memcpy(out, phone, n);
    out[n] = '\0';
}

void ag_hasher_init(struct ag_hasher *h, const unsigned char *secret,
                    size_t len)
{
    if (len <= sizeof h->key) {
        memcpy(h->key, secret, len);
        h->keylen = len;
    } else {
        crypto_generichash(h->key, sizeof h->key, secret, len, NULL, 0);
        h->keylen = sizeof h->key;
    }
}

void ag_hasher_wipe(struct ag_hasher *h)
{
    sodium_memzero(h, sizeof *h);
}

static void put_lenprefixed(crypto_generichash_state *st, const char *s)
{
    size_t len = strlen(s);
    unsigned char n[4] = {(unsigned char)(len >> 24),
                          (unsigned char)(len >> 16), (unsigned char)(len >> 8),
                          (unsigned char)len};
    crypto_generichash_update(st, n, sizeof n);
    crypto_generichash_update(st, (const unsigned char *)s, len);
}

void ag_hasher_digest(const struct ag_hasher *h,
                      const struct ag_ident_part *parts, size_t n, char *out)
{
    crypto_generichash_state st;
    unsigned char digest[AG_DIGEST_BYTES];
    crypto_generichash_init(&st, h->key, h->keylen, sizeof digest);
    for (size_t i = 0; i < n; i++) {
        put_lenprefixed(&st, parts[i].kind);
        put_lenprefixed(&st, parts[i].value);
    }
    crypto_generichash_final(&st, digest, sizeof digest);
    sodium_bin2hex(out, AG_DIGEST_HEX + 1, digest, sizeof digest);
}

const char *const ag_key_kind_names[AG_KEY_COUNT] = {
    [AG_KEY_USER] = "user",
    [AG_KEY_IP] = "ip",
    [AG_KEY_PHONE] = "phone",
    [AG_KEY_DEVICE] = "device",
    [AG_KEY_IP_PREFIX] = "ip_prefix",
    [AG_KEY_PHONE_PREFIX] = "phone_prefix",
    [AG_KEY_COUNTRY] = "country",
    [AG_KEY_DEVICE_TOKEN] = "device_token",
    [AG_KEY_SITE] = "site",
    [AG_KEY_PASSWORD_FP] = "password_fp",
    [AG_KEY_ASN] = "asn",
    [AG_KEY_IP_COUNTRY] = "ip_country",
};

const char *ag_key_kind_name(enum ag_key_kind k)
{
    return ag_key_kind_names[k];
}

void ag_identity_digest(const struct ag_hasher *h, enum ag_key_kind kind,
                        const char *value, char *out)
{
    struct ag_ident_part part = {ag_key_kind_name(kind), value};
    ag_hasher_digest(h, &part, 1, out);
}

bool ag_identity_ip_country(const char *s, char *out)
{
    for (int i = 0; i < 2; i++) {
        char c = s[i];
        if (c >= 'a' && c <= 'z')
            c = (char)(c - 'a' + 'A');
        if (c < 'A' || c > 'Z')
            return false;
        out[i] = c;
    }
    out[2] = '\0';
    return s[2] == '\0';
}
