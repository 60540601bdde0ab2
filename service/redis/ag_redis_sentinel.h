/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Finding the master through Redis Sentinel (the "Guidelines for Redis
 * clients with support for Redis Sentinel"): ask each sentinel of the URL
 * in order, with the command timeout, for SENTINEL
 * get-master-addr-by-name; the first that names a master wins. The caller
 * then connects to it and checks with ROLE that it is a master, and asks
 * again whenever that connection fails or answers READONLY or MASTERDOWN
 * (a failover happened), so no subscription to +switch-master is needed.
 * Sentinels are asked without AUTH (the URL's credentials are the
 * master's) and over TLS when the URL is rediss+sentinel://.
 */
#ifndef AG_REDIS_SENTINEL_H
#define AG_REDIS_SENTINEL_H

#include "ag_error.h"
#include "ag_redis_addr.h"
#include "ag_redis_link.h"

/* Fills *master with a (credentials, TLS, db) at the address the first
 * answering sentinel names for a->master_name (a->kind is
 * AG_REDIS_SENTINEL; tls as for ag_redis_link_open). AG_OK, or AG_ESTORE
 * with one line in err naming the last sentinel's failure. */
int ag_redis_sentinel_master(const struct ag_redis_addr *a,
                             const struct ag_redis_tls *tls,
                             unsigned timeout_ms, struct ag_redis_addr *master,
                             struct ag_error *err);

#endif
