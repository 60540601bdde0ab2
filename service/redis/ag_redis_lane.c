/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_redis_lane.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "ag_log.h"
#include "ag_loop.h"
#include "ag_metrics.h"
#include "ag_redis_breaker.h"
#include "ag_redis_link.h"
#include "ag_redis_pipe_impl.h"
#include "ag_redis_reply.h"

/* What an entry of the FIFO awaits the reply to. */
enum kind {
    JOB,     /* a job's command */
    ASKING,  /* the ASKING before a job's command: its +OK is dropped */
    LIBRARY, /* a FUNCTION LOAD of ag_redis_conn_load */
    SCRIPT,  /* a SCRIPT LOAD of ag_redis_conn_load */
};

struct entry {
    struct ag_redis_job *job; /* JOB's */
    long long written_ms;     /* when it was handed to a write */
    enum kind kind;
    unsigned mask; /* SCRIPT's */
};

/* Why a link goes: its own error (counted and logged), a timeout
 * (counted and logged here), or quietly (idle and closed by Redis, a
 * sentinel's demotion drained, or the reason logged already). */
enum why { WHY_LINK, WHY_TIMEOUT, WHY_QUIET };

/* Jobs whose done is due, in order. */
struct dones {
    struct ag_redis_job *head, **tail;
};

struct ag_redis_lane {
    struct ag_redis_conn conn; /* conn.link: NULL while disconnected */
    struct ag_loop *loop;
    struct ag_loop_watch watch;
    struct ag_loop_hook hook;
    uint32_t events; /* watched on the link's fd; 0: not watched */
    /* The FIFO of replies awaited: a ring of cap (a power of two)
     * entries, n of them from first; the first nwritten were handed to
     * a write. */
    struct entry *ring;
    size_t cap, first, n, nwritten;
    /* Jobs sent while no link could take them, for the hook. */
    struct ag_redis_job *pending, **pending_end;
    bool broken;   /* an append failed: the link goes, and its jobs */
    bool draining; /* demoted: nothing more written; dropped once idle */
    bool hooked;   /* the hook ran in iteration hook_iter */
    uint64_t hook_iter;
    /* A connection being made on a thread of its own (connector), so
     * that the loop never waits for a connect: made holds it once done
     * (connecting false then; made NULL if it failed), made_epoch the
     * pipe's epoch when it began. */
    pthread_t connector;
    bool connector_started;
    atomic_bool connecting;
    struct ag_redis_link *made;
    unsigned made_epoch;
    struct ag_redis_lane *next; /* the pipe's list; set before published */
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void dones_init(struct dones *d)
{
    d->head = NULL;
    d->tail = &d->head;
}

static void dones_add(struct dones *d, struct ag_redis_job *j)
{
    j->next = NULL;
    *d->tail = j;
    d->tail = &j->next;
}

/* Calls each done, in order: last, once the lane is consistent again, as
 * a done may send on it. */
static void dones_run(struct dones *d, struct ag_redis_conn *c)
{
    for (struct ag_redis_job *j = d->head, *next; j; j = next) {
        next = j->next;
        j->next = NULL;
        j->done(j, c);
    }
    dones_init(d);
}

static bool push(struct ag_redis_lane *l, enum kind kind,
                 struct ag_redis_job *j, unsigned mask)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        struct entry *ring = malloc(cap * sizeof *ring);
        if (!ring)
            return false;
        for (size_t i = 0; i < l->n; i++)
            ring[i] = l->ring[(l->first + i) & (l->cap - 1)];
        free(l->ring);
        l->ring = ring;
        l->cap = cap;
        l->first = 0;
    }
    l->ring[(l->first + l->n++) & (l->cap - 1)] =
        (struct entry){.job = j, .kind = kind, .mask = mask};
    return true;
}

static struct entry pop(struct ag_redis_lane *l)
{
    struct entry e = l->ring[l->first];
    l->first = (l->first + 1) & (l->cap - 1);
    l->n--;
    if (l->nwritten)
        l->nwritten--;
    return e;
}

static void set_events(struct ag_redis_lane *l, uint32_t events)
{
    if (l->events != events && ag_loop_rewatch(l->loop, &l->watch, events) == 0)
        l->events = events;
}

/* Drops the link (why says whether to count it) and ends every job in
 * flight into d: no reply, sent if it was handed to a write, orphaned
 * but for the first of those. */
static void fail_link(struct ag_redis_lane *l, enum why why, struct dones *d)
{
    struct ag_redis_pipe *p = l->conn.pipe;
    if (why == WHY_LINK) {
        ag_redis_pipe__failed(p, l->conn.link);
    } else if (why == WHY_TIMEOUT) {
        ag_metrics_count(p->metrics, AG_M_REDIS_TIMEOUTS);
        ag_log(AG_LOG_WARN, "redis_timeout", "no reply within %u ms",
               p->timeout_ms);
    }
    if (l->events)
        ag_loop_unwatch(l->loop, &l->watch);
    l->events = 0;
    if (l->conn.link)
        ag_metrics_add(p->metrics, AG_M_REDIS_LANES, -1);
    ag_redis_pipe__drop(&l->conn.link);
    l->broken = l->draining = false;
    bool first = true;
    while (l->n) {
        bool written = l->nwritten > 0;
        struct entry e = pop(l);
        if (e.kind != JOB)
            continue;
        e.job->reply = NULL;
        e.job->sent = written;
        e.job->orphaned = written && !first;
        first = first && !written;
        dones_add(d, e.job);
    }
}

/* Whether more may be written on the link now. A link made before the
 * pipe's epoch moved on (a sentinel's demotion elsewhere) is dropped
 * while idle. */
static bool writable(struct ag_redis_lane *l)
{
    struct ag_redis_pipe *p = l->conn.pipe;
    if (l->conn.link && !l->n && !l->broken &&
        l->conn.epoch != atomic_load(&p->epoch)) {
        struct dones none;
        dones_init(&none);
        fail_link(l, WHY_QUIET, &none);
    }
    return l->conn.link && !l->broken && !l->draining;
}

/* Appends j's command (ASKING first if asked) and its entries; false
 * (the link broken) if out of memory or past the link's cap. */
static bool append_job(struct ag_redis_lane *l, struct ag_redis_job *j)
{
    static const char asking[] = AG_REDIS_PIPE__ASKING;
    bool ok =
        (!j->asking || (push(l, ASKING, NULL, 0) &&
                        ag_redis_link_append(l->conn.link, asking,
                                             sizeof asking - 1) == AG_OK)) &&
        push(l, JOB, j, 0);
    /* The job's entry is last: if its command cannot follow, the job is
     * not in the FIFO and the caller keeps it. */
    if (ok && ag_redis_link_append(l->conn.link, j->cmd, j->len) != AG_OK) {
        l->n--;
        ok = false;
    }
    if (!ok)
        l->broken = true;
    return ok;
}

/* Buffers argv on the link as an entry of kind (mask: SCRIPT's). */
static bool append_load(struct ag_redis_lane *l, enum kind kind, unsigned mask,
                        const char *verb, const struct ag_redis_text *code)
{
    const char *argv[] = {verb, "LOAD", code->text};
    size_t lens[] = {strlen(verb), 4, code->len};
    char *cmd = NULL;
    long long len = redisFormatCommandArgv(&cmd, 3, argv, lens);
    bool ok = len >= 0 && push(l, kind, NULL, mask);
    if (ok && ag_redis_link_append(l->conn.link, cmd, (size_t)len) != AG_OK) {
        l->n--;
        ok = false;
    }
    redisFreeCommand(cmd);
    if (!ok)
        l->broken = true;
    return ok;
}

static int lane_load(struct ag_redis_conn *c, bool library, unsigned mask)
{
    struct ag_redis_lane *l = c->lane;
    const struct ag_redis_code *code = c->pipe->code;
    /* No connection to load on: the next one loads everything. */
    if (!writable(l))
        return AG_OK;
    if (library && !append_load(l, LIBRARY, 0, "FUNCTION", &code->library))
        return AG_ESTORE;
    if (mask && !append_load(l, SCRIPT, mask, "SCRIPT", &code->scripts[mask]))
        return AG_ESTORE;
    return AG_OK;
}

/* On the connector thread: the pipe's own set-up (connect, TLS, AUTH,
 * SELECT, the code load), blocking for at most its timeouts. */
static void *connect_main(void *arg)
{
    struct ag_redis_lane *l = arg;
    l->made = ag_redis_pipe__connect(l->conn.pipe);
    atomic_store_explicit(&l->connecting, false, memory_order_release);
    return NULL;
}

/* Begins a connection for the lane on a thread of its own, unless one is
 * being made. */
static void begin_connect(struct ag_redis_lane *l)
{
    if (atomic_load_explicit(&l->connecting, memory_order_acquire))
        return;
    if (l->connector_started)
        pthread_join(l->connector, NULL);
    l->connector_started = false;
    ag_redis_pipe__drop(&l->made);
    l->made_epoch = atomic_load(&l->conn.pipe->epoch);
    atomic_store(&l->connecting, true);
    if (pthread_create(&l->connector, NULL, connect_main, l) == 0)
        l->connector_started = true;
    else
        atomic_store(&l->connecting, false);
}

/* Takes the connection the connector made, if it is done: true if the
 * lane has a link afterwards. */
static bool adopt(struct ag_redis_lane *l)
{
    if (l->conn.link)
        return true;
    if (!l->connector_started ||
        atomic_load_explicit(&l->connecting, memory_order_acquire))
        return false;
    pthread_join(l->connector, NULL);
    l->connector_started = false;
    if (!l->made)
        return false;
    l->conn.link = l->made;
    l->conn.epoch = l->made_epoch;
    l->made = NULL;
    l->watch.fd = ag_redis_link_fd(l->conn.link);
    if (ag_loop_watch(l->loop, &l->watch, EPOLLIN) != 0) {
        ag_log(AG_LOG_ERROR, "redis_error", "epoll: cannot watch a lane");
        ag_redis_pipe__drop(&l->conn.link);
        return false;
    }
    l->events = EPOLLIN;
    ag_metrics_add(l->conn.pipe->metrics, AG_M_REDIS_LANES, 1);
    return true;
}

/* The hook's share of the pending jobs: appends them to the link; with
 * none, hands them to the dispatchers while a link is made off the loop
 * (a connect may take the timeouts of several steps, and the loop's other
 * requests must not wait for it), or fails them, not sent, while the
 * breaker is open. */
static void send_pending(struct ag_redis_lane *l, struct dones *d)
{
    struct ag_redis_pipe *p = l->conn.pipe;
    struct ag_redis_job *j = l->pending;
    l->pending = NULL;
    l->pending_end = &l->pending;
    if (!adopt(l)) {
        bool open = ag_redis_breaker_is_open(p->breaker);
        /* Not before a dispatcher has loaded the code, or learnt that
         * Redis refuses the library: the lane's own load then finds the
         * library there ("already exists") instead of sending a second
         * first load beside the dispatcher's, on a Redis busy compiling. */
        if (!open && atomic_load(&p->functions) != -1)
            begin_connect(l);
        for (struct ag_redis_job *next; j; j = next) {
            next = j->next;
            j->next = NULL;
            if (open) {
                j->reply = NULL;
                j->sent = j->orphaned = false;
                dones_add(d, j);
            } else {
                ag_redis_pipe_send_shared(p, j);
            }
        }
        return;
    }
    for (struct ag_redis_job *next; j; j = next) {
        next = j->next;
        j->next = NULL;
        if (l->broken || !append_job(l, j)) {
            j->reply = NULL;
            j->sent = j->orphaned = false;
            dones_add(d, j);
        }
    }
}

/* Writes what the link holds as far as the socket takes it now. */
static void write_out(struct ag_redis_lane *l, struct dones *d)
{
    int rc = ag_redis_link_write_now(l->conn.link);
    if (rc == AG_ESTORE)
        fail_link(l, WHY_LINK, d);
    else
        set_events(l, rc == AG_EPENDING ? EPOLLIN | EPOLLOUT : EPOLLIN);
}

static void on_event(void *arg, uint32_t events);

/* The end of each iteration: fails a broken or timed-out link, connects
 * for and appends the pending jobs, writes everything in one write. The
 * time until the oldest reply awaited is due, or -1. */
static int run_hook(void *arg)
{
    struct ag_redis_lane *l = arg;
    struct ag_redis_pipe *p = l->conn.pipe;
    struct dones d;
    dones_init(&d);
    l->hooked = true;
    l->hook_iter = ag_loop_iterations(l->loop);
    adopt(l);
    long long now = now_ms();
    /* A reply that came while this iteration ran is no timeout: it is
     * read first (the loop may have been busy, or off the CPU). */
    if (!l->broken && l->nwritten &&
        now >= l->ring[l->first].written_ms + (long long)p->timeout_ms)
        on_event(l, EPOLLIN);
    if (l->broken)
        fail_link(l, WHY_LINK, &d);
    else if (l->nwritten &&
             now >= l->ring[l->first].written_ms + (long long)p->timeout_ms)
        fail_link(l, WHY_TIMEOUT, &d);
    if (l->pending && !l->draining)
        send_pending(l, &d);
    if (l->broken) /* nothing of it written yet: its jobs were not sent */
        fail_link(l, WHY_LINK, &d);
    if (l->conn.link && ag_redis_link_unwritten(l->conn.link)) {
        for (size_t i = l->nwritten; i < l->n; i++)
            l->ring[(l->first + i) & (l->cap - 1)].written_ms = now;
        l->nwritten = l->n;
        write_out(l, &d);
    }
    /* What these dones send is written at the next iteration, which
     * send makes come at once. */
    dones_run(&d, &l->conn);
    /* A connection being made is looked for soon: no event says when it
     * is done. */
    enum { CONNECTING_MS = 5 };
    if (atomic_load_explicit(&l->connecting, memory_order_relaxed))
        return CONNECTING_MS;
    if (!l->nwritten)
        return -1;
    long long left = l->ring[l->first].written_ms + p->timeout_ms - now;
    return left > 0 ? (int)left : 0;
}

/* Matches one reply r to the FIFO's head; a job's goes into d. */
static void match(struct ag_redis_lane *l, redisReply *r, struct dones *d)
{
    struct ag_redis_pipe *p = l->conn.pipe;
    struct entry e = pop(l);
    if (e.kind == LIBRARY)
        ag_redis_pipe__note_library(p, r);
    else if (e.kind == SCRIPT && !ag_redis_pipe__note_sha(p, e.mask, r))
        l->draining = true; /* as a failed load drops a dispatcher's link */
    if (e.kind != JOB) {
        ag_redis_reply_free(r);
        return;
    }
    struct ag_redis_job *j = e.job;
    j->sent = true;
    j->orphaned = false;
    if (p->addr.kind == AG_REDIS_SENTINEL && ag_redis_pipe__not_master(r)) {
        ag_log(AG_LOG_WARN, "redis_not_master",
               "%s; asking the sentinels again", r->str);
        ag_redis_reply_free(r);
        r = NULL;
        j->sent = false; /* it did not run: it may go again */
        if (!l->draining)
            atomic_fetch_add(&p->epoch, 1);
        l->draining = true;
    }
    j->reply = r;
    dones_add(d, j);
}

/* The link's events: the rest of a write, then one read and every reply
 * it completed, then their dones in order. */
static void on_event(void *arg, uint32_t events)
{
    struct ag_redis_lane *l = arg;
    struct dones d;
    dones_init(&d);
    /* A send earlier in this iteration may have dropped an idle link
     * whose event was already taken. */
    if (!l->conn.link)
        return;
    if ((events & EPOLLOUT) && ag_redis_link_unwritten(l->conn.link))
        write_out(l, &d);
    if (l->conn.link && (events & (EPOLLIN | EPOLLERR | EPOLLHUP))) {
        int rc = ag_redis_link_read_now(l->conn.link);
        while (rc == AG_OK) {
            void *r = NULL;
            rc = ag_redis_link_next_reply(l->conn.link, &r);
            if (!r)
                break;
            if (!l->n) {
                ag_metrics_count(l->conn.pipe->metrics, AG_M_REDIS_ERRORS);
                ag_log(AG_LOG_WARN, "redis_error",
                       "a reply no command asked for");
                ag_redis_reply_free(r);
                fail_link(l, WHY_QUIET, &d);
                break;
            }
            match(l, r, &d);
        }
        /* An idle connection Redis closed is only replaced. */
        if (rc == AG_ESTORE && l->conn.link)
            fail_link(l, l->n ? WHY_LINK : WHY_QUIET, &d);
    }
    /* The pending jobs go at this iteration's hook, on a new link. */
    if (l->draining && !l->n && l->conn.link)
        fail_link(l, WHY_QUIET, &d);
    dones_run(&d, &l->conn);
}

/* The lane of loop for p, made and published if there is none yet. */
static struct ag_redis_lane *lane_of(struct ag_redis_pipe *p,
                                     struct ag_loop *loop)
{
    struct ag_redis_lane *l;
    for (l = atomic_load_explicit(&p->lanes, memory_order_acquire); l;
         l = l->next)
        if (l->loop == loop)
            return l;
    l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->conn.pipe = p;
    l->conn.lane = l;
    l->loop = loop;
    l->watch = (struct ag_loop_watch){.fd = -1, .fn = on_event, .arg = l};
    l->hook = (struct ag_loop_hook){.fn = run_hook, .arg = l};
    l->pending_end = &l->pending;
    ag_loop_hook(loop, &l->hook);
    l->next = atomic_load_explicit(&p->lanes, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(
        &p->lanes, &l->next, l, memory_order_release, memory_order_relaxed))
        ;
    return l;
}

static bool lane_send(struct ag_redis_pipe *p, struct ag_loop *loop,
                      struct ag_redis_job *j)
{
    struct ag_redis_lane *l = lane_of(p, loop);
    if (!l)
        return false;
    j->next = NULL;
    /* Behind the pending jobs, if any: in the order sent. */
    if (l->pending || !writable(l) || !append_job(l, j)) {
        *l->pending_end = j;
        l->pending_end = &j->next;
    }
    /* The hook writes what the iteration sent; if it has run already
     * (a send from a later hook, or from a done it called), the next
     * iteration must not sleep first. */
    if (l->hooked && l->hook_iter == ag_loop_iterations(loop))
        ag_loop_kick(loop);
    return true;
}

static void free_all(struct ag_redis_pipe *p)
{
    struct ag_redis_lane *l = atomic_exchange(&p->lanes, NULL);
    while (l) {
        struct ag_redis_lane *next = l->next;
        struct dones d;
        dones_init(&d);
        /* The loop has stopped, and may be gone: not unwatched. */
        l->events = 0;
        if (l->connector_started)
            pthread_join(l->connector, NULL);
        ag_redis_pipe__drop(&l->made);
        fail_link(l, WHY_QUIET, &d);
        for (struct ag_redis_job *j = l->pending, *jn; j; j = jn) {
            jn = j->next;
            j->reply = NULL;
            j->sent = j->orphaned = false;
            dones_add(&d, j);
        }
        l->pending = NULL;
        dones_run(&d, &l->conn);
        free(l->ring);
        free(l);
        l = next;
    }
}

void ag_redis_lane_attach(struct ag_redis_pipe *p)
{
    static const struct ag_redis_pipe__lanes fns = {
        .send = lane_send, .load = lane_load, .free_all = free_all};
    p->lane_fns = &fns;
}
