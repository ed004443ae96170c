/*
 * The runtime's HTTPS: one HTTP action of the agent over libcurl, answered to the agent. The
 * agent says everything (server, CA, client certificate, headers, body, deadline); this file
 * only speaks it. Never the system roots: only the agent's CA is trusted.
 */
#define _GNU_SOURCE
#include "http.h"

#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct xfer {
    kubeboot_agent *agent;
    CURL *curl;
    bool watch, streaming, stopped, too_large;
    int64_t idle_at;
    size_t max, streamed;
    unsigned char *body;
    size_t len;
    const struct http_hooks *hooks;
};

static int64_t now_unix(void) { return (int64_t)time(NULL); }

/* A watch answered 200 is a stream (known once the headers are in). */
static bool streaming(struct xfer *x) {
    if (x->watch && !x->streaming) {
        long code = 0;
        curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &code);
        x->streaming = code == 200;
    }
    return x->streaming;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata) {
    struct xfer *x = userdata;
    size_t n = size * nmemb;
    if ((x->streaming ? x->streamed : x->len) + n > x->max) {
        x->too_large = true; /* over the response limit: a transport error */
        return 0;
    }
    if (streaming(x)) {
        bool keep = true;
        x->streamed += n;
        kubeboot_agent_on_stream_data(x->agent, now_unix(), (const uint8_t *)ptr, n, &keep);
        if (!keep) x->stopped = true;
        return keep ? n : 0; /* 0 ends the transfer: the agent needs no more of the stream */
    }
    unsigned char *b = realloc(x->body, x->len + n + 1);
    if (!b) return 0;
    memcpy(b + x->len, ptr, n);
    x->body = b;
    x->len += n;
    return n;
}

/* Called about once a second while a transfer waits: non-zero abandons it (a stop). A watch
   quiet past its idle_at gets the agent's progress (it says when it is due) and goes on. */
static int on_progress(void *userdata, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
    struct xfer *x = userdata;
    int64_t now = now_unix();
    (void)dt, (void)dn, (void)ut, (void)un;
    if (*x->hooks->stop) return 1;
    if (x->idle_at && now >= x->idle_at && streaming(x) && !x->stopped) {
        bool keep = true, has = false;
        kubeboot_event e;
        kubeboot_agent_on_stream_idle(x->agent, now, &keep);
        while (kubeboot_agent_next_event(x->agent, &e, &has) == KUBEBOOT_RESULT_OK && has)
            x->hooks->event(x->hooks->ctx, &e);
        if (!keep) return x->stopped = true, 1;
    }
    return 0;
}

/* curl_slist_append of "Name: value"; *ok false when the value cannot be a header. */
static struct curl_slist *header(struct curl_slist *h, const char *name, kubeboot_str v, bool *ok) {
    char line[512];
    if (!*ok || !v.len) return h;
    if (v.len + strlen(name) + 3 > sizeof line || memchr(v.data, '\n', v.len) || memchr(v.data, '\r', v.len)) {
        *ok = false;
        return h;
    }
    snprintf(line, sizeof line, "%s: %.*s", name, (int)v.len, v.data);
    struct curl_slist *n = curl_slist_append(h, line);
    if (!n) *ok = false;
    return n ? n : h;
}

static void refuse(kubeboot_agent *agent, const char *why) {
    kubeboot_agent_on_transport_error(agent, now_unix(), why, strlen(why));
}

/* The client certificate and its key (in memory, or in a token through the pkcs11 engine);
   false with why set when this runtime cannot present it. */
static bool client_identity(CURL *h, const kubeboot_connection *c, char *key_uri, size_t cap, char *why, size_t wcap) {
    struct curl_blob cert = {(void *)c->client_cert_pem.data, c->client_cert_pem.len, CURL_BLOB_COPY};
    struct curl_blob key = {(void *)c->client_key_pem.data, c->client_key_pem.len, CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    if (c->client_key_holder == KUBEBOOT_KEY_HOLDER_SOFTWARE) return curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key) == CURLE_OK;
    if (c->client_key_holder != KUBEBOOT_KEY_HOLDER_PKCS11) {
        snprintf(why, wcap, "tpm: the C agent has no TPM route");
        return false;
    }
    /* The token signs the handshake: OpenSSL's pkcs11 engine loads the key by its URI. */
    if (!device_tls_key(c->client_key_pem.data, c->client_key_pem.len, key_uri, cap, why, wcap)) return false;
    if (curl_easy_setopt(h, CURLOPT_SSLENGINE, "pkcs11") != CURLE_OK) return snprintf(why, wcap, "pkcs11: libcurl has no engine"), false;
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "ENG");
    curl_easy_setopt(h, CURLOPT_SSLKEY, key_uri);
    return true;
}

void http_exchange(kubeboot_agent *agent, CURL *h, const kubeboot_http_request *r, size_t max_body,
                   const struct http_hooks *hooks) {
    const kubeboot_connection *c = &r->connection;
    int64_t now = now_unix();
    if (c->server_name.len) {
        refuse(agent, "tls-server-name is not supported by this front-end");
        return;
    }
    char url[4096];
    if (c->server.len + r->path.len + 1 > sizeof url) {
        refuse(agent, "URL too long");
        return;
    }
    snprintf(url, sizeof url, "%.*s%.*s", (int)c->server.len, c->server.data, (int)r->path.len, r->path.data);
    curl_easy_reset(h);
    struct xfer x = {agent, h, r->kind == KUBEBOOT_REQUEST_KIND_WATCH, false, false, false, r->idle_at, max_body, 0,
                     NULL, 0, hooks};
    bool ok = true;
    struct curl_slist *hdrs = NULL;
    hdrs = header(hdrs, "Accept", r->accept, &ok);
    hdrs = header(hdrs, "Content-Type", r->content_type, &ok);
    hdrs = header(hdrs, "Authorization", r->authorization, &ok);
    hdrs = header(hdrs, "User-Agent", r->user_agent, &ok);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    long budget = (long)(r->give_up_at - now);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, budget < 1 ? 1L : budget);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    if (c->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
        struct curl_blob ca = {(void *)c->ca_pem.data, c->ca_pem.len, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
        curl_easy_setopt(h, CURLOPT_CAPATH, NULL); /* never the system roots */
    }
    char key_uri[KUBEBOOT_PKCS11_URI_MAX_LEN + 1], why[512];
    if (c->client_cert_pem.len && !client_identity(h, c, key_uri, sizeof key_uri, why, sizeof why)) {
        curl_slist_free_all(hdrs);
        refuse(agent, why);
        return;
    }
    if (r->method.len == 4 && memcmp(r->method.data, "POST", 4) == 0) {
        /* A request with a body goes over HTTP/1.1: an HTTP/2 server may answer it before reading
         * the body and then reset the stream with NO_ERROR (RFC 9113 section 8.1; Go's server does
         * this for an early 401), and libcurl 7.88 then reports CURLE_HTTP2_STREAM and drops the
         * complete answer, so a refused token would look like a broken connection
         * (e2e/early-answer). Over HTTP/1.1 the early answer arrives whole. */
        curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)r->body.data);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)r->body.len);
    }
    CURLcode rc = ok ? curl_easy_perform(h) : CURLE_BAD_FUNCTION_ARGUMENT;
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (*hooks->stop) {
        /* stopped: the run ends without another word to the agent */
    } else if (x.too_large) {
        char why[64];
        if (max_body == KUBEBOOT_MAX_RESPONSE) snprintf(why, sizeof why, "the response is larger than 1 MiB");
        else snprintf(why, sizeof why, "the response is larger than %zu bytes", max_body);
        refuse(agent, why);
    } else if (x.streaming) {
        if (!x.stopped) kubeboot_agent_on_stream_end(agent, now_unix()); /* ended or broke */
    } else if (rc != CURLE_OK) {
        refuse(agent, curl_easy_strerror(rc));
    } else {
        /* Retry-After (the last response's, CURLH_HEADER: not a trailer), raw: the agent reads it. */
        struct curl_header *ra = NULL;
        kubeboot_http_response resp = {(uint16_t)status, NULL, 0, x.body, x.len};
        if (curl_easy_header(h, "Retry-After", 0, CURLH_HEADER, -1, &ra) == CURLHE_OK)
            resp.retry_after = ra->value, resp.retry_after_len = strlen(ra->value);
        kubeboot_agent_on_http_response(agent, now_unix(), &resp);
    }
    free(x.body);
    curl_slist_free_all(hdrs);
}
