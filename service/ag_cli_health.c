/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "abuseguard healthcheck [--ready] [service flags]" (ag_cli.h): asks the
 * running service on this host whether it is alive (GET /healthz) or,
 * with --ready, ready to check (GET /readyz: policies loaded, Redis
 * answering), for a container platform's probes where no curl is
 * installed. It reads the service's own flags and environment
 * (--listen, ABUSEGUARD_LISTEN, --config) to find it: an address bound to
 * every interface is asked on loopback, a unix socket through the socket.
 * No proxy is ever used. Exit 0 for a 200 within the timeout, 1 for
 * anything else (said in one line on standard error), 2 for bad usage.
 */
#include "ag_cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "ag_config.h"

#define EXIT_USAGE 2
#define HEALTH_TIMEOUT_MS 2000L

static const char usage[] =
    "usage: abuseguard healthcheck [--ready] [service flags]\n";

static size_t discard(char *data, size_t size, size_t n, void *ctx)
{
    (void)data;
    (void)ctx;
    return size * n;
}

/* The URL of path on the listener a: an unspecified address (every
 * interface) is reached on the loopback of its family. */
static void listener_url(const struct ag_listen_addr *a, const char *path,
                         char *url, size_t size)
{
    if (a->path[0]) {
        snprintf(url, size, "http://localhost%s", path);
        return;
    }
    const char *host = a->host;
    if (strcmp(host, "0.0.0.0") == 0)
        host = "127.0.0.1";
    else if (strcmp(host, "::") == 0)
        host = "::1";
    bool v6 = strchr(host, ':') != NULL;
    snprintf(url, size, "http://%s%s%s:%d%s", v6 ? "[" : "", host,
             v6 ? "]" : "", a->port, path);
}

int ag_cli_health_main(int argc, char **argv)
{
    /* --ready is ours, taken out of argv in place; the rest are the
     * service's flags, which its parser reads from argv[1] on (argv[0],
     * "healthcheck", standing in for the program's name). */
    bool ready = false;
    int n = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ready") == 0)
            ready = true;
        else
            argv[n++] = argv[i];
    }
    struct ag_config cfg;
    struct ag_error err;
    int rc = ag_config_parse(&cfg, n, argv, &err);
    if (rc || cfg.help) {
        if (rc)
            fprintf(stderr, "abuseguard healthcheck: %s\n", err.msg);
        fputs(usage, rc ? stderr : stdout);
        return rc ? EXIT_USAGE : 0;
    }
    char url[256];
    listener_url(&cfg.listen, ready ? "/readyz" : "/healthz", url, sizeof url);
    CURL *c = curl_easy_init();
    if (!c) {
        fprintf(stderr, "abuseguard healthcheck: libcurl failed\n");
        return 1;
    }
    char why[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (cfg.listen.path[0])
        curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, cfg.listen.path);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, HEALTH_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, why);
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    if (cc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    if (cc != CURLE_OK) {
        fprintf(stderr, "abuseguard healthcheck: %s: %s\n", url,
                why[0] ? why : curl_easy_strerror(cc));
        return 1;
    }
    if (status != 200) {
        fprintf(stderr, "abuseguard healthcheck: %s answered %ld\n", url,
                status);
        return 1;
    }
    return 0;
}
