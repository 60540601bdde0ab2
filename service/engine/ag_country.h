/* SPDX-License-Identifier: Apache-2.0 */
/*
 * E.164 country calling codes, for the `country` key kind of SMS pumping
 * policies: a limit on how many codes are sent to per country, whatever
 * the number. The calling code of a phone is not personal data (it names a
 * numbering zone shared by millions), so unlike the phone itself it can be
 * shown, logged and listed in plain text ("+44").
 *
 * The codes are embedded data, generated from libphonenumber's metadata as
 * Debian 12's python3-phonenumbers ships it (which follows the ITU-T
 * assignments), geographic and non-geographic (+800, +808, +870, +878, +881,
 * +882, +883, +888, +979) alike; ag_country.c names the version and how to
 * regenerate the table. A code the ITU lists but libphonenumber does not
 * carry (a trial or reserved code) is treated as unassigned; regenerating
 * from a newer package picks up new assignments. A code has 1 to 3 digits
 * and no code is a prefix of another, so a number has at most one. Codes
 * with a subdivision digit or network code after them (+881 0..9, +882 and
 * +883 networks) are reduced to the 3-digit code.
 *
 * A `country` key groups by calling code, not by country: one code can
 * cover many countries. All of zone 1, the North American Numbering Plan
 * (US, Canada and 23 Caribbean and Pacific territories), is the one key
 * "+1"; all of zone 7 (Russia and Kazakhstan) is "+7"; and "+44" also
 * holds Guernsey, Jersey and the Isle of Man. Telling these apart needs
 * area codes, which this module does not know.
 *
 * The same metadata gives each code's national (trunk) prefixes, the "0"
 * of "+44 07700 900123" or the "1" of "+1 1 202 555 0143", which national
 * dialling needs and international dialling drops: ag_country_fold_trunk
 * drops one where the digits after it cannot be a number of their own,
 * keeps the number as written where they can, and refuses the rest, and
 * refuses the carrier-code and transform-rule spellings libphonenumber
 * reads as another number (ag_country_trunk.c, from
 * scripts/gen_country_codes.py trunk).
 *
 * Pure functions over constant tables: safe from any thread, no
 * allocation.
 */
#ifndef AG_COUNTRY_H
#define AG_COUNTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An E.164 number: '+', then 8 to 15 digits, the calling code's among
 * them. */
#define AG_PHONE_DIGITS_MIN 8
#define AG_PHONE_DIGITS_MAX 15                 /* E.164 */
#define AG_PHONE_MAX (1 + AG_PHONE_DIGITS_MAX) /* '+' and the digits */

#define AG_COUNTRY_DIGITS_MAX 3
#define AG_COUNTRY_MAX (1 + AG_COUNTRY_DIGITS_MAX + 1) /* '+', digits, NUL */

/* Writes the calling code of e164, a normalised phone ('+' and 8 to 15
 * digits, as ag_identity_phone makes it), into out as "+NN" and returns
 * AG_OK. Returns AG_EINVAL, with out "", if e164 is not of that shape or
 * no assigned code is a prefix of its digits. */
int ag_country_code(const char *e164, char out[AG_COUNTRY_MAX]);

/* Whether text is exactly '+' and an assigned calling code: "+44", never
 * "+044", "+440", "44" or "+4". For list entries and policy values; NULL
 * is not one. */
bool ag_country_code_valid(const char *text);

#define AG_TRUNK_PREFIX_MAX 8 /* the digits of a head, and NUL */
/* Folds a national (trunk) prefix written right after the calling code of
 * e164, a phone of the shape ag_country_code takes, in place. For a code
 * with heads (trunk prefixes, carrier codes, the digits a transform rule
 * of libphonenumber rewrites), the digits after the code that begin with
 * one (the longest) are judged by their count and the digit after it:
 * - no number of the code's regions is written so, and the digits left
 *   without the prefix have a possible length: the prefix is dropped, as
 *   libphonenumber drops it ("+44 07700 900123" is +447700900123);
 * - some number is written so ("+7 800 123 4567", a number of its own
 *   that begins with Russia's trunk 8): kept as written;
 * - otherwise (no number with the prefix or without it, a carrier code
 *   or a transform rule: "+54 11 15 1234 5678", "+61 1831 412 345 678";
 *   or what is left would not be kept as it is): refused, AG_EINVAL,
 *   with the head's digits in prefix. A local number that libphonenumber
 *   completes with an area code ("+261 2021234") is refused the same
 *   way, with prefix "".
 * Returns AG_OK otherwise, e164 unchanged when no head applies or its
 * code is unassigned (ag_country_code refuses it). A folded phone folds
 * to itself. */
int ag_country_fold_trunk(char *e164, char prefix[AG_TRUNK_PREFIX_MAX]);

/* The assigned codes as numbers, strictly ascending; the count is
 * ag_country_code_count. For the tests of the table's invariants. */
extern const uint16_t ag_country_codes[];
extern const size_t ag_country_code_count;

#endif
