/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The files whose contents are secrets: the identifier hashing key and the
 * webhooks' signing key (--secret-file, --webhook-secret-file), the Redis
 * password (--redis-password-file) and the admin token
 * (--admin-token-file). Each is read once at start, so that a bad file
 * stops the start, and all are judged alike: refused unless a regular file
 * only its owner may read (OpenSSH's rule for a private key), and the keys
 * and the token refused when one byte repeated.
 */
#include "ag_config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "ag_error.h"

/* A number macro as text, for the commands in the messages. */
#define STR_(x) #x
#define STR(x) STR_(x)

/* Reads up to cap bytes of the private regular file path into buf. what
 * is the flag with its dashes, which the refusals name. */
static int read_file(const char *path, unsigned char *buf, size_t cap,
                     size_t *len, const char *what, struct ag_error *err)
{
    /* O_NONBLOCK so that opening a FIFO returns at once instead of waiting
     * for a writer that may never come; the type check below then refuses
     * it. On a regular file the flag changes nothing. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return ag_error_set(err, AG_EIO, what + 2, "%s '%s': %s", what, path,
                            strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return ag_error_set(err, AG_EINVAL, what + 2,
                            "%s '%s' is not a regular file", what, path);
    }
    if (st.st_mode & 077) {
        close(fd);
        return ag_error_set(err, AG_EINVAL, what + 2,
                            "%s '%s' is accessible by group or others (mode "
                            "%03o); run: chmod 600 %s",
                            what, path, (unsigned)(st.st_mode & 0777), path);
    }
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(fd);
            return ag_error_set(err, AG_EIO, what + 2, "%s '%s': %s", what,
                                path, strerror(errno));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == cap)
            break;
    }
    close(fd);
    *len = n;
    return AG_OK;
}

/* One byte repeated (a file of zeros from a botched copy or from head -c
 * on /dev/zero, sixteen "a" typed as a placeholder) is long enough but is
 * no secret: anyone guesses it, and tests a Redis dump against a list of
 * phone numbers with it, or opens the admin API. The message names
 * neither the byte nor the length: they would be the secret. make is the
 * command that makes a real one. */
static int refuse_repeated(const char *what, const char *path,
                           const unsigned char *s, size_t len, const char *make,
                           struct ag_error *err)
{
    size_t i = 1;
    while (i < len && s[i] == s[0])
        i++;
    if (i < len)
        return AG_OK;
    return ag_error_set(err, AG_EINVAL, what + 2,
                        "%s '%s' is one byte repeated; fill it with random "
                        "bytes (%s > %s)",
                        what, path, make, path);
}

int ag_config_read_secret_for(const char *flag, const char *path,
                              unsigned char *key, size_t *len,
                              struct ag_error *err)
{
    char what[64];
    snprintf(what, sizeof what, "--%s", flag);
    /* One byte past the cap tells a file that is too long from one that
     * fits exactly: a longer secret is refused, not cut short. */
    unsigned char buf[AG_SECRET_MAX + 1];
    int rc = read_file(path, buf, sizeof buf, len, what, err);
    if (rc == AG_OK && *len > AG_SECRET_MAX) {
        rc = ag_error_set(err, AG_EINVAL, flag,
                          "%s '%s' is longer than %d bytes", what, path,
                          AG_SECRET_MAX);
    }
    if (rc == AG_OK)
        memcpy(key, buf, *len);
    sodium_memzero(buf, sizeof buf);
    if (rc)
        return rc;

    if (*len < AG_SECRET_MIN) {
        return ag_error_set(err, AG_EINVAL, flag,
                            "%s '%s' holds %zu bytes; at least %d "
                            "random bytes are needed (head -c %d /dev/urandom "
                            "> %s)",
                            what, path, *len, AG_SECRET_MIN, AG_SECRET_MIN,
                            path);
    }
    rc = refuse_repeated(what, path, key, *len,
                         "head -c " STR(AG_SECRET_MIN) " /dev/urandom", err);
    if (rc)
        sodium_memzero(key, *len);
    return rc;
}

int ag_config_read_secret(const char *path, unsigned char *key, size_t *len,
                          struct ag_error *err)
{
    return ag_config_read_secret_for("secret-file", path, key, len, err);
}

int ag_config_read_redis_password(struct ag_config *c, struct ag_error *err)
{
    if (!c->redis_password_file[0])
        return AG_OK;
    char buf[sizeof c->redis.password + 1024];
    size_t len = 0;
    int rc = read_file(c->redis_password_file, (unsigned char *)buf, sizeof buf,
                       &len, "--redis-password-file", err);
    while (rc == AG_OK && len > 0 && isspace((unsigned char)buf[len - 1]))
        len--;
    if (rc == AG_OK &&
        (len == 0 || len >= sizeof c->redis.password || memchr(buf, '\0', len)))
        rc = ag_error_set(err, AG_EINVAL, "redis-password-file",
                          "--redis-password-file '%s' must hold 1 to %zu "
                          "bytes of password text",
                          c->redis_password_file, sizeof c->redis.password - 1);
    if (rc == AG_OK) {
        memcpy(c->redis.password, buf, len);
        c->redis.password[len] = '\0';
    }
    sodium_memzero(buf, sizeof buf);
    return rc;
}

int ag_config_read_token(const char *path, char *token, struct ag_error *err)
{
    /* Read well past the cap, so that a long file is refused rather than
     * cut short, whatever white space trails the token. */
    char buf[AG_TOKEN_MAX + 1024];
    size_t len = 0;
    int rc = read_file(path, (unsigned char *)buf, sizeof buf, &len,
                       "--admin-token-file", err);
    while (rc == AG_OK && len > 0 && isspace((unsigned char)buf[len - 1]))
        len--;
    if (rc == AG_OK &&
        (len < AG_TOKEN_MIN || len > AG_TOKEN_MAX || memchr(buf, '\0', len)))
        rc = ag_error_set(
            err, AG_EINVAL, "admin-token-file",
            "--admin-token-file '%s' must hold %d to %d bytes of token "
            "text",
            path, AG_TOKEN_MIN, AG_TOKEN_MAX);
    if (rc == AG_OK)
        rc = refuse_repeated("--admin-token-file", path,
                             (const unsigned char *)buf, len,
                             "head -c 24 /dev/urandom | base64", err);
    if (rc == AG_OK) {
        memcpy(token, buf, len);
        token[len] = '\0';
    }
    sodium_memzero(buf, sizeof buf);
    return rc;
}
