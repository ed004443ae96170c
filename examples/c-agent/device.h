/* The C agent's device I/O for node keys in a PKCS#11 token (device.c). */
#ifndef KUBEBOOT_AGENT_DEVICE_H
#define KUBEBOOT_AGENT_DEVICE_H
#include <kubeboot.h>

/* Do the outstanding KEY action in the token and answer it (a failure is answered with
   kubeboot_agent_on_key_error and printed to stderr as "<program>: ..."). */
void device_key_action(kubeboot_agent *agent, int64_t now, const kubeboot_key_action *k, const char *program);

/* Ready OpenSSL's pkcs11 engine for the client key a reference names and write the key's URI
   for CURLOPT_SSLKEY (NUL-terminated) to uri; false with err set when it cannot. */
bool device_tls_key(const uint8_t *ref, size_t ref_len, char *uri, size_t cap, char *err, size_t ecap);
#endif
