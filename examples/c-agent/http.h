/* The runtime's HTTPS (http.c): the agent's HTTP actions over libcurl. */
#ifndef KUBEBOOT_RT_HTTP_H
#define KUBEBOOT_RT_HTTP_H

#include <kubeboot.h>

#include <curl/curl.h>
#include <signal.h>

/* What a transfer reports to the loop. */
struct http_hooks {
    /* non-zero: abandon the transfer (within a second), the agent not answered */
    volatile sig_atomic_t *stop;
    /* a line the agent says while a watch stays open (its progress) */
    void (*event)(void *ctx, const kubeboot_event *e);
    void *ctx;
};

/* Send the request and answer the agent: the response (a 200 watch as a stream, quiet past its
   idle_at: kubeboot_agent_on_stream_idle and the lines it says), or a transport error. A body
   or stream over max_body bytes is a transport error. */
void http_exchange(kubeboot_agent *agent, CURL *curl, const kubeboot_http_request *r, size_t max_body,
                   const struct http_hooks *hooks);

#endif
