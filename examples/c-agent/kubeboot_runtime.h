/*
 * kubeboot_runtime: libkubeboot's agent run on a Linux host, as a library a C program links
 * (build/libkubeboot-runtime.a) or compiles in (runtime.c, http.c, metrics.c, device.c,
 * flag_values.c). Every decision is the agent's; the runtime only does its I/O, each habit
 * decided here once:
 *
 *   - HTTPS with libcurl (the agent's CA only, never the system roots; a client key in memory, or
 *     in a PKCS#11 token through OpenSSL's pkcs11 engine: device.c), responses up to
 *     max_response bytes (a longer one is a transport error), watch streams fed as they arrive
 *     and the agent's progress while one stays quiet;
 *   - files and entropy with libkubeboot's own crash-safe file store and the OS RNG
 *     (kubeboot_agent_perform_file_action, kubeboot_agent_perform_entropy);
 *   - sleeping until the agent's next deadline; SIGHUP (or kubeboot_rt_wake) ends a sleep and the
 *     agent reads its files again; SIGTERM/SIGINT (or kubeboot_rt_stop) stop it at once during a
 *     request or a sleep, else after the file steps under way (never between a write and what
 *     completes it): status 0;
 *   - systemd's notification socket ($NOTIFY_SOCKET): READY=1 once the credentials are usable,
 *     STATUS= the latest line, STOPPING=1;
 *   - the kubelet's certificate metrics at http://IP:PORT/metrics and/or in a node_exporter
 *     textfile (rewritten on every event and at least every KUBEBOOT_METRICS_TEXTFILE_REFRESH_SECS);
 *   - the agent's lines on stdout (on a terminal a progress line replaces the one before), the
 *     runtime's own messages on stderr as "<program>: ...";
 *   - on_credentials, called when a client or serving pair became current: once it is on disk and
 *     the agent has read it back and judged it usable (also for the pair found valid at the
 *     start), before the agent goes on.
 */
#ifndef KUBEBOOT_RUNTIME_H
#define KUBEBOOT_RUNTIME_H

#include <kubeboot.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Which pair a credentials callback is about. */
#define KUBEBOOT_RT_CLIENT 0
#define KUBEBOOT_RT_SERVING 1

/* A pair that became current. Strings are absolute, NUL-terminated and valid during the call. */
struct kubeboot_rt_credentials {
    /* KUBEBOOT_RT_CLIENT or KUBEBOOT_RT_SERVING. */
    int which;
    /* <cert-dir>/kubelet-client-current.pem or kubelet-server-current.pem: the certificate chain,
       then the key (its PEM, or the reference of a key a device holds). */
    const char *cert_file;
    /* The key: the same file. */
    const char *key_file;
    /* The client's: the node kubeconfig, which names cert_file; NULL for serving. */
    const char *kubeconfig;
    /* The certificate's notAfter (unix seconds). */
    int64_t not_after;
};

/* Called from the runtime's loop (never from a signal handler or another thread). */
typedef void (*kubeboot_rt_credentials_fn)(void *userdata, const struct kubeboot_rt_credentials *c);

/* What kubeboot_rt_run runs. Fill it with kubeboot_rt_options_default first. */
struct kubeboot_rt_options {
    /* The agent's configuration (kubeboot_agent_config_default's, mode RUN). The runtime sets
       working_dir to the working directory when it is NULL, and always sets seed (the OS RNG) and
       utc_offset (the local time's, kept current). Read during kubeboot_rt_run only. */
    kubeboot_agent_config agent;
    /* The agent's capacities; NULL: the hosts' (kubeboot_capacities_host). */
    const kubeboot_capacities *capacities;
    /* Serve the metrics at "IPv4:PORT" or "[IPv6]:PORT"; NULL: not. */
    const char *metrics_bind_address;
    /* Keep the metrics in this node_exporter textfile (*.prom); NULL: not. */
    const char *metrics_textfile;
    /* The largest response body taken (bytes; a longer one is a transport error). */
    size_t max_response;
    /* Install handlers for SIGTERM, SIGINT (stop) and SIGHUP (wake); false: the program calls
       kubeboot_rt_stop and kubeboot_rt_wake itself. */
    bool handle_signals;
    /* The prefix of the runtime's messages on stderr. */
    const char *program;
    /* Told when a pair became current; NULL: nobody. */
    kubeboot_rt_credentials_fn on_credentials;
    /* Passed to on_credentials. */
    void *userdata;
};

/* The defaults: the agent's (kubeboot_agent_config_default) in mode RUN for front-end "c", the
   hosts' capacities, no metrics, responses up to KUBEBOOT_MAX_RESPONSE (the core's limit),
   signals handled, program "kubeboot-agent", no callback. */
void kubeboot_rt_options_default(struct kubeboot_rt_options *o);

/* Run the agent until it is done (0), failed (1, its line printed) or stopped (0). A bad option
   (a textfile not *.prom, an address that is not IP:PORT or cannot be bound, a configuration the
   agent refuses) is one message on stderr and 1. One run at a time per process. */
int kubeboot_rt_run(const struct kubeboot_rt_options *o);

/* Stop the run (async-signal-safe; from any thread). */
void kubeboot_rt_stop(void);

/* End the agent's sleep between attempts: it reads its files again (async-signal-safe). */
void kubeboot_rt_wake(void);

#endif
