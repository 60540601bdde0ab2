/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_http_recv: routes the bytes libmicrohttpd receives through each
 * connection's framing validator, and answers a stream that breaks its
 * rules with a 400 itself (see ag_http_recv.c for how and why).
 */
#ifndef AG_HTTP_RECV_H
#define AG_HTTP_RECV_H

struct ag_http_conns;

/* From now on, bytes received on a descriptor conns knows are fed to its
 * validator; NULL stops it. conns must outlive the watch. */
void ag_http_recv_watch(struct ag_http_conns *conns);

#endif
