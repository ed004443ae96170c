/* The runtime's HTTPS (http.c): the agent's HTTP actions over libcurl. */
#ifndef KUBEBOOT_RT_HTTP_H
#define KUBEBOOT_RT_HTTP_H

#include <kubeboot.h>

#include <curl/curl.h>
#include <signal.h>

/* Send the request and answer the agent: the response (a 200 watch as a stream), or a transport
   error. A body over max_body bytes is a transport error. When *stop becomes non-zero the
   transfer is abandoned within a second and the agent is not answered. */
void http_exchange(kubeboot_agent *agent, CURL *curl, const kubeboot_http_request *r, size_t max_body,
                   volatile sig_atomic_t *stop);

#endif
