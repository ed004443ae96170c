/*
 * What the values of the C agent's flags mean: one small function per kind of value, all in
 * flag_values.c, each a call into the core's grammar (kubeboot_parse_duration, ...) where it has
 * one. Each returns KUBEBOOT_RESULT_OK and writes its output, or the refusal's result (print it
 * with value_refused) and writes nothing.
 */
#ifndef KUBEBOOT_FLAG_VALUES_H
#define KUBEBOOT_FLAG_VALUES_H

#include <kubeboot.h>

#include <stdint.h>
#include <sys/socket.h>

/* A duration ("0", "90s", "10m", "1h30m"): the grammar's. */
kubeboot_result value_duration(const char *s, int64_t *seconds);

/* --key: where new client keys are made, the device name for kubeboot_agent_config.key_device
   ("tpm" or the token's pkcs11: URI): the grammar's. */
kubeboot_result value_key(const char *s, char *device, size_t cap);

/* An IP address of a serving certificate (the text, judged by the grammar). */
kubeboot_result value_ip(const char *s, kubeboot_str *out);

/* A listen address "IPv4:PORT" or "[IPv6]:PORT" (judged by the grammar), as a socket address. */
kubeboot_result value_address(const char *s, struct sockaddr_storage *out, socklen_t *len);

/* A count (--rotations, --expiration-seconds): decimal digits, at most UINT32_MAX;
   INVALID_PARAMETER otherwise. */
kubeboot_result value_count(const char *s, uint32_t *out);

/* --log-format: "text" or "json"; INVALID_PARAMETER otherwise. */
kubeboot_result value_log_format(const char *s, uint32_t *out);

/* Print the grammar's one line for flag's value refused with rc on stderr. The agent exits 2
   then (a usage error), but 1 for --key (what e2e/run's pkcs11 scenario pins for every agent,
   whose start refused such a URI before the grammar existed). */
void value_refused(const char *flag, const char *value, kubeboot_result rc);

#endif
