/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The /metrics text of a registry, for the unit tests that read it. The
 * text lives in one static buffer, valid until the next call: not
 * thread-safe, as cmocka's tests are not. Include after <cmocka.h>.
 */
#ifndef AG_TEST_METRICS_H
#define AG_TEST_METRICS_H

#include <stdio.h>

#include "ag_buf.h"
#include "ag_error.h"
#include "ag_metrics.h"

static inline const char *ag_test_metrics_text(struct ag_metrics *m)
{
    static char text[256 * 1024];
    struct ag_buf b;
    ag_buf_init(&b, sizeof text - 1);
    assert_int_equal(ag_metrics_render(m, &b), AG_OK);
    snprintf(text, sizeof text, "%s", b.p);
    ag_buf_free(&b);
    return text;
}

#endif
