/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The admin API's view of the fleet (ag_admin.h): GET /admin/fleet, and
 * the overview the console shows first, which carries the fleet's version
 * and the instances that lag.
 */
#include "ag_admin_impl.h"

#include <string.h>

#include "ag_admin_shields.h"

int ag_admin__fleet(struct ag_admin *a, const struct ag_admin_request *req,
                    struct ag_http_response *r)
{
    if (strcmp(req->method, "GET") != 0)
        return ag_admin__not_allowed(r, "GET");
    json_t *out = NULL;
    struct ag_error err;
    if (ag_fleet_status(a->fleet, &out, &err))
        return ag_http_response_error(r, 500, err.msg);
    return ag_admin__send_json(r, 200, out);
}

/* The overview's part of the fleet: its name and version, this
 * instance's state, and the instances that lag (id, host, version,
 * state). NULL when out of memory. */
static json_t *fleet_summary(struct ag_admin *a)
{
    json_t *st = NULL;
    struct ag_error err;
    if (ag_fleet_status(a->fleet, &st, &err))
        return NULL;
    const json_t *fleet = json_object_get(st, "fleet");
    json_t *lagging = json_array();
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(st, "instances"), i, m)
    {
        if (!json_is_true(json_object_get(m, "lagging")) ||
            json_is_true(json_object_get(m, "gone")))
            continue;
        json_t *o =
            json_pack("{s:O, s:O, s:O, s:O}", "id", json_object_get(m, "id"),
                      "host", json_object_get(m, "host"), "version",
                      json_object_get(m, "version"), "state",
                      json_object_get(m, "state"));
        lagging = ag_admin__append_or_drop(lagging, o);
    }
    const json_t *self = json_object_get(st, "instance");
    json_t *out =
        lagging
            ? json_pack("{s:O?, s:O?, s:O, s:O, s:o}", "name",
                        json_object_get(fleet, "name"), "version",
                        json_object_get(fleet, "version"), "state",
                        json_object_get(self, "state"), "instance_version",
                        json_object_get(self, "version"), "lagging", lagging)
            : NULL;
    json_decref(st);
    return out;
}

int ag_admin__overview(struct ag_admin *a, const struct ag_admin_request *req,
                       struct ag_http_response *r)
{
    struct ag_admin_shields_request sr = {
        req->method, req->path + strlen("/admin"), req->body, req->len};
    json_t *fleet = strcmp(req->method, "GET") == 0 ? fleet_summary(a) : NULL;
    return ag_admin_overview(a->svc, &sr, fleet, r);
}
