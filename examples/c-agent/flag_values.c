/* The values of the C agent's flags, one function per kind (flag_values.h). */
#define _GNU_SOURCE
#include "flag_values.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kubeboot_result value_duration(const char *s, int64_t *seconds) {
    return kubeboot_parse_duration(s, strlen(s), seconds);
}

kubeboot_result value_key(const char *s, char *device, size_t cap) {
    size_t n = 0;
    kubeboot_result r = kubeboot_parse_key_device(s, strlen(s), device, cap - 1, &n);
    if (r == KUBEBOOT_RESULT_OK) device[n] = 0;
    return r;
}

kubeboot_result value_ip(const char *s, kubeboot_str *out) {
    kubeboot_result r = kubeboot_check_ip(s, strlen(s));
    if (r == KUBEBOOT_RESULT_OK) *out = (kubeboot_str){s, strlen(s)};
    return r;
}

kubeboot_result value_address(const char *s, struct sockaddr_storage *out, socklen_t *len) {
    kubeboot_result r = kubeboot_check_bind_address(s, strlen(s));
    if (r != KUBEBOOT_RESULT_OK) return r;
    /* The grammar took it: "[v6]:port" or "v4:port"; here it only becomes a socket address. */
    char host[64];
    const char *colon = strrchr(s, ':');
    size_t hl = (size_t)(colon - s);
    if (hl >= sizeof host) return KUBEBOOT_RESULT_INVALID_ADDRESS;
    memcpy(host, s, hl);
    host[hl] = 0;
    uint16_t port = (uint16_t)atoi(colon + 1);
    memset(out, 0, sizeof *out);
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)out;
    struct sockaddr_in *a4 = (struct sockaddr_in *)out;
    if (host[0] == '[' && (host[hl - 1] = 0, inet_pton(AF_INET6, host + 1, &a6->sin6_addr) == 1))
        a6->sin6_family = AF_INET6, a6->sin6_port = htons(port), *len = sizeof *a6;
    else if (inet_pton(AF_INET, host, &a4->sin_addr) == 1)
        a4->sin_family = AF_INET, a4->sin_port = htons(port), *len = sizeof *a4;
    else
        return KUBEBOOT_RESULT_INVALID_ADDRESS;
    return KUBEBOOT_RESULT_OK;
}

kubeboot_result value_count(const char *s, uint32_t *out) {
    uint64_t v = 0;
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || (v = v * 10 + (uint64_t)(s[i] - '0')) > UINT32_MAX)
            return KUBEBOOT_RESULT_INVALID_PARAMETER;
    }
    if (n == 0) return KUBEBOOT_RESULT_INVALID_PARAMETER;
    *out = (uint32_t)v;
    return KUBEBOOT_RESULT_OK;
}

kubeboot_result value_log_format(const char *s, uint32_t *out) {
    if (strcmp(s, "text") && strcmp(s, "json")) return KUBEBOOT_RESULT_INVALID_PARAMETER;
    *out = strcmp(s, "text") ? KUBEBOOT_LOG_JSON : KUBEBOOT_LOG_TEXT;
    return KUBEBOOT_RESULT_OK;
}

void value_refused(const char *flag, const char *value, kubeboot_result rc) {
    char line[1024];
    size_t n = 0;
    if (kubeboot_flag_refusal(flag, strlen(flag), value, strlen(value), rc, line, sizeof line, &n) != KUBEBOOT_RESULT_OK)
        n = (size_t)snprintf(line, sizeof line, "%s %s: refused", flag, value);
    fprintf(stderr, "%.*s\n", (int)n, line);
}
