/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_http_conns: a connection must finish its request within the deadline
 * of becoming ready, however it trickles; at the cap the connection that
 * has made the least progress on its current request for the longest
 * time makes room (a stalled request as soon as an idle connection, an
 * idle one that has completed requests only after every one that has
 * not) and a busy one never does; one address (an IPv6
 * /64) holds at most its share; a descriptor is never ended twice or
 * after it was closed. The shut callback records instead of shutting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_http_conns.h"

struct shuts {
    int fds[64];
    size_t n;
    int waiting; /* a descriptor with unread bytes, or -1 */
};

static bool waiting(void *arg, int fd)
{
    struct shuts *s = arg;
    return fd == s->waiting;
}

static void record(void *arg, int fd)
{
    struct shuts *s = arg;
    assert_true(s->n < 64);
    s->fds[s->n++] = fd;
}

static struct ag_http_conns *table_with(struct shuts *s, unsigned max,
                                        unsigned per_ip, uint64_t deadline_ms)
{
    memset(s, 0, sizeof *s);
    s->waiting = -1;
    struct ag_http_conns *c = NULL;
    assert_int_equal(ag_http_conns_new(
                         &(struct ag_http_conns_opts){
                             .max_conns = max,
                             .max_per_ip = per_ip,
                             .deadline_ms = deadline_ms,
                             .fd_limit = 128,
                             .shut = record,
                             .pending = waiting,
                             .shut_arg = s,
                         },
                         &c),
                     AG_OK);
    return c;
}

static struct ag_http_conns *table(struct shuts *s, unsigned max,
                                   unsigned per_ip)
{
    return table_with(s, max, per_ip, 1000);
}

static struct sockaddr_storage v4(const char *a)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    in->sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, a, &in->sin_addr), 1);
    return ss;
}

static struct sockaddr_storage v6(const char *a)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in6 *in = (struct sockaddr_in6 *)&ss;
    in->sin6_family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, a, &in->sin6_addr), 1);
    return ss;
}

static enum ag_http_admit admit(struct ag_http_conns *c, int fd,
                                struct sockaddr_storage ss, uint64_t now)
{
    return ag_http_conns_admit(c, fd, (struct sockaddr *)&ss, 0, now);
}

static size_t live(struct ag_http_conns *c)
{
    struct ag_http_conns_stats st;
    ag_http_conns_stats(c, &st);
    return st.live;
}

static void a_ready_connection_ends_at_its_deadline_not_before(void **state)
{
    (void)state;
    struct shuts s;
    struct ag_http_conns *c = table(&s, 8, 8);
    assert_int_equal(admit(c, 10, v4("127.0.0.2"), 5000), AG_HTTP_ADMITTED);
    assert_int_equal(ag_http_conns_sweep(c, 5999), 0);
    assert_int_equal(s.n, 0);
    assert_int_equal(ag_http_conns_sweep(c, 6000), 1);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.fds[0], 10);
    /* Ended once: a later sweep does not end it again. */
    assert_int_equal(ag_http_conns_sweep(c, 9000), 0);
    assert_int_equal(live(c), 0);
    ag_http_conns_free(c);
}

static void a_busy_connection_has_no_deadline_until_ready_again(void **state)
{
    (void)state;
    struct shuts s;
    struct ag_http_conns *c = table(&s, 8, 8);
    assert_int_equal(admit(c, 10, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
    ag_http_conns_busy(c, 10);
    assert_int_equal(ag_http_conns_sweep(c, 60000), 0);
    /* The next request's deadline counts from the response. */
    ag_http_conns_ready(c, 10, 60000);
    assert_int_equal(ag_http_conns_sweep(c, 60999), 0);
    assert_int_equal(ag_http_conns_sweep(c, 61000), 1);
    assert_int_equal(s.fds[0], 10);
    ag_http_conns_free(c);
}

static void at_the_cap_the_longest_ready_connection_makes_room(void **state)
{
    (void)state;
    struct shuts s;
    struct ag_http_conns *c = table(&s, 3, 8);
    assert_int_equal(admit(c, 10, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 11, v4("127.0.0.3"), 1), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 12, v4("127.0.0.4"), 2), AG_HTTP_ADMITTED);
    /* 10 is being answered: it is not the one to go. */
    ag_http_conns_busy(c, 10);
    assert_int_equal(admit(c, 13, v4("127.0.0.5"), 3), AG_HTTP_ADMITTED);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.fds[0], 11);
    assert_int_equal(live(c), 3);
    struct ag_http_conns_stats st;
    ag_http_conns_stats(c, &st);
    assert_int_equal(st.reclaimed, 1);
    ag_http_conns_free(c);
}

static void
a_connection_whose_request_is_arriving_is_not_reclaimed(void **state)
{
    (void)state;
    struct shuts s;
    struct ag_http_conns *c = table(&s, 3, 8);
    assert_int_equal(admit(c, 10, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 11, v4("127.0.0.3"), 1), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 12, v4("127.0.0.4"), 2), AG_HTTP_ADMITTED);
    /* 10 has sent bytes libmicrohttpd read, 11 has bytes in the kernel:
     * both are receiving a request. 12, idle, goes. */
    ag_http_conns_note_bytes(c, 10, 2);
    s.waiting = 11;
    assert_int_equal(admit(c, 13, v4("127.0.0.5"), 3), AG_HTTP_ADMITTED);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.fds[0], 12);
    /* All three receiving: the longest-ready goes after all. */
    ag_http_conns_note_bytes(c, 13, 3);
    assert_int_equal(admit(c, 14, v4("127.0.0.6"), 4), AG_HTTP_ADMITTED);
    assert_int_equal(s.fds[1], 10);
    ag_http_conns_free(c);
}

/* The issue 29 case: an auth backend's pooled connection, idle between
 * its requests, against connections that sent one byte and never a
 * whole request. The pooled one is older and has sent nothing since its
 * answer, and still it is not the one to go. */
static void a_connection_that_completed_a_request_outlasts_every_unfinished_one(
    void **state)
{
    (void)state;
    struct shuts s;
    struct ag_http_conns *c = table(&s, 4, 8);
    assert_int_equal(admit(c, 10, v4("127.0.0.9"), 0), AG_HTTP_ADMITTED);
    ag_http_conns_busy(c, 10);
    ag_http_conns_ready(c, 10, 1);
    for (int fd = 11; fd <= 13; fd++) {
        assert_int_equal(admit(c, fd, v4("127.0.0.2"), (uint64_t)fd),
                         AG_HTTP_ADMITTED);
        ag_http_conns_note_bytes(c, fd, (uint64_t)fd);
    }
    /* Each newcomer sends its byte too; every one of them goes before
     * the pooled connection, oldest first. */
    for (int fd = 14; fd <= 20; fd++) {
        assert_int_equal(admit(c, fd, v4("127.0.0.3"), (uint64_t)fd),
                         AG_HTTP_ADMITTED);
        ag_http_conns_note_bytes(c, fd, (uint64_t)fd);
        assert_int_equal(s.fds[s.n - 1], fd - 3);
    }
    assert_int_equal(s.n, 7);
    /* Its next request arrives and is answered on the same connection. */
    ag_http_conns_note_bytes(c, 10, 29);
    ag_http_conns_busy(c, 10);
    ag_http_conns_ready(c, 10, 30);
    assert_int_equal(admit(c, 21, v4("127.0.0.3"), 31), AG_HTTP_ADMITTED);
    assert_int_equal(s.fds[s.n - 1], 18);
    ag_http_conns_free(c);
}

static void with_no_unfinished_connection_left_the_longest_idle_served_one_goes(
    void **state)
{
    (void)state;
    struct shuts s;
    struct ag_http_conns *c = table(&s, 3, 8);
    for (int fd = 10; fd <= 12; fd++) {
        assert_int_equal(admit(c, fd, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
        ag_http_conns_busy(c, fd);
        ag_http_conns_ready(c, fd, (uint64_t)fd);
    }
    /* 10, the longest idle, is receiving its next request: 11 goes. */
    s.waiting = 10;
    assert_int_equal(admit(c, 13, v4("127.0.0.3"), 20), AG_HTTP_ADMITTED);
    assert_int_equal(s.fds[0], 11);
    /* 13 has not completed a request: it goes before 12, younger as it
     * is. */
    assert_int_equal(admit(c, 14, v4("127.0.0.3"), 21), AG_HTTP_ADMITTED);
    assert_int_equal(s.fds[1], 13);
    /* Every one left is receiving: the longest-ready of the unfinished
     * (14), and then of the served (10). */
    ag_http_conns_note_bytes(c, 12, 21);
    ag_http_conns_note_bytes(c, 14, 21);
    assert_int_equal(admit(c, 15, v4("127.0.0.3"), 22), AG_HTTP_ADMITTED);
    assert_int_equal(s.fds[2], 14);
    ag_http_conns_busy(c, 15);
    assert_int_equal(admit(c, 16, v4("127.0.0.3"), 23), AG_HTTP_ADMITTED);
    assert_int_equal(s.fds[3], 10);
    ag_http_conns_free(c);
}

static void
the_deadline_ends_both_kinds_of_connection_in_age_order(void **state)
{
    (void)state;
    struct shuts s;
    struct ag_http_conns *c = table(&s, 8, 8);
    /* Ready at 100 (served), 200 (fresh), 300 (served), 400 (fresh). */
    assert_int_equal(admit(c, 10, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
    ag_http_conns_busy(c, 10);
    ag_http_conns_ready(c, 10, 100);
    assert_int_equal(admit(c, 11, v4("127.0.0.2"), 200), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 12, v4("127.0.0.2"), 250), AG_HTTP_ADMITTED);
    ag_http_conns_busy(c, 12);
    ag_http_conns_ready(c, 12, 300);
    assert_int_equal(admit(c, 13, v4("127.0.0.2"), 400), AG_HTTP_ADMITTED);
    assert_int_equal(ag_http_conns_sweep(c, 1099), 0);
    assert_int_equal(ag_http_conns_sweep(c, 1200), 2);
    assert_int_equal(ag_http_conns_sweep(c, 1300), 1);
    assert_int_equal(ag_http_conns_sweep(c, 1400), 1);
    assert_int_equal(s.n, 4);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(s.fds[i], 10 + (int)i);
    assert_int_equal(live(c), 0);
    ag_http_conns_free(c);
}

static void
at_the_cap_with_every_connection_busy_a_newcomer_is_refused(void **state)
{
    (void)state;
    struct shuts s;
    struct ag_http_conns *c = table(&s, 2, 8);
    assert_int_equal(admit(c, 10, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 11, v4("127.0.0.3"), 0), AG_HTTP_ADMITTED);
    ag_http_conns_busy(c, 10);
    ag_http_conns_busy(c, 11);
    assert_int_equal(admit(c, 12, v4("127.0.0.4"), 0), AG_HTTP_FULL);
    assert_int_equal(s.n, 0);
    /* One closes: room again. */
    ag_http_conns_closed(c, 10);
    assert_int_equal(admit(c, 12, v4("127.0.0.4"), 0), AG_HTTP_ADMITTED);
    struct ag_http_conns_stats st;
    ag_http_conns_stats(c, &st);
    assert_int_equal(st.refused, 1);
    ag_http_conns_free(c);
}

static void one_address_holds_at_most_its_share(void **state)
{
    (void)state;
    struct shuts s;
    struct ag_http_conns *c = table(&s, 100, 2);
    assert_int_equal(admit(c, 10, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 11, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 12, v4("127.0.0.2"), 0), AG_HTTP_PER_IP_FULL);
    assert_int_equal(admit(c, 12, v4("127.0.0.3"), 0), AG_HTTP_ADMITTED);
    /* A closed one gives its place back. */
    ag_http_conns_closed(c, 10);
    assert_int_equal(admit(c, 13, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
    ag_http_conns_free(c);
}

static void an_ipv6_host_counts_by_its_64_and_mapped_ipv4_as_ipv4(void **state)
{
    (void)state;
    struct shuts s;
    struct ag_http_conns *c = table(&s, 100, 2);
    assert_int_equal(admit(c, 10, v6("2001:db8:1:2::1"), 0), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 11, v6("2001:db8:1:2:ffff::9"), 0),
                     AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 12, v6("2001:db8:1:2::77"), 0),
                     AG_HTTP_PER_IP_FULL);
    assert_int_equal(admit(c, 12, v6("2001:db8:1:3::1"), 0), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 13, v4("192.0.2.1"), 0), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 14, v6("::ffff:192.0.2.1"), 0), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 15, v4("192.0.2.1"), 0), AG_HTTP_PER_IP_FULL);
    ag_http_conns_free(c);
}

static void a_unix_socket_client_counts_against_no_address(void **state)
{
    (void)state;
    struct shuts s;
    struct ag_http_conns *c = table(&s, 100, 1);
    struct sockaddr_storage un;
    memset(&un, 0, sizeof un);
    un.ss_family = AF_UNIX;
    for (int fd = 10; fd < 15; fd++)
        assert_int_equal(admit(c, fd, un, 0), AG_HTTP_ADMITTED);
    assert_int_equal(ag_http_conns_tag(c, 12), 0);
    ag_http_conns_free(c);
}

static void address_counts_survive_many_addresses_coming_and_going(void **state)
{
    (void)state;
    /* Backward-shift deletion: after any order of closes, each address
     * still finds its own count. */
    struct shuts s;
    struct ag_http_conns *c = table(&s, 128, 1);
    char a[32];
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 100; i++) {
            snprintf(a, sizeof a, "10.0.%d.%d", round, i);
            assert_int_equal(admit(c, 20 + i, v4(a), 0), AG_HTTP_ADMITTED);
        }
        for (int i = 0; i < 100; i++) {
            snprintf(a, sizeof a, "10.0.%d.%d", round, i);
            /* Still held: the second from the address is refused. */
            if ((i * 7 + round) % 3 == 0)
                assert_int_equal(admit(c, 127, v4(a), 0), AG_HTTP_PER_IP_FULL);
        }
        for (int i = 0; i < 100; i++)
            ag_http_conns_closed(c, 20 + (i * 37 + round) % 100);
        assert_int_equal(live(c), 0);
    }
    ag_http_conns_free(c);
}

static void
closed_is_idempotent_and_unknown_descriptors_are_refused(void **state)
{
    (void)state;
    struct shuts s;
    struct ag_http_conns *c = table(&s, 8, 8);
    assert_int_equal(admit(c, 128, v4("127.0.0.2"), 0), AG_HTTP_BAD_FD);
    assert_int_equal(admit(c, -1, v4("127.0.0.2"), 0), AG_HTTP_BAD_FD);
    assert_int_equal(admit(c, 10, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
    assert_non_null(ag_http_conns_wire(c, 10));
    ag_http_conns_closed(c, 10);
    ag_http_conns_closed(c, 10);
    assert_null(ag_http_conns_wire(c, 10));
    assert_int_equal(ag_http_conns_tag(c, 10), -1);
    assert_int_equal(live(c), 0);
    ag_http_conns_free(c);
}

static void
a_descriptor_reused_without_a_close_replaces_its_stale_slot(void **state)
{
    (void)state;
    /* libmicrohttpd closed 10 without telling; the kernel hands 10 out
     * again. The new connection is admitted, counted once, and the old
     * one's address gives its place back. */
    struct shuts s;
    struct ag_http_conns *c = table(&s, 8, 1);
    assert_int_equal(admit(c, 10, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 10, v4("127.0.0.3"), 0), AG_HTTP_ADMITTED);
    assert_int_equal(live(c), 1);
    assert_int_equal(admit(c, 11, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
    assert_int_equal(admit(c, 12, v4("127.0.0.3"), 0), AG_HTTP_PER_IP_FULL);
    /* A stale READY slot is not shut later under the new connection. */
    assert_int_equal(ag_http_conns_sweep(c, 500), 0);
    assert_int_equal(s.n, 0);
    ag_http_conns_free(c);
}

static void an_ended_connection_is_not_ended_again_when_it_closes(void **state)
{
    (void)state;
    struct shuts s;
    struct ag_http_conns *c = table(&s, 1, 8);
    assert_int_equal(admit(c, 10, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
    /* Reclaimed for 11; 10's close then comes from libmicrohttpd. */
    assert_int_equal(admit(c, 11, v4("127.0.0.3"), 0), AG_HTTP_ADMITTED);
    ag_http_conns_closed(c, 10);
    assert_int_equal(live(c), 1);
    assert_int_equal(ag_http_conns_sweep(c, 5000), 1);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.fds[1], 11);
    ag_http_conns_free(c);
}

/* Serves a request on fd, admitted before: READY again (served) at
 * now_ms. */
static void serve(struct ag_http_conns *c, int fd, uint64_t now_ms)
{
    ag_http_conns_busy(c, fd);
    ag_http_conns_ready(c, fd, now_ms);
}

/* A connection whose request began AG_HTTP_CONNS_RECEIVING_MS ago or
 * more has stalled: it no longer counts as receiving, and it goes before
 * an idle connection that completed requests, whichever list it is in. */
static void
a_request_stalled_past_the_grace_goes_before_an_idle_served_one(void **state)
{
    (void)state;
    const uint64_t R = AG_HTTP_CONNS_RECEIVING_MS;
    struct shuts s;
    struct ag_http_conns *c = table_with(&s, 3, 8, 600000);
    for (int fd = 10; fd <= 12; fd++)
        assert_int_equal(admit(c, fd, v4("127.0.0.2"), 0), AG_HTTP_ADMITTED);
    /* 10 and 12 are idle between requests; 11's next one began at 3. */
    serve(c, 10, 1);
    serve(c, 11, 2);
    ag_http_conns_note_bytes(c, 11, 3);
    serve(c, 12, 4);
    /* Within the grace, 11 is spared: the longest idle (10) goes. */
    assert_int_equal(admit(c, 13, v4("127.0.0.3"), 3 + R - 1),
                     AG_HTTP_ADMITTED);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.fds[0], 10);
    ag_http_conns_busy(c, 13);
    /* Past it, 11 goes before 12, idle for longer though 12 is. */
    assert_int_equal(admit(c, 14, v4("127.0.0.3"), 3 + R), AG_HTTP_ADMITTED);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.fds[1], 11);
    /* A later byte of a stalled request does not restart the grace: 14,
     * served at 3 + R, began its next request then and goes at 3 + 2R
     * before 12 and 13, idle (13 since its answer at 3 + R + 1). */
    serve(c, 14, 3 + R);
    ag_http_conns_note_bytes(c, 14, 3 + R);
    ag_http_conns_note_bytes(c, 14, 3 + 2 * R - 1);
    ag_http_conns_ready(c, 13, 3 + R + 1);
    assert_int_equal(admit(c, 15, v4("127.0.0.3"), 3 + 2 * R),
                     AG_HTTP_ADMITTED);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.fds[2], 14);
    ag_http_conns_busy(c, 15);
    /* An answered request's first byte is forgotten: 12's next request,
     * begun at 3 + 3R - 2, is arriving at 3 + 3R, and 13, idle, goes. */
    ag_http_conns_note_bytes(c, 12, 3 + 2 * R);
    serve(c, 12, 3 + 2 * R + 1);
    ag_http_conns_note_bytes(c, 12, 3 + 3 * R - 2);
    assert_int_equal(admit(c, 16, v4("127.0.0.3"), 3 + 3 * R),
                     AG_HTTP_ADMITTED);
    assert_int_equal(s.n, 4);
    assert_int_equal(s.fds[3], 13);
    ag_http_conns_free(c);
}

/* The review of issue 29: each flood connection completes one cheap
 * request and then sends one byte of the next, so it sits among the
 * served ones as "receiving". Once that byte is older than the grace,
 * every flood connection goes before the pooled one, oldest first. */
static void
completing_one_request_first_does_not_spare_a_stalled_connection(void **state)
{
    (void)state;
    const uint64_t R = AG_HTTP_CONNS_RECEIVING_MS;
    struct shuts s;
    struct ag_http_conns *c = table_with(&s, 4, 8, 600000);
    assert_int_equal(admit(c, 10, v4("127.0.0.9"), 0), AG_HTTP_ADMITTED);
    serve(c, 10, 1);
    for (int fd = 11; fd <= 13; fd++) {
        assert_int_equal(admit(c, fd, v4("127.0.0.2"), 2), AG_HTTP_ADMITTED);
        serve(c, fd, (uint64_t)fd);
        ag_http_conns_note_bytes(c, fd, (uint64_t)fd);
    }
    /* Each newcomer comes once the last one's byte has stalled, and does
     * the same; the pooled connection (10) is the longest idle. */
    for (int fd = 14; fd <= 20; fd++) {
        uint64_t now = (uint64_t)(fd - 13) * R + 20;
        assert_int_equal(admit(c, fd, v4("127.0.0.3"), now), AG_HTTP_ADMITTED);
        assert_int_equal(s.fds[s.n - 1], fd - 3);
        serve(c, fd, now);
        ag_http_conns_note_bytes(c, fd, now);
    }
    assert_int_equal(s.n, 7);
    ag_http_conns_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_ready_connection_ends_at_its_deadline_not_before),
        cmocka_unit_test(a_busy_connection_has_no_deadline_until_ready_again),
        cmocka_unit_test(at_the_cap_the_longest_ready_connection_makes_room),
        cmocka_unit_test(
            a_connection_whose_request_is_arriving_is_not_reclaimed),
        cmocka_unit_test(
            a_connection_that_completed_a_request_outlasts_every_unfinished_one),
        cmocka_unit_test(
            with_no_unfinished_connection_left_the_longest_idle_served_one_goes),
        cmocka_unit_test(
            the_deadline_ends_both_kinds_of_connection_in_age_order),
        cmocka_unit_test(
            at_the_cap_with_every_connection_busy_a_newcomer_is_refused),
        cmocka_unit_test(one_address_holds_at_most_its_share),
        cmocka_unit_test(an_ipv6_host_counts_by_its_64_and_mapped_ipv4_as_ipv4),
        cmocka_unit_test(a_unix_socket_client_counts_against_no_address),
        cmocka_unit_test(
            address_counts_survive_many_addresses_coming_and_going),
        cmocka_unit_test(
            closed_is_idempotent_and_unknown_descriptors_are_refused),
        cmocka_unit_test(an_ended_connection_is_not_ended_again_when_it_closes),
        cmocka_unit_test(
            a_descriptor_reused_without_a_close_replaces_its_stale_slot),
        cmocka_unit_test(
            a_request_stalled_past_the_grace_goes_before_an_idle_served_one),
        cmocka_unit_test(
            completing_one_request_first_does_not_spare_a_stalled_connection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
