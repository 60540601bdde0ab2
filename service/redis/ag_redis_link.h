/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One connection to Redis, owning its transport: a TCP or unix socket,
 * with TLS (OpenSSL) over it for rediss://. hiredis 0.14 has no TLS, so it
 * is kept only for what it does well: formatting commands
 * (redisFormatCommandArgv) and parsing replies (a redisReader with
 * ag_redis_reply_functions, fed the bytes this module reads). Like a
 * redisContext, with err/errstr after hiredis, and the pipe's dispatchers
 * use it in its place (ag_redis_pipe.c), blocking; the loops' lanes use
 * it without waiting (ag_redis_lane.c).
 *
 * Opening connects (within the timeout), sets TCP_NODELAY, does the TLS
 * handshake with the server's certificate and name verified, then AUTH
 * (AUTH user pass for an ACL user, AUTH pass for a password alone) and
 * SELECT. Every failure is one line in an ag_error, meant for the log:
 * "tls: certificate verify failed (...)", "tls: handshake failed: ...",
 * "redis: WRONGPASS ...". The password is never in one: it is cut out of
 * any text Redis answers, and the AUTH command's bytes are wiped once sent.
 *
 * Timeouts: the socket is non-blocking and every wait is a poll(2) with a
 * deadline, for plain and TLS alike (OpenSSL's WANT_READ / WANT_WRITE say
 * which way to wait). The connect, the handshake, AUTH, SELECT and each
 * reply each get timeout_ms: a reply that does not come in time is an
 * error (ag_redis_link_timed_out then says so) and the link is useless
 * afterwards, since the reply may still come and would answer the wrong
 * command.
 *
 * TLS writes go through write(2): the process must ignore SIGPIPE (main.c
 * does), or a write on a connection Redis closed kills it.
 *
 * The TLS settings (an SSL_CTX: TLS 1.2 at least, peer verification, the
 * CA, the client certificate) are an ag_redis_tls, made once for an
 * address and shared by its links: an SSL_CTX is safe to share between
 * threads once set up, and nothing changes it afterwards. The caller owns
 * it and frees it after the last link made with it is closed.
 *
 * Thread-safety: a link is used by one thread at a time; an ag_redis_tls by
 * any number at once.
 */
#ifndef AG_REDIS_LINK_H
#define AG_REDIS_LINK_H

#include <stdbool.h>
#include <stddef.h>

#include "ag_error.h"
#include "ag_redis_addr.h"

/* Bytes of commands a link buffers until they are written, at most: a
 * full batch of checks, or the code load, is well below it. */
#define AG_REDIS_LINK_OUT_MAX (64u * 1024 * 1024)

struct ag_redis_tls;
struct ag_redis_link;

/* Makes the TLS settings for a (a->tls must be set): AG_OK, or an error
 * ("tls: CA file '...': ...") with *out NULL. Free with
 * ag_redis_tls_free, after every link that uses it is closed. */
int ag_redis_tls_new(const struct ag_redis_addr *a, struct ag_redis_tls **out,
                     struct ag_error *err);
void ag_redis_tls_free(struct ag_redis_tls *t);

/* Connects to a, over TLS with tls's settings when a->tls (tls is borrowed
 * and must outlive the link), authenticated and on a->db, each step within
 * timeout_ms. AG_OK with *out (close it with ag_redis_link_close), or
 * AG_ESTORE with one line in err and *out NULL. The link's replies are
 * built by ag_redis_reply_functions: free them with ag_redis_reply_free. */
int ag_redis_link_open(const struct ag_redis_addr *a,
                       const struct ag_redis_tls *tls, unsigned timeout_ms,
                       struct ag_redis_link **out, struct ag_error *err);
/* Closes the connection and frees l (NULL is fine). */
void ag_redis_link_close(struct ag_redis_link *l);

/* Buffers a formatted command (RESP), written by the next get_reply.
 * AG_OK, or AG_ETOOBIG past AG_REDIS_LINK_OUT_MAX, or AG_ENOMEM; the link
 * is then unusable (nothing of a half-built batch may be sent). */
int ag_redis_link_append(struct ag_redis_link *l, const char *cmd, size_t len);
/* Writes whatever is buffered, then reads until the next reply is whole:
 * AG_OK with *reply (the caller frees it with ag_redis_reply_free), or
 * AG_ESTORE (closed, timed out, protocol error: see ag_redis_link_error)
 * with *reply NULL, after which the link is unusable. */
int ag_redis_link_get_reply(struct ag_redis_link *l, void **reply);

/* Has Redis closed l (a restart, a failover, CLIENT KILL) while it sat
 * idle, or sent something unasked? An idle RESP2 connection has nothing
 * to read otherwise. TLS records that carry no data (a TLS 1.3 session
 * ticket) are taken in passing and do not count. */
bool ag_redis_link_stale(struct ag_redis_link *l);

/* For a subscribed link, whose messages come unasked: writes whatever is
 * buffered, then returns a reply already read, or one whose first bytes
 * arrive within wait_ms (then read whole
 * within the link's timeout). AG_OK with *reply (free it with
 * ag_redis_reply_free), AG_OK with *reply NULL if none came in time (the
 * link stays usable), or AG_ESTORE as ag_redis_link_get_reply. */
int ag_redis_link_wait_reply(struct ag_redis_link *l, unsigned wait_ms,
                             void **reply);

/* The non-blocking side, for a link an event loop watches (a Redis lane,
 * ag_redis_lane.h): nothing below waits. The blocking functions above
 * stay usable on the same link (connection set-up), never while bytes
 * these left half-written or half-read are pending. */

/* The link's socket, to watch (EPOLLIN, EPOLLOUT when a write is left). */
int ag_redis_link_fd(const struct ag_redis_link *l);
/* Whether bytes appended are still to be written. */
bool ag_redis_link_unwritten(const struct ag_redis_link *l);
/* Writes what is buffered, as far as the socket takes it now: AG_OK (all
 * written), AG_EPENDING (some left: wait until the socket is writable,
 * or readable for TLS, and call again) or AG_ESTORE (failed; the link is
 * unusable). */
int ag_redis_link_write_now(struct ag_redis_link *l);
/* One read of what has come, fed to the reader, without waiting; over
 * TLS, reads on while OpenSSL holds decrypted bytes (SSL_pending), which
 * epoll cannot see. AG_OK (bytes came), AG_EPENDING (nothing now; a TLS
 * record without data counts as nothing) or AG_ESTORE (closed by the
 * server, or failed; the link is unusable). */
int ag_redis_link_read_now(struct ag_redis_link *l);
/* The next reply already read whole: AG_OK with *reply (free it with
 * ag_redis_reply_free), AG_OK with *reply NULL if none is whole yet, or
 * AG_ESTORE (a protocol error; the link is unusable). */
int ag_redis_link_next_reply(struct ag_redis_link *l, void **reply);

/* The last failure's text (one line; "" if none). Valid until the next
 * call on l. */
const char *ag_redis_link_error(const struct ag_redis_link *l);
/* Whether the last failure was a timeout. */
bool ag_redis_link_timed_out(const struct ag_redis_link *l);

#endif
