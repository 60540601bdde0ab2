/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the normalisers. Whatever they accept must be a fixed
 * point (normalising the output again gives the output) and within the
 * documented bounds. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ag_identity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    struct ag_error why;
    char out[AG_USER_MAX + 1], again[AG_USER_MAX + 1];
    if (ag_identity_user(in, size, out, "user", &why) == 0) {
        if (ag_identity_user(out, strlen(out), again, "user", &why) != 0 ||
            strcmp(out, again) != 0)
            __builtin_trap();
    }
    char phone[AG_PHONE_MAX + 1], phone2[AG_PHONE_MAX + 1];
    if (ag_identity_phone(in, size, phone, "phone", &why) == 0) {
        size_t n = strlen(phone);
        if (n < 9 || n > 16 || phone[0] != '+' ||
            ag_identity_phone(phone, n, phone2, "phone", &why) != 0 ||
            strcmp(phone, phone2) != 0)
            __builtin_trap();
    }
    char text[128];
    if (size < sizeof text) {
        memcpy(text, data, size);
        text[size] = '\0';
        struct ag_ip ip, ip2;
        if (ag_identity_ip(text, &ip, "ip", &why) == 0) {
            char prefix[AG_IP_PREFIX_MAX];
            for (unsigned bits = 0; bits <= ag_ip_bits(ip.family); bits++)
                ag_identity_ip_net(&ip, bits, prefix);
            if (ag_identity_ip(ip.text, &ip2, "ip", &why) != 0 ||
                strcmp(ip.text, ip2.text) != 0)
                __builtin_trap();
        }
    }
    return 0;
}
