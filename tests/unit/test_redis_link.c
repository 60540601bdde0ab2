/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_redis_link without a Redis: a fake server on a unix socket (a thread
 * that answers each read with the next canned reply) shows what the link
 * writes (AUTH user pass, SELECT), that an error text never holds the
 * password even when the server echoes it, that a server that never
 * answers is a timeout within the timeout, that TLS to a plaintext server
 * fails the handshake in one line, and that a closed connection is stale.
 * The TLS settings' refusals (a missing CA file, a key without a
 * certificate) need no server at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "ag_error.h"
#include "ag_redis_link.h"
#include "ag_redis_reply.h"

#define PASSWORD "hunter2-not-in-any-log"

/* A one-connection server: reads, answers replies[i] to the i-th read,
 * then closes (or, with hold, waits for the client to close first). */
struct fake {
    char dir[64];
    char path[108];
    int lfd;
    pthread_t thread;
    const char *const *replies;
    size_t nreplies;
    bool hold;
    char got[8192]; /* everything the client wrote */
    size_t got_len;
};

static void *serve(void *arg)
{
    struct fake *f = arg;
    int fd = accept(f->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    for (size_t i = 0; i < f->nreplies; i++) {
        ssize_t n =
            read(fd, f->got + f->got_len, sizeof f->got - 1 - f->got_len);
        if (n <= 0)
            break;
        f->got_len += (size_t)n;
        if (write(fd, f->replies[i], strlen(f->replies[i])) < 0)
            break;
    }
    char sink[512];
    while (f->hold && read(fd, sink, sizeof sink) > 0)
        ;
    close(fd);
    return NULL;
}

static void fake_start(struct fake *f, const char *const *replies, size_t n,
                       bool hold)
{
    memset(f, 0, sizeof *f);
    strcpy(f->dir, "/tmp/ag-link-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/s", f->dir);
    f->replies = replies;
    f->nreplies = n;
    f->hold = hold;
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    strcpy(sun.sun_path, f->path);
    f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(f->lfd >= 0);
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&sun, sizeof sun), 0);
    assert_int_equal(listen(f->lfd, 1), 0);
    assert_int_equal(pthread_create(&f->thread, NULL, serve, f), 0);
}

static void fake_stop(struct fake *f)
{
    pthread_join(f->thread, NULL);
    close(f->lfd);
    unlink(f->path);
    rmdir(f->dir);
}

static struct ag_redis_addr unix_addr(const struct fake *f)
{
    struct ag_redis_addr a = {.kind = AG_REDIS_UNIX};
    strcpy(a.path, f->path);
    return a;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void auth_is_user_and_password_then_select(void **state)
{
    (void)state;
    static const char *const replies[] = {"+OK\r\n", "+OK\r\n", "+PONG\r\n"};
    struct fake f;
    fake_start(&f, replies, 3, true);
    struct ag_redis_addr a = unix_addr(&f);
    strcpy(a.user, "ag");
    strcpy(a.password, "pw");
    a.db = 3;
    struct ag_redis_link *l = NULL;
    struct ag_error err = {0};
    assert_int_equal(ag_redis_link_open(&a, NULL, 1000, &l, &err), AG_OK);
    assert_non_null(l);
    assert_false(ag_redis_link_stale(l));
    const char ping[] = "*1\r\n$4\r\nPING\r\n";
    assert_int_equal(ag_redis_link_append(l, ping, sizeof ping - 1), AG_OK);
    void *reply = NULL;
    assert_int_equal(ag_redis_link_get_reply(l, &reply), AG_OK);
    redisReply *r = reply;
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    assert_string_equal(r->str, "PONG");
    ag_redis_reply_free(r);
    ag_redis_link_close(l);
    fake_stop(&f);
    f.got[f.got_len] = '\0';
    assert_string_equal(f.got, "*3\r\n$4\r\nAUTH\r\n$2\r\nag\r\n$2\r\npw\r\n"
                               "*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n"
                               "*1\r\n$4\r\nPING\r\n");
}

static void password_alone_is_auth_with_one_argument(void **state)
{
    (void)state;
    static const char *const replies[] = {"+OK\r\n"};
    struct fake f;
    fake_start(&f, replies, 1, true);
    struct ag_redis_addr a = unix_addr(&f);
    strcpy(a.password, "pw");
    struct ag_redis_link *l = NULL;
    struct ag_error err = {0};
    assert_int_equal(ag_redis_link_open(&a, NULL, 1000, &l, &err), AG_OK);
    ag_redis_link_close(l);
    fake_stop(&f);
    f.got[f.got_len] = '\0';
    assert_string_equal(f.got, "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n");
}

static void error_text_never_holds_the_password(void **state)
{
    (void)state;
    /* A server that echoes the password in its refusal (Redis does not;
     * a proxy might). */
    static const char *const replies[] = {
        "-WRONGPASS invalid username-password pair (" PASSWORD
        ", again: " PASSWORD ")\r\n"};
    struct fake f;
    fake_start(&f, replies, 1, false);
    struct ag_redis_addr a = unix_addr(&f);
    strcpy(a.user, "ag");
    strcpy(a.password, PASSWORD);
    struct ag_redis_link *l = NULL;
    struct ag_error err = {0};
    assert_int_equal(ag_redis_link_open(&a, NULL, 1000, &l, &err), AG_ESTORE);
    assert_null(l);
    fake_stop(&f);
    assert_non_null(strstr(err.msg, "redis: WRONGPASS invalid"));
    assert_null(strstr(err.msg, PASSWORD));
    assert_null(strstr(err.msg, "hunter2"));
    assert_null(strchr(err.msg, '\n'));
}

static void server_that_never_answers_is_a_timeout(void **state)
{
    (void)state;
    struct fake f;
    fake_start(&f, NULL, 0, true);
    struct ag_redis_addr a = unix_addr(&f);
    strcpy(a.password, PASSWORD);
    struct ag_redis_link *l = NULL;
    struct ag_error err = {0};
    double started = now_s();
    assert_int_equal(ag_redis_link_open(&a, NULL, 100, &l, &err), AG_ESTORE);
    double took = now_s() - started;
    fake_stop(&f);
    assert_string_equal(err.msg, "redis: AUTH: read timed out after 100 ms");
    assert_true(took >= 0.09);
    assert_true(took < 1.0);
}

static void tls_to_a_plaintext_server_fails_the_handshake(void **state)
{
    (void)state;
    /* What Redis without TLS answers a ClientHello, if it has a newline. */
    static const char *const replies[] = {"-ERR unknown command\r\n"};
    struct fake f;
    fake_start(&f, replies, 1, false);
    struct ag_redis_addr a = unix_addr(&f);
    a.tls = true;
    strcpy(a.password, PASSWORD);
    struct ag_redis_tls *tls = NULL;
    struct ag_error err = {0};
    assert_int_equal(ag_redis_tls_new(&a, &tls, &err), AG_OK);
    struct ag_redis_link *l = NULL;
    assert_int_equal(ag_redis_link_open(&a, tls, 1000, &l, &err), AG_ESTORE);
    fake_stop(&f);
    ag_redis_tls_free(tls);
    assert_true(strncmp(err.msg, "tls: handshake failed: ", 23) == 0);
    assert_null(strchr(err.msg, '\n'));
    assert_null(strstr(err.msg, PASSWORD));
}

static void closed_connection_is_stale(void **state)
{
    (void)state;
    static const char *const replies[] = {"+OK\r\n"};
    struct fake f;
    fake_start(&f, replies, 1, false);
    struct ag_redis_addr a = unix_addr(&f);
    strcpy(a.password, "pw");
    struct ag_redis_link *l = NULL;
    struct ag_error err = {0};
    assert_int_equal(ag_redis_link_open(&a, NULL, 1000, &l, &err), AG_OK);
    fake_stop(&f); /* the server has closed its end */
    assert_true(ag_redis_link_stale(l));
    const char ping[] = "*1\r\n$4\r\nPING\r\n";
    ag_redis_link_append(l, ping, sizeof ping - 1);
    void *reply = NULL;
    assert_int_equal(ag_redis_link_get_reply(l, &reply), AG_ESTORE);
    assert_null(reply);
    assert_false(ag_redis_link_timed_out(l));
    assert_true(ag_redis_link_error(l)[0] != '\0');
    ag_redis_link_close(l);
}

static void missing_ca_file_is_named_in_one_line(void **state)
{
    (void)state;
    struct ag_redis_addr a = {.kind = AG_REDIS_TCP, .port = 6379, .tls = true};
    strcpy(a.host, "127.0.0.1");
    strcpy(a.password, PASSWORD);
    strcpy(a.tls_ca_file, "/nonexistent/ca.pem");
    struct ag_redis_tls *tls = (struct ag_redis_tls *)&a; /* not NULL */
    struct ag_error err = {0};
    assert_int_equal(ag_redis_tls_new(&a, &tls, &err), AG_EINVAL);
    assert_null(tls);
    assert_string_equal(err.field, "redis-tls-ca-file");
    assert_string_equal(err.msg, "tls: CA file '/nonexistent/ca.pem': No "
                                 "such file or directory");
    assert_null(strchr(err.msg, '\n'));
    assert_null(strstr(err.msg, PASSWORD));
}

static void key_without_certificate_is_refused(void **state)
{
    (void)state;
    struct ag_redis_addr a = {.kind = AG_REDIS_TCP, .port = 6379, .tls = true};
    strcpy(a.host, "127.0.0.1");
    strcpy(a.tls_key_file, "/etc/hostname");
    struct ag_redis_tls *tls = NULL;
    struct ag_error err = {0};
    assert_int_equal(ag_redis_tls_new(&a, &tls, &err), AG_EINVAL);
    assert_null(tls);
    assert_string_equal(err.msg, "tls: a key file needs a certificate file");
}

int main(void)
{
    /* As the service does (main.c): a TLS alert written to a server that
     * has closed its end must not kill the test. */
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(auth_is_user_and_password_then_select),
        cmocka_unit_test(password_alone_is_auth_with_one_argument),
        cmocka_unit_test(error_text_never_holds_the_password),
        cmocka_unit_test(server_that_never_answers_is_a_timeout),
        cmocka_unit_test(tls_to_a_plaintext_server_fails_the_handshake),
        cmocka_unit_test(closed_connection_is_stale),
        cmocka_unit_test(missing_ca_file_is_named_in_one_line),
        cmocka_unit_test(key_without_certificate_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
