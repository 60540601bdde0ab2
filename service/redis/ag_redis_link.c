/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_redis_link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sodium.h>

#include "ag_buf.h"
#include "ag_redis_reply.h"

struct ag_redis_tls {
    SSL_CTX *ctx; /* set up once, then only read */
};

struct ag_redis_link {
    int fd;              /* non-blocking; -1 before the connect */
    SSL *ssl;            /* NULL: plain */
    redisReader *reader; /* builds replies with ag_redis_reply_functions */
    unsigned timeout_ms; /* for each step and each reply */
    struct ag_buf out;   /* commands not written yet */
    size_t written;      /* bytes of out written already */
    bool broken;         /* a failure left the link unusable */
    bool timed_out;      /* the last failure was a timeout */
    char errstr[AG_ERROR_MSG_MAX];
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Notes a failure on l, which is then unusable; returns AG_ESTORE. */
static int fail(struct ag_redis_link *l, bool timeout, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct ag_redis_link *l, bool timeout, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->errstr, sizeof l->errstr, fmt, ap);
    va_end(ap);
    l->broken = true;
    l->timed_out = timeout;
    return AG_ESTORE;
}

/* OpenSSL's reason for the oldest error queued on this thread (the one
 * that started it), and the queue emptied. */
static const char *tls_reason(char *buf, size_t size)
{
    unsigned long e = ERR_get_error();
    const char *why = e ? ERR_reason_error_string(e) : NULL;
    /* A system error (a missing file) has no reason string: errno's. */
    if (e && ERR_SYSTEM_ERROR(e))
        snprintf(buf, size, "%s", strerror(ERR_GET_REASON(e)));
    else if (why)
        snprintf(buf, size, "%s", why);
    else if (e)
        ERR_error_string_n(e, buf, size);
    else
        snprintf(buf, size, "unknown error");
    ERR_clear_error();
    return buf;
}

/* Waits until l's socket is ready for events or the deadline passes (what:
 * the step, for the message). */
static int wait_io(struct ag_redis_link *l, short events, long long deadline,
                   const char *what)
{
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0)
            return fail(l, true, "%s timed out after %u ms", what,
                        l->timeout_ms);
        struct pollfd pfd = {.fd = l->fd, .events = events};
        int r = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (r > 0)
            return AG_OK; /* an error or hang-up shows in the next call */
        if (r < 0 && errno != EINTR)
            return fail(l, false, "%s: poll: %s", what, strerror(errno));
    }
}

/* After an SSL call on l returned ret (errno: right after it): AG_OK with
 * *events to wait for, or the failure noted. */
static int tls_retry(struct ag_redis_link *l, int ret, int saved_errno,
                     short *events, const char *what)
{
    int e = SSL_get_error(l->ssl, ret);
    char why[160];
    switch (e) {
    case SSL_ERROR_WANT_READ:
        *events = POLLIN;
        return AG_OK;
    case SSL_ERROR_WANT_WRITE:
        *events = POLLOUT;
        return AG_OK;
    case SSL_ERROR_ZERO_RETURN:
        return fail(l, false, "connection closed by server");
    case SSL_ERROR_SYSCALL:
        if (!ERR_peek_error())
            return saved_errno ? fail(l, false, "tls: %s: %s", what,
                                      strerror(saved_errno))
                               : fail(l, false, "connection closed by server");
        break;
    default:
        break;
    }
    return fail(l, false, "tls: %s: %s", what, tls_reason(why, sizeof why));
}

/* One write of what out holds: AG_OK once all of it is written,
 * AG_EPENDING with *events to wait for, or the failure noted. */
static int write_step(struct ag_redis_link *l, short *events)
{
    while (l->written < l->out.len) {
        const char *p = l->out.p + l->written;
        size_t n = l->out.len - l->written;
        *events = POLLOUT;
        if (l->ssl) {
            ERR_clear_error();
            int w = SSL_write(l->ssl, p, n > INT_MAX ? INT_MAX : (int)n);
            int saved = errno;
            if (w > 0) {
                l->written += (size_t)w;
                continue;
            }
            if (tls_retry(l, w, saved, events, "write"))
                return AG_ESTORE;
        } else {
            ssize_t w = send(l->fd, p, n, MSG_NOSIGNAL);
            if (w >= 0) {
                l->written += (size_t)w;
                continue;
            }
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return fail(l, false, "write: %s", strerror(errno));
        }
        return AG_EPENDING;
    }
    ag_buf_reset(&l->out);
    l->written = 0;
    return AG_OK;
}

/* Writes what out holds, within deadline. */
static int flush(struct ag_redis_link *l, long long deadline)
{
    for (;;) {
        short events;
        int rc = write_step(l, &events);
        if (rc != AG_EPENDING)
            return rc;
        if (wait_io(l, events, deadline, "write"))
            return AG_ESTORE;
    }
}

/* One read, fed to the reader: AG_OK if bytes came, AG_EPENDING with
 * *events to wait for, or the failure noted. */
static int read_step(struct ag_redis_link *l, short *events)
{
    char buf[16384];
    for (;;) {
        ssize_t n;
        *events = POLLIN;
        if (l->ssl) {
            ERR_clear_error();
            int r = SSL_read(l->ssl, buf, sizeof buf);
            int saved = errno;
            n = r;
            if (r <= 0 && tls_retry(l, r, saved, events, "read"))
                return AG_ESTORE;
        } else {
            n = recv(l->fd, buf, sizeof buf, 0);
            if (n == 0)
                return fail(l, false, "connection closed by server");
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
                return fail(l, false, "read: %s", strerror(errno));
        }
        if (n <= 0)
            return AG_EPENDING;
        if (redisReaderFeed(l->reader, buf, (size_t)n) != REDIS_OK)
            return fail(l, false, "out of memory");
        return AG_OK;
    }
}

/* Reads what has come (waiting until something has, within deadline) and
 * feeds it to the reader. */
static int read_some(struct ag_redis_link *l, long long deadline)
{
    for (;;) {
        short events;
        int rc = read_step(l, &events);
        if (rc != AG_EPENDING)
            return rc;
        if (wait_io(l, events, deadline, "read"))
            return AG_ESTORE;
    }
}

int ag_redis_link_fd(const struct ag_redis_link *l)
{
    return l->fd;
}

bool ag_redis_link_unwritten(const struct ag_redis_link *l)
{
    return l->written < l->out.len;
}

int ag_redis_link_write_now(struct ag_redis_link *l)
{
    if (l->broken)
        return AG_ESTORE;
    short events;
    int rc = write_step(l, &events);
    /* What the socket took is dropped from the front once it is half the
     * buffer, so that a pipeline that never quite drains does not grow
     * its buffer to the cap. */
    if (rc == AG_EPENDING && l->written >= l->out.len / 2) {
        memmove(l->out.p, l->out.p + l->written, l->out.len - l->written);
        l->out.len -= l->written;
        l->out.p[l->out.len] = '\0';
        l->written = 0;
    }
    return rc;
}

int ag_redis_link_read_now(struct ag_redis_link *l)
{
    if (l->broken)
        return AG_ESTORE;
    short events;
    int rc = read_step(l, &events);
    bool got = rc == AG_OK;
    /* Decrypted bytes OpenSSL holds make no event: take them now. */
    while (rc == AG_OK && l->ssl && SSL_pending(l->ssl) > 0)
        rc = read_step(l, &events);
    return rc == AG_EPENDING && got ? AG_OK : rc;
}

int ag_redis_link_next_reply(struct ag_redis_link *l, void **reply)
{
    *reply = NULL;
    if (l->broken)
        return AG_ESTORE;
    if (redisReaderGetReply(l->reader, reply) != REDIS_OK)
        return fail(l, false, "protocol error: %s", l->reader->errstr);
    return AG_OK;
}

int ag_redis_link_append(struct ag_redis_link *l, const char *cmd, size_t len)
{
    if (l->broken)
        return AG_ESTORE;
    int rc = ag_buf_append(&l->out, cmd, len);
    if (rc)
        fail(l, false, "%s",
             rc == AG_ETOOBIG ? "too many commands buffered" : "out of memory");
    return rc;
}

int ag_redis_link_get_reply(struct ag_redis_link *l, void **reply)
{
    *reply = NULL;
    if (l->broken)
        return AG_ESTORE;
    long long deadline = now_ms() + l->timeout_ms;
    if (flush(l, deadline))
        return AG_ESTORE;
    for (;;) {
        void *r = NULL;
        if (redisReaderGetReply(l->reader, &r) != REDIS_OK)
            return fail(l, false, "protocol error: %s", l->reader->errstr);
        if (r) {
            *reply = r;
            return AG_OK;
        }
        if (read_some(l, deadline))
            return AG_ESTORE;
    }
}

bool ag_redis_link_stale(struct ag_redis_link *l)
{
    if (l->broken || (l->ssl && SSL_pending(l->ssl) > 0))
        return true;
    struct pollfd pfd = {.fd = l->fd, .events = POLLIN};
    int r = poll(&pfd, 1, 0);
    if (r == 0)
        return false;
    if (r < 0 || !l->ssl)
        return true;
    /* TLS 1.3 servers send session tickets after the handshake: records
     * with no data, which make the socket readable. SSL_peek takes them
     * and says whether data (or the end) came with them. */
    char c;
    ERR_clear_error();
    int n = SSL_peek(l->ssl, &c, 1);
    bool stale = n > 0 || SSL_get_error(l->ssl, n) != SSL_ERROR_WANT_READ;
    ERR_clear_error();
    return stale;
}

int ag_redis_link_wait_reply(struct ag_redis_link *l, unsigned wait_ms,
                             void **reply)
{
    *reply = NULL;
    if (l->broken)
        return AG_ESTORE;
    /* A command appended meanwhile (a PING) goes first. */
    if (flush(l, now_ms() + l->timeout_ms))
        return AG_ESTORE;
    /* One read may have brought several messages: the reader holds the
     * rest, and the socket has nothing more to say about them. */
    void *r = NULL;
    if (redisReaderGetReply(l->reader, &r) != REDIS_OK)
        return fail(l, false, "protocol error: %s", l->reader->errstr);
    if (r) {
        *reply = r;
        return AG_OK;
    }
    if (!(l->ssl && SSL_pending(l->ssl) > 0)) {
        struct pollfd pfd = {.fd = l->fd, .events = POLLIN};
        int n = poll(&pfd, 1, (int)wait_ms);
        if (n == 0)
            return AG_OK;
    }
    if (!ag_redis_link_stale(l))
        return AG_OK; /* a TLS record without data */
    return ag_redis_link_get_reply(l, reply);
}

const char *ag_redis_link_error(const struct ag_redis_link *l)
{
    return l->errstr;
}

bool ag_redis_link_timed_out(const struct ag_redis_link *l)
{
    return l->timed_out;
}

void ag_redis_link_close(struct ag_redis_link *l)
{
    if (!l)
        return;
    if (l->ssl) {
        /* One try at close_notify, not waited on; never on a broken link,
         * where it could only fail. */
        if (!l->broken)
            SSL_shutdown(l->ssl);
        SSL_free(l->ssl);
        ERR_clear_error();
    }
    if (l->fd >= 0)
        close(l->fd);
    if (l->reader)
        redisReaderFree(l->reader);
    ag_buf_free(&l->out);
    free(l);
}

/* Connects fd (non-blocking) to sa within deadline: 0, or an errno. */
static int connect_fd(int fd, const struct sockaddr *sa, socklen_t len,
                      long long deadline)
{
    if (connect(fd, sa, len) == 0)
        return 0;
    if (errno != EINPROGRESS && errno != EAGAIN && errno != EINTR)
        return errno;
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0)
            return ETIMEDOUT;
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int r = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (r < 0 && errno != EINTR)
            return errno;
        if (r > 0)
            break;
    }
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
        return errno;
    return soerr;
}

static int connect_unix(struct ag_redis_link *l, const struct ag_redis_addr *a,
                        long long deadline)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(a->path) >= sizeof sun.sun_path)
        return fail(l, false, "connect %s: path too long", a->path);
    strcpy(sun.sun_path, a->path);
    l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->fd < 0)
        return fail(l, false, "socket: %s", strerror(errno));
    int e = connect_fd(l->fd, (struct sockaddr *)&sun, sizeof sun, deadline);
    if (e == ETIMEDOUT)
        return fail(l, true, "connect %s: timed out after %u ms", a->path,
                    l->timeout_ms);
    if (e)
        return fail(l, false, "connect %s: %s", a->path, strerror(e));
    return AG_OK;
}

/* Each address host resolves to in turn, until one connects. */
static int connect_tcp(struct ag_redis_link *l, const struct ag_redis_addr *a,
                       long long deadline)
{
    char port[8];
    snprintf(port, sizeof port, "%d", a->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(a->host, port, &hints, &res);
    if (g)
        return fail(l, false, "resolve %s: %s", a->host,
                    g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
    int e = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        l->fd = socket(ai->ai_family,
                       ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                       ai->ai_protocol);
        if (l->fd < 0) {
            e = errno;
            continue;
        }
        e = connect_fd(l->fd, ai->ai_addr, ai->ai_addrlen, deadline);
        if (!e)
            break;
        close(l->fd);
        l->fd = -1;
        if (e == ETIMEDOUT)
            break;
    }
    freeaddrinfo(res);
    if (e == ETIMEDOUT)
        return fail(l, true, "connect %s:%d: timed out after %u ms", a->host,
                    a->port, l->timeout_ms);
    if (l->fd < 0)
        return fail(l, false, "connect %s:%d: %s", a->host, a->port,
                    strerror(e ? e : EADDRNOTAVAIL));
    /* Commands are written whole, a batch at a time: nothing to gain from
     * Nagle, and a round trip to lose. */
    int one = 1;
    setsockopt(l->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return AG_OK;
}

/* The TLS handshake on l's connected socket, the server's certificate
 * verified against tls's CAs and its name (or address) against
 * tls_server_name, else host. Over a unix socket with no server name,
 * only the chain is verified: there is no name to verify. */
static int handshake(struct ag_redis_link *l, const struct ag_redis_addr *a,
                     const struct ag_redis_tls *tls, long long deadline)
{
    char why[160];
    ERR_clear_error();
    l->ssl = SSL_new(tls->ctx);
    if (!l->ssl || SSL_set_fd(l->ssl, l->fd) != 1)
        return fail(l, false, "tls: %s", tls_reason(why, sizeof why));
    const char *name = a->tls_server_name[0] ? a->tls_server_name : a->host;
    if (a->kind == AG_REDIS_UNIX && !a->tls_server_name[0])
        name = "";
    if (name[0]) {
        unsigned char ip[sizeof(struct in6_addr)];
        bool numeric = inet_pton(AF_INET, name, ip) == 1 ||
                       inet_pton(AF_INET6, name, ip) == 1;
        /* An address is verified against the certificate's IP SANs and
         * never sent as SNI, which takes host names only (RFC 6066). */
        int ok = numeric ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(l->ssl),
                                                         name)
                         : SSL_set_tlsext_host_name(l->ssl, name) == 1 &&
                               SSL_set1_host(l->ssl, name) == 1;
        if (ok != 1)
            return fail(l, false, "tls: server name '%s': %s", name,
                        tls_reason(why, sizeof why));
    }
    for (;;) {
        ERR_clear_error();
        int r = SSL_connect(l->ssl);
        int saved = errno;
        if (r == 1)
            return AG_OK;
        int e = SSL_get_error(l->ssl, r);
        short events;
        if (e == SSL_ERROR_WANT_READ) {
            events = POLLIN;
        } else if (e == SSL_ERROR_WANT_WRITE) {
            events = POLLOUT;
        } else {
            long v = SSL_get_verify_result(l->ssl);
            if (v != X509_V_OK)
                return fail(l, false, "tls: certificate verify failed (%s)",
                            X509_verify_cert_error_string(v));
            if (ERR_peek_error())
                return fail(l, false, "tls: handshake failed: %s",
                            tls_reason(why, sizeof why));
            return fail(l, false, "tls: handshake failed: %s",
                        e == SSL_ERROR_SYSCALL && saved
                            ? strerror(saved)
                            : "connection closed by server");
        }
        if (wait_io(l, events, deadline, "tls: handshake"))
            return AG_ESTORE;
    }
}

/* Masks every occurrence of secret in s, in place (s only shrinks). */
static void redact(char *s, const char *secret)
{
    size_t n = strlen(secret);
    if (!n)
        return;
    size_t m = n < 3 ? n : 3;
    for (char *p = s; (p = strstr(p, secret)) != NULL; p += m) {
        memset(p, '*', m);
        memmove(p + m, p + n, strlen(p + n) + 1);
    }
}

/* Runs a set-up command (what: its name in messages) and expects a status
 * reply. secret, when set, is wiped from every buffer that held it and
 * masked in whatever Redis answers. */
static int setup_command(struct ag_redis_link *l, int argc, const char **argv,
                         const size_t *lens, const char *what,
                         const char *secret)
{
    char *cmd = NULL;
    long long len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (len < 0)
        return fail(l, false, "redis: %s: out of memory", what);
    int rc = ag_redis_link_append(l, cmd, (size_t)len);
    if (secret)
        sodium_memzero(cmd, (size_t)len);
    redisFreeCommand(cmd);
    void *reply = NULL;
    if (rc == AG_OK)
        rc = ag_redis_link_get_reply(l, &reply);
    if (secret && l->out.p)
        sodium_memzero(l->out.p, l->out.cap);
    if (rc) {
        char why[sizeof l->errstr];
        memcpy(why, l->errstr, sizeof why);
        return fail(l, l->timed_out, "redis: %s: %s", what, why);
    }
    redisReply *r = reply;
    if (r->type == REDIS_REPLY_STATUS) {
        ag_redis_reply_free(r);
        return AG_OK;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        if (secret)
            redact(r->str, secret);
        /* AUTH's own words say enough ("WRONGPASS invalid ..."). */
        if (strcmp(what, "AUTH") == 0)
            fail(l, false, "redis: %s", r->str);
        else
            fail(l, false, "redis: %s: %s", what, r->str);
    } else {
        fail(l, false, "redis: %s: unexpected reply", what);
    }
    ag_redis_reply_free(r);
    return AG_ESTORE;
}

int ag_redis_link_open(const struct ag_redis_addr *a,
                       const struct ag_redis_tls *tls, unsigned timeout_ms,
                       struct ag_redis_link **out, struct ag_error *err)
{
    *out = NULL;
    struct ag_redis_link *l = calloc(1, sizeof *l);
    if (!l)
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    l->fd = -1;
    l->timeout_ms = timeout_ms;
    ag_buf_init(&l->out, AG_REDIS_LINK_OUT_MAX);
    l->reader = redisReaderCreateWithFunctions(&ag_redis_reply_functions);
    int rc = l->reader ? AG_OK : fail(l, false, "out of memory");
    if (rc == AG_OK && a->tls && !tls)
        rc = fail(l, false, "tls: not set up");
    if (rc == AG_OK)
        rc = a->kind == AG_REDIS_UNIX
                 ? connect_unix(l, a, now_ms() + timeout_ms)
                 : connect_tcp(l, a, now_ms() + timeout_ms);
    if (rc == AG_OK && a->tls)
        rc = handshake(l, a, tls, now_ms() + timeout_ms);
    if (rc == AG_OK && a->password[0]) {
        const char *argv[] = {"AUTH", a->user, a->password};
        size_t lens[] = {4, strlen(a->user), strlen(a->password)};
        /* AUTH user pass (Redis 6 ACL) only with a user: Redis 5 and
         * older know AUTH pass alone. */
        if (a->user[0])
            rc = setup_command(l, 3, argv, lens, "AUTH", a->password);
        else
            rc = setup_command(l, 2, (const char *[]){"AUTH", a->password},
                               (size_t[]){4, lens[2]}, "AUTH", a->password);
    }
    if (rc == AG_OK && a->db) {
        char db[16];
        snprintf(db, sizeof db, "%d", a->db);
        char what[32];
        snprintf(what, sizeof what, "SELECT %s", db);
        const char *argv[] = {"SELECT", db};
        size_t lens[] = {6, strlen(db)};
        rc = setup_command(l, 2, argv, lens, what, NULL);
    }
    if (rc) {
        ag_error_fill(err, AG_ESTORE, NULL, "%s", l->errstr);
        ag_redis_link_close(l);
        return AG_ESTORE;
    }
    *out = l;
    return AG_OK;
}

/* Sets up t->ctx from a; field: the flag at fault, for err. */
static int tls_setup(struct ag_redis_tls *t, const struct ag_redis_addr *a,
                     struct ag_error *err)
{
    char why[160];
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (!t->ctx)
        return ag_error_set(err, AG_ENOMEM, NULL, "tls: %s",
                            tls_reason(why, sizeof why));
    /* TLS 1.0 and 1.1 are broken and long deprecated (RFC 8996). */
    if (SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION) != 1)
        return ag_error_set(err, AG_EINVAL, NULL, "tls: %s",
                            tls_reason(why, sizeof why));
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (a->tls_ca_file[0]) {
        if (SSL_CTX_load_verify_locations(t->ctx, a->tls_ca_file, NULL) != 1)
            return ag_error_set(err, AG_EINVAL, "redis-tls-ca-file",
                                "tls: CA file '%s': %s", a->tls_ca_file,
                                tls_reason(why, sizeof why));
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        return ag_error_set(err, AG_EINVAL, "redis-tls-ca-file",
                            "tls: the system's CA store: %s",
                            tls_reason(why, sizeof why));
    }
    if (!a->tls_cert_file[0]) {
        if (a->tls_key_file[0])
            return ag_error_set(err, AG_EINVAL, "redis-tls-key-file",
                                "tls: a key file needs a certificate file");
        return AG_OK;
    }
    if (SSL_CTX_use_certificate_chain_file(t->ctx, a->tls_cert_file) != 1)
        return ag_error_set(err, AG_EINVAL, "redis-tls-cert-file",
                            "tls: certificate file '%s': %s", a->tls_cert_file,
                            tls_reason(why, sizeof why));
    /* No key file: the key is in the certificate's file. */
    const char *key = a->tls_key_file[0] ? a->tls_key_file : a->tls_cert_file;
    if (SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) != 1)
        return ag_error_set(err, AG_EINVAL, "redis-tls-key-file",
                            "tls: key file '%s': %s", key,
                            tls_reason(why, sizeof why));
    if (SSL_CTX_check_private_key(t->ctx) != 1)
        return ag_error_set(err, AG_EINVAL, "redis-tls-key-file",
                            "tls: key file '%s' does not match certificate "
                            "'%s'",
                            key, a->tls_cert_file);
    return AG_OK;
}

int ag_redis_tls_new(const struct ag_redis_addr *a, struct ag_redis_tls **out,
                     struct ag_error *err)
{
    *out = NULL;
    struct ag_redis_tls *t = calloc(1, sizeof *t);
    if (!t)
        return ag_error_set(err, AG_ENOMEM, NULL, "tls: out of memory");
    ERR_clear_error();
    int rc = tls_setup(t, a, err);
    ERR_clear_error();
    if (rc) {
        ag_redis_tls_free(t);
        return rc;
    }
    *out = t;
    return AG_OK;
}

void ag_redis_tls_free(struct ag_redis_tls *t)
{
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    free(t);
}
