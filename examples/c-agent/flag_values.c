/* The values of the C agent's flags, one function per kind (flag_values.h). */
#define _GNU_SOURCE
#include "flag_values.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

/* Decimal digits only, no sign, no overflow of max. */
static bool digits(const char *s, size_t n, uint64_t max, uint64_t *out) {
    uint64_t v = 0;
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
        if (v > max) return false;
    }
    *out = v;
    return true;
}

bool value_duration(const char *s, int64_t min, int64_t *seconds) {
    size_t n = strlen(s);
    int64_t unit = 1;
    if (n && (s[n - 1] == 's' || s[n - 1] == 'm' || s[n - 1] == 'h')) {
        unit = s[n - 1] == 'h' ? 3600 : s[n - 1] == 'm' ? 60 : 1;
        n--;
    }
    uint64_t v = 0;
    if (!digits(s, n, (uint64_t)INT64_MAX / 3600, &v) || (int64_t)v * unit < min) return false;
    *seconds = (int64_t)v * unit;
    return true;
}

bool value_count(const char *s, uint32_t *out) {
    uint64_t v = 0;
    if (!digits(s, strlen(s), UINT32_MAX, &v)) return false;
    *out = (uint32_t)v;
    return true;
}

bool value_key(const char *s, char *why, size_t why_cap) {
    if (strncmp(s, "pkcs11:", 7) == 0) return true;
    if (strncmp(s, "tpm:", 4) == 0)
        snprintf(why, why_cap, "the C agent has no TPM route: libcurl 7.88 has no provider key type (PROV is "
                               "curl 8.12) and tpm2-pkcs11 is another key model than the TSS2 blobs the agents "
                               "share (README); use the Rust or Go agent");
    else
        snprintf(why, why_cap, "the agent makes its own keys; give a token "
                               "(pkcs11:token=T?module-path=M&pin-source=F) or no --key");
    return false;
}

bool value_ip(const char *s, kubeboot_str *out) {
    if (!*s) return false;
    *out = (kubeboot_str){s, strlen(s)};
    return true;
}

bool value_address(const char *s, struct sockaddr_storage *out, socklen_t *len) {
    const char *colon = strrchr(s, ':');
    char host[64];
    uint64_t port = 0;
    if (!colon || (size_t)(colon - s) >= sizeof host || !digits(colon + 1, strlen(colon + 1), 65535, &port))
        return false;
    size_t hl = (size_t)(colon - s);
    memcpy(host, s, hl);
    host[hl] = 0;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
        host[hl - 1] = 0;
        if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1) return false;
        a6->sin6_family = AF_INET6, a6->sin6_port = htons((uint16_t)port), *len = sizeof *a6;
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
        if (inet_pton(AF_INET, host, &a4->sin_addr) != 1) return false;
        a4->sin_family = AF_INET, a4->sin_port = htons((uint16_t)port), *len = sizeof *a4;
    }
    *out = ss;
    return true;
}

bool value_log_format(const char *s, uint32_t *out) {
    if (strcmp(s, "text") && strcmp(s, "json")) return false;
    *out = strcmp(s, "text") ? KUBEBOOT_LOG_JSON : KUBEBOOT_LOG_TEXT;
    return true;
}
