/* SPDX-License-Identifier: Apache-2.0 */
/*
 * N sorted HASH:COUNT lines shaped like the Pwned Passwords downloader's
 * single file, on standard output, for the corpus benchmarks
 * (bench/pwned_import.sh, bench/pwned_range.sh):
 *
 *   pwned_gen N DIGITS     (DIGITS: 40 for SHA-1, 32 for NTLM)
 *
 * Hash i's top 64 bits are i * (2^64 / N) plus a random part of that
 * step, so the hashes go strictly up and spread over every prefix as the
 * real ones do; the rest of the digits are random. The same N gives the
 * same lines every time.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t state = 0x2545f4914f6cdd1dull;

static uint64_t next(void) /* splitmix64 */
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
    static const char hx[] = "0123456789ABCDEF";
    static char buf[1 << 20];
    if (argc != 3) {
        fprintf(stderr, "usage: pwned_gen N DIGITS\n");
        return 2;
    }
    uint64_t n = strtoull(argv[1], NULL, 10);
    int digits = atoi(argv[2]);
    uint64_t step = UINT64_MAX / n;
    size_t len = 0;

    for (uint64_t i = 0; i < n; i++) {
        uint64_t top = i * step + next() % step, r = next(), u = next();
        char *o = buf + len;
        for (int k = 0; k < 16; k++)
            *o++ = hx[(top >> (60 - 4 * k)) & 15];
        for (int k = 16; k < digits; k++, r >>= 4)
            *o++ = hx[r & 15];
        *o++ = ':';
        /* Most hashes were seen a few times, a few very often. */
        uint32_t count = u % 100 < 70 ? 1 + u % 3 : 1 + (u >> 8) % 100000;
        char d[12];
        int nd = 0;
        do
            d[nd++] = (char)('0' + count % 10);
        while (count /= 10);
        while (nd)
            *o++ = d[--nd];
        *o++ = '\n';
        len = (size_t)(o - buf);
        if (len > sizeof(buf) - 128) {
            fwrite(buf, 1, len, stdout);
            len = 0;
        }
    }
    fwrite(buf, 1, len, stdout);
    return fflush(stdout) != 0;
}
