/*
 * What the values of the C agent's flags mean: one small function per kind of value, all in
 * flag_values.c (the core's grammar for what users type will take their place). Each returns
 * true and writes its output, or false (the caller names the flag in its message) and writes
 * nothing.
 */
#ifndef KUBEBOOT_FLAG_VALUES_H
#define KUBEBOOT_FLAG_VALUES_H

#include <kubeboot.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* The response limit: the largest response body the runtime takes (a longer one is a transport
   error). No flag sets it. */
#define KUBEBOOT_RT_MAX_RESPONSE ((size_t)1 << 20)

/* A duration: "90" or "90s" (seconds), "15m", "1h"; at least min seconds. */
bool value_duration(const char *s, int64_t min, int64_t *seconds);

/* A count: decimal digits, at most UINT32_MAX. */
bool value_count(const char *s, uint32_t *out);

/* --key: where new client keys are made. A PKCS#11 token's URI ("pkcs11:...", checked by the
   agent at start) is taken; "tpm:..." and anything else are refused with the reason in why. */
bool value_key(const char *s, char *why, size_t why_cap);

/* An IP address of a serving certificate (text; the agent judges it at start). */
bool value_ip(const char *s, kubeboot_str *out);

/* A listen address "IPv4:PORT" or "[IPv6]:PORT". */
bool value_address(const char *s, struct sockaddr_storage *out, socklen_t *len);

/* --log-format: "text" or "json". */
bool value_log_format(const char *s, uint32_t *out);

#endif
