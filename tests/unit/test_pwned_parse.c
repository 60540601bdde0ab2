/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_pwned_parse: both downloader forms (whole hashes, and a prefix
 * file's suffixes), both modes, LF and CRLF, either case, a last line
 * without its end, text split anywhere between feeds; --min-count drops
 * and counts; every malformed kind is refused with the source's name and
 * the line's number; a hash that does not go up (a duplicate, a lower
 * one, across sources too) is refused and the message says the input
 * must be sorted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_pwned_parse.h"

#define MAX_GOT 16

struct got {
    size_t n;
    char hex[MAX_GOT][41];
    uint32_t count[MAX_GOT];
    unsigned len;
};

static int collect(void *ctx, const uint8_t *hash, uint32_t count)
{
    struct got *g = ctx;
    assert_true(g->n < MAX_GOT);
    for (unsigned i = 0; i < g->len; i++)
        snprintf(g->hex[g->n] + 2 * i, 3, "%02X", hash[i]);
    g->count[g->n++] = count;
    return AG_OK;
}

/* Feeds text as the caller does, step bytes at a time (0: all at once),
 * keeping the unused tail, then ends the source. */
static int feed(struct ag_pwned_parser *p, const char *text, size_t step)
{
    char buf[4096];
    size_t have = 0, off = 0, len = strlen(text);
    while (off < len) {
        size_t k = step && step < len - off ? step : len - off;
        memcpy(buf + have, text + off, k);
        have += k;
        off += k;
        size_t used;
        int rc = ag_pwned_parse_feed(p, buf, have, &used);
        if (rc != AG_OK)
            return rc;
        memmove(buf, buf + used, have - used);
        have -= used;
    }
    return ag_pwned_parse_end(p, buf, have);
}

static int parse(struct ag_pwned_parser *p, struct got *g,
                 enum ag_pwned_mode mode, uint32_t min, const char *name,
                 int prefix, const char *text)
{
    memset(g, 0, sizeof(*g));
    g->len = mode == AG_PWNED_SHA1 ? 20 : 16;
    ag_pwned_parser_init(p, mode, min, collect, g);
    ag_pwned_parse_begin(p, name, prefix);
    return feed(p, text, 0);
}

static const char sha1_text[] =
    "000000005AD76BD555C1D6D771DE417A4B87E4B4:4\n"
    "00000000A8DAE4228F821FB418F59826079BF368:2\n"
    "FFFFFFFFF9E8B2B0D1F3B3A0A0A26F7F1B5D6A3C:123456\n";

static void
sha1_lines_in_lf_crlf_and_any_case_give_the_same_hashes(void **state)
{
    (void)state;
    static const char crlf_lower[] =
        "000000005ad76bd555c1d6d771de417a4b87e4b4:4\r\n"
        "00000000a8dae4228f821fb418f59826079bf368:2\r\n"
        "ffffffffF9E8B2B0D1F3B3A0A0A26f7f1b5d6a3c:123456\r\n";
    struct ag_pwned_parser p;
    struct got a, b;
    assert_int_equal(parse(&p, &a, AG_PWNED_SHA1, 1, "a", -1, sha1_text),
                     AG_OK);
    assert_int_equal(parse(&p, &b, AG_PWNED_SHA1, 1, "b", -1, crlf_lower),
                     AG_OK);
    assert_int_equal(a.n, 3);
    assert_int_equal(b.n, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(a.hex[i], b.hex[i]);
        assert_int_equal(a.count[i], b.count[i]);
    }
    assert_string_equal(a.hex[2], "FFFFFFFFF9E8B2B0D1F3B3A0A0A26F7F1B5D6A3C");
    assert_int_equal(a.count[2], 123456);
    assert_int_equal(p.lines, 3);
    assert_int_equal(p.kept, 3);
}

static void
text_split_anywhere_and_a_last_line_without_its_end_parse_whole(void **state)
{
    (void)state;
    /* The last line has no line end, as a range the API returned. */
    static const char text[] =
        "000000005AD76BD555C1D6D771DE417A4B87E4B4:4\r\n"
        "00000000A8DAE4228F821FB418F59826079BF368:4294967295";
    struct ag_pwned_parser p;
    struct got g;
    for (size_t step = 1; step < 60; step += 7) {
        memset(&g, 0, sizeof(g));
        g.len = 20;
        ag_pwned_parser_init(&p, AG_PWNED_SHA1, 1, collect, &g);
        ag_pwned_parse_begin(&p, "split", -1);
        assert_int_equal(feed(&p, text, step), AG_OK);
        assert_int_equal(g.n, 2);
        assert_string_equal(g.hex[1],
                            "00000000A8DAE4228F821FB418F59826079BF368");
        assert_int_equal(g.count[1], 4294967295u);
    }
}

static void ntlm_lines_give_16_byte_hashes(void **state)
{
    (void)state;
    static const char text[] = "00000000A8DAE4228F821FB418F59826:7\n"
                               "8846F7EAEE8FB117AD06BDD830B7586C:3\n";
    struct ag_pwned_parser p;
    struct got g;
    assert_int_equal(parse(&p, &g, AG_PWNED_NTLM, 1, "n", -1, text), AG_OK);
    assert_int_equal(g.n, 2);
    assert_string_equal(g.hex[1], "8846F7EAEE8FB117AD06BDD830B7586C");
    assert_int_equal(g.count[1], 3);
}

static void prefix_file_suffixes_join_their_prefix(void **state)
{
    (void)state;
    /* 5BAA6's file, as the range API returns it (CRLF, no end). */
    static const char text[] = "003D68EB55068C33ACE09247EE4C639306B:3\r\n"
                               "1E4C9B93F3F0682250B6CF8331B7EE68FD8:10434004";
    struct ag_pwned_parser p;
    struct got g;
    assert_int_equal(
        parse(&p, &g, AG_PWNED_SHA1, 1, "dl/5BAA6.txt", 0x5baa6, text), AG_OK);
    assert_int_equal(g.n, 2);
    assert_string_equal(g.hex[0], "5BAA6003D68EB55068C33ACE09247EE4C639306B");
    assert_string_equal(g.hex[1], "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8");
    /* NTLM prefix files hold 27-digit suffixes. */
    assert_int_equal(parse(&p, &g, AG_PWNED_NTLM, 1, "n/8846F.txt", 0x8846f,
                           "7EAEE8FB117AD06BDD830B7586C:3\n"),
                     AG_OK);
    assert_string_equal(g.hex[0], "8846F7EAEE8FB117AD06BDD830B7586C");
}

static void min_count_drops_and_counts_the_rare_ones(void **state)
{
    (void)state;
    struct ag_pwned_parser p;
    struct got g;
    assert_int_equal(parse(&p, &g, AG_PWNED_SHA1, 3, "m", -1, sha1_text),
                     AG_OK);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.count[0], 4);
    assert_int_equal(g.count[1], 123456);
    assert_int_equal(p.kept, 2);
    assert_int_equal(p.dropped, 1);
    assert_int_equal(p.lines, 3);
}

static void refused(enum ag_pwned_mode mode, int prefix, const char *text,
                    const char *want_line, const char *want_why)
{
    struct ag_pwned_parser p;
    struct got g;
    assert_int_equal(parse(&p, &g, mode, 1, "in.txt", prefix, text), AG_EINVAL);
    if (!strstr(p.err, want_line) || !strstr(p.err, want_why))
        fail_msg("for %s: \"%s\" should hold \"%s\" and \"%s\"", text, p.err,
                 want_line, want_why);
}

#define GOOD "000000005AD76BD555C1D6D771DE417A4B87E4B4:4\n"

static void
every_malformed_line_is_refused_with_its_file_and_number(void **state)
{
    (void)state;
    refused(AG_PWNED_SHA1, -1, GOOD "\n", "in.txt line 2:", "empty line");
    refused(AG_PWNED_SHA1, -1, GOOD "\r\n", "in.txt line 2:", "empty line");
    refused(AG_PWNED_SHA1, -1,
            GOOD "00000000A8DAE4228F821FB418F59826079BF36:2\n",
            "in.txt line 2:", "has 39 hex digits, --mode sha1 needs 40");
    refused(AG_PWNED_SHA1, -1,
            GOOD "00000000A8DAE4228F821FB418F59826079BF3681:2\n",
            "in.txt line 2:", "has 41 hex digits");
    /* An NTLM file imported as SHA-1, and the other way round. */
    refused(AG_PWNED_SHA1, -1, "8846F7EAEE8FB117AD06BDD830B7586C:3\n",
            "in.txt line 1:", "has 32 hex digits, --mode sha1 needs 40");
    refused(AG_PWNED_NTLM, -1, GOOD,
            "in.txt line 1:", "has 40 hex digits, --mode ntlm needs 32");
    refused(AG_PWNED_SHA1, -1,
            GOOD "00000000A8DAE4228F821FB418G59826079BF368:2\n",
            "in.txt line 2:", "character 27 ('G') is not a hex digit");
    refused(AG_PWNED_SHA1, -1,
            GOOD "00000000A8DAE4228F821FB418F59826079BF368 2\n",
            "in.txt line 2:", "character 41 (byte 0x20) should be the ':'");
    refused(AG_PWNED_SHA1, -1,
            GOOD "00000000A8DAE4228F821FB418F59826079BF368\n",
            "in.txt line 2:", "no ':' and count");
    refused(AG_PWNED_SHA1, -1,
            GOOD "00000000A8DAE4228F821FB418F59826079BF368:\n",
            "in.txt line 2:", "no count after ':'");
    refused(AG_PWNED_SHA1, -1,
            GOOD "00000000A8DAE4228F821FB418F59826079BF368:-2\n",
            "in.txt line 2:", "no count after ':'");
    refused(AG_PWNED_SHA1, -1,
            GOOD "00000000A8DAE4228F821FB418F59826079BF368:4294967296\n",
            "in.txt line 2:", "larger than 4294967295");
    refused(AG_PWNED_SHA1, -1,
            GOOD "00000000A8DAE4228F821FB418F59826079BF368:123456789012\n",
            "in.txt line 2:", "larger than 4294967295");
    refused(AG_PWNED_SHA1, -1,
            GOOD "00000000A8DAE4228F821FB418F59826079BF368:2 \n",
            "in.txt line 2:", "character 43 is neither a digit");
    refused(AG_PWNED_SHA1, -1,
            GOOD "00000000A8DAE4228F821FB418F59826079BF368:2x\r\n",
            "in.txt line 2:", "character 43 is neither a digit");
    /* A suffix of the wrong length in a prefix file. */
    refused(AG_PWNED_SHA1, 0x5baa6, "8846F7EAEE8FB117AD06BDD830B7586:3\n",
            "in.txt line 1:", "the suffix has 31 hex digits");
    /* A last line without its end is checked like the others. */
    refused(AG_PWNED_SHA1, -1, GOOD "00000000A8DAE4228F8:2",
            "in.txt line 2:", "has 19 hex digits");
    static char longline[400];
    memset(longline, '0', sizeof(longline) - 1);
    refused(AG_PWNED_SHA1, -1, longline,
            "in.txt line 1:", "without a line end");
}

static void
a_hash_that_does_not_go_up_is_refused_asking_for_sorted_input(void **state)
{
    (void)state;
    refused(AG_PWNED_SHA1, -1,
            GOOD "000000005ad76bd555c1d6d771de417a4b87e4b4:9\n",
            "in.txt line 2:", "the same as the hash before it");
    refused(AG_PWNED_SHA1, -1,
            GOOD "000000005AD76BD555C1D6D771DE417A4B87E4B3:9\n",
            "in.txt line 2:", "lower than the hash before it");
    refused(AG_PWNED_SHA1, -1,
            GOOD "000000005AD76BD555C1D6D771DE417A4B87E4B3:9\n",
            "in.txt line 2:", "LC_ALL=C sort");
    /* Order holds across the sources of one import. */
    struct ag_pwned_parser p;
    struct got g = {.len = 20};
    ag_pwned_parser_init(&p, AG_PWNED_SHA1, 1, collect, &g);
    ag_pwned_parse_begin(&p, "first.txt", -1);
    assert_int_equal(feed(&p, sha1_text, 0), AG_OK);
    ag_pwned_parse_begin(&p, "second.txt", -1);
    assert_int_equal(feed(&p, GOOD, 0), AG_EINVAL);
    assert_non_null(strstr(p.err, "second.txt line 1:"));
    assert_non_null(strstr(p.err, "lower than"));
    /* A dropped line still counts for the order. */
    refused(AG_PWNED_SHA1, -1,
            "000000005AD76BD555C1D6D771DE417A4B87E4B4:0\n"
            "000000005AD76BD555C1D6D771DE417A4B87E4B4:9\n",
            "in.txt line 2:", "the same as");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            sha1_lines_in_lf_crlf_and_any_case_give_the_same_hashes),
        cmocka_unit_test(
            text_split_anywhere_and_a_last_line_without_its_end_parse_whole),
        cmocka_unit_test(ntlm_lines_give_16_byte_hashes),
        cmocka_unit_test(prefix_file_suffixes_join_their_prefix),
        cmocka_unit_test(min_count_drops_and_counts_the_rare_ones),
        cmocka_unit_test(
            every_malformed_line_is_refused_with_its_file_and_number),
        cmocka_unit_test(
            a_hash_that_does_not_go_up_is_refused_asking_for_sorted_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
