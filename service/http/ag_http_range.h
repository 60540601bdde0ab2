/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /range/{prefix}: the Pwned Passwords range API of
 * api.pwnedpasswords.com, answered from the corpora the service maps
 * (ag_pwned_live), so that any HIBP client given the service's base URL
 * works unchanged, without the internet.
 *
 * As the public API answers: the prefix is 5 hex digits in any case;
 * ?mode=ntlm picks the NTLM corpus (mode=sha1 or none: SHA-1); the body is
 * text/plain, one SUFFIX:COUNT line per hash of the range in hash order,
 * upper case, lines separated by CRLF and the last one without. With the
 * request header Add-Padding: true, lines of random suffixes with count 0
 * follow the real ones, as many as bring the answer to 800 lines and then
 * 10 to 199 more (a random number), so that its size says little about
 * the prefix; no padding line is a suffix of the range.
 *
 * An unpadded answer is the same bytes for as long as the corpus is: it
 * carries Cache-Control: public, max-age=3600 and an ETag made of the
 * mode, the prefix and the corpus's checksum, and an If-None-Match that
 * names it is a 304. A padded answer differs each time: no-store, no ETag,
 * never a 304. Both say Vary: Add-Padding.
 *
 * A bad prefix or mode is a 400 naming it; a mode with no corpus a 404
 * saying so. The body is built in one buffer sized from the range before
 * the corpus is let go, so nothing is held while it is sent.
 */
#ifndef AG_HTTP_RANGE_H
#define AG_HTTP_RANGE_H

#include "ag_http_response.h"
#include "ag_http_route.h"

struct ag_metrics;
struct ag_pwned_live;

/* The path the route serves, and every path below it. */
#define AG_HTTP_RANGE_PATH "/range"
/* Lines a padded answer holds at least, before its random 10 to 199. */
#define AG_HTTP_RANGE_PADDED_LINES 800

/* Answers req (GET or HEAD of AG_HTTP_RANGE_PATH or below) into r from
 * live's corpora (NULL: none loaded), counting each range answered in
 * metrics (may be NULL). Returns AG_OK, or AG_ENOMEM. */
int ag_http_range(struct ag_pwned_live *live, struct ag_metrics *metrics,
                  const struct ag_http_request *req,
                  struct ag_http_response *r);

#endif
