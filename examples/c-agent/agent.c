/*
 * kubeboot-agent: a kubelet-style node agent in C. Every decision (are the credentials usable,
 * bootstrap, rotate, fall back, which files to write in which order) is libkubeboot's agent;
 * this program only does I/O: HTTPS with libcurl, sleeping and printing. Files and entropy go
 * through libkubeboot's own crash-safe file store and the OS RNG.
 *
 *   kubeboot-agent --kubeconfig F [--bootstrap-kubeconfig F] [--cert-dir D] [--node-name N]
 *                  [--ca-bundle F] [--once] [--rotations N] [--rotate-now] [--rotate-now-serving]
 *                  [--wait 1h] [--rotation-wait 15m] [--expiration-seconds N] [--poll]
 *                  [--serving --dns D... --ip IP...]
 *                  [--discovery-endpoint URL --discovery-token T --discovery-token-ca-cert-hash H...]
 *                  [--metrics-bind-address IP:PORT] [--metrics-textfile F.prom] [--log-format text|json]
 *                  [--ca-refresh-interval 10m] [--key pkcs11:token=T?module-path=M&pin-source=F]
 *
 * Without --once it runs as a daemon (rotating at every deadline). Output: the agent's
 * `agent=c step=...` lines on stdout; exit 1 on failure with the typed reason. The kubelet's
 * certificate metrics (libkubeboot's text) are served at http://IP:PORT/metrics by a thread that
 * renders the agent's last snapshot when scraped, and/or written to a node_exporter textfile.
 *
 * With --key pkcs11:... every client key is made in that PKCS#11 token and never leaves it: the
 * agent's KEY actions are done in the token (device.c), the CSR is signed there through a C sign
 * callback, and the TLS handshake is signed there by OpenSSL's pkcs11 engine through libcurl
 * (CURLOPT_SSLENGINE "pkcs11", CURLOPT_SSLKEYTYPE "ENG"). The cert dir and the kubeconfig hold
 * the key's reference, never the key. A TPM is not supported by this front-end (README).
 */
#define _GNU_SOURCE
#include <kubeboot.h>

#include "device.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_BODY (1u << 20)
#define MAX_LIST 16

static volatile sig_atomic_t stop_requested, in_http, hangup;
/* SIGTERM/SIGINT: at once during a request (it writes nothing) or a sleep, else after the file
   steps under way (never between a write and what completes it). */
static void on_signal(int sig) {
    (void)sig;
    if (in_http) _exit(0);
    stop_requested = 1;
}
/* SIGHUP: end a sleep between attempts; the agent reads its files again. */
static void on_hangup(int sig) { (void)sig; hangup = 1; }

/* systemd's notification socket ($NOTIFY_SOCKET, sd_notify(3)): READY=1 at the agent's first
   ready event, STATUS= the latest line, STOPPING=1. Without it nothing is sent. */
static void notify(const char *msg, size_t len) {
    const char *p = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa;
    if (!p || !*p || strlen(p) >= sizeof sa.sun_path) return;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, p, strlen(p));
    if (p[0] == '@') sa.sun_path[0] = 0; /* abstract namespace */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(p));
    if (sendto(fd, msg, len, MSG_NOSIGNAL, (struct sockaddr *)&sa, sl) < 0) perror("NOTIFY_SOCKET");
    close(fd);
}

static void notify_event(const char *line, size_t len, bool ready) {
    static bool was_ready;
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "%sSTATUS=%.*s", ready && !was_ready ? "READY=1\n" : "", (int)len, line);
    if (ready) was_ready = true;
    /* (event lines hold no newline: the agent escapes control characters) */
    if (n > 0) notify(msg, n < (int)sizeof msg ? (size_t)n : sizeof msg - 1);
}
static int64_t now_unix(void) { return (int64_t)time(NULL); }

static long utc_offset(void) {
    time_t t = time(NULL);
    struct tm tm;
    return localtime_r(&t, &tm) ? tm.tm_gmtoff : 0;
}

static kubeboot_str str_of(const char *s) { return (kubeboot_str){s, s ? strlen(s) : 0}; }

/* "90", "30s", "15m", "1h": seconds, or -1. */
static long long duration(const char *s) {
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0) return -1;
    if (*end == 's' || *end == '\0') return v;
    if (*end == 'm') return v * 60;
    if (*end == 'h') return v * 3600;
    return -1;
}

/* ---- HTTPS over libcurl ---------------------------------------------------------------- */

struct xfer {
    kubeboot_agent *agent;
    CURL *curl;
    bool watch, streaming, stopped;
    unsigned char *body;
    size_t len;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata) {
    struct xfer *x = userdata;
    size_t n = size * nmemb;
    if (x->watch && !x->streaming) {
        long code = 0;
        curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &code);
        x->streaming = code == 200;
    }
    if (x->streaming) {
        bool keep = true;
        kubeboot_agent_on_stream_data(x->agent, now_unix(), (const uint8_t *)ptr, n, &keep);
        if (!keep) x->stopped = true;
        return keep ? n : 0; /* 0 ends the transfer: the agent needs no more of the stream */
    }
    if (n > MAX_BODY - x->len) return 0;
    unsigned char *b = realloc(x->body, x->len + n + 1);
    if (!b) return 0;
    memcpy(b + x->len, ptr, n);
    x->body = b;
    x->len += n;
    return n;
}

/* curl_slist_append of "Name: value" (value of len bytes). */
static struct curl_slist *header(struct curl_slist *h, const char *name, const char *v, size_t len, bool *ok) {
    char line[512];
    if (!*ok || !v) return h;
    if (len + strlen(name) + 3 > sizeof line || memchr(v, '\n', len) || memchr(v, '\r', len)) {
        *ok = false;
        return h;
    }
    snprintf(line, sizeof line, "%s: %.*s", name, (int)len, v);
    struct curl_slist *n = curl_slist_append(h, line);
    if (!n) *ok = false;
    return n ? n : h;
}

static void http(kubeboot_agent *agent, CURL *h, const kubeboot_agent_action *a) {
    int64_t now = now_unix();
    if (a->server_name) {
        kubeboot_agent_on_transport_error(agent, now, "tls-server-name is not supported by this front-end", 50);
        return;
    }
    char url[4096];
    if (a->server_len + a->path_len + 1 > sizeof url) {
        kubeboot_agent_on_transport_error(agent, now, "URL too long", 12);
        return;
    }
    snprintf(url, sizeof url, "%.*s%.*s", (int)a->server_len, a->server, (int)a->path_len, a->path);
    curl_easy_reset(h);
    struct xfer x = {agent, h, a->request_kind == KUBEBOOT_AGENT_REQUEST_WATCH, false, false, NULL, 0};
    bool ok = true;
    struct curl_slist *hdrs = NULL;
    hdrs = header(hdrs, "Accept", a->accept, a->accept ? strlen(a->accept) : 0, &ok);
    hdrs = header(hdrs, "Content-Type", a->content_type, a->content_type ? strlen(a->content_type) : 0, &ok);
    hdrs = header(hdrs, "Authorization", a->authorization, a->authorization_len, &ok);
    hdrs = header(hdrs, "User-Agent", a->user_agent, a->user_agent_len, &ok);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    long budget = (long)(a->until - now);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, budget < 1 ? 1L : budget);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    if (a->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
        struct curl_blob ca = {(void *)a->ca_pem, a->ca_pem_len, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
        curl_easy_setopt(h, CURLOPT_CAPATH, NULL); /* never the system roots */
    }
    char key_uri[KUBEBOOT_PKCS11_URI_MAX_LEN + 1], why[512];
    if (a->client_cert_pem) {
        struct curl_blob cert = {(void *)a->client_cert_pem, a->client_cert_pem_len, CURL_BLOB_COPY};
        struct curl_blob key = {(void *)a->client_key_pem, a->client_key_pem_len, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        if (a->key_holder == KUBEBOOT_KEY_HOLDER_SOFTWARE) {
            curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
        } else if (a->key_holder == KUBEBOOT_KEY_HOLDER_PKCS11 &&
                   device_tls_key(a->client_key_pem, a->client_key_pem_len, key_uri, sizeof key_uri, why, sizeof why)) {
            /* The token signs the handshake: OpenSSL's pkcs11 engine loads the key by its URI. */
            ok = ok && curl_easy_setopt(h, CURLOPT_SSLENGINE, "pkcs11") == CURLE_OK;
            curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "ENG");
            curl_easy_setopt(h, CURLOPT_SSLKEY, key_uri);
        } else {
            if (a->key_holder != KUBEBOOT_KEY_HOLDER_PKCS11) snprintf(why, sizeof why, "tpm: the C agent has no TPM route");
            curl_slist_free_all(hdrs);
            kubeboot_agent_on_transport_error(agent, now, why, strlen(why));
            return;
        }
    }
    if (strcmp(a->method, "POST") == 0) {
        /* A request with a body goes over HTTP/1.1: an HTTP/2 server may answer it before reading
         * the body and then reset the stream with NO_ERROR (RFC 9113 section 8.1; Go's server does
         * this for an early 401), and libcurl 7.88 then reports CURLE_HTTP2_STREAM and drops the
         * complete answer, so a refused token would look like a broken connection
         * (e2e/early-answer). Over HTTP/1.1 the early answer arrives whole. */
        curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)a->data);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)a->data_len);
    }
    CURLcode rc = ok ? curl_easy_perform(h) : CURLE_BAD_FUNCTION_ARGUMENT;
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (x.streaming) {
        if (!x.stopped) kubeboot_agent_on_stream_end(agent, now_unix()); /* ended or broke */
    } else if (rc != CURLE_OK) {
        const char *why = curl_easy_strerror(rc);
        kubeboot_agent_on_transport_error(agent, now_unix(), why, strlen(why));
    } else {
        /* Retry-After (the last response's, CURLH_HEADER: not a trailer), raw: the agent reads it. */
        struct curl_header *ra = NULL;
        const char *rav = NULL;
        if (curl_easy_header(h, "Retry-After", 0, CURLH_HEADER, -1, &ra) == CURLHE_OK) rav = ra->value;
        kubeboot_agent_on_http_response_with_retry_after(agent, now_unix(), (uint16_t)status, rav,
                                                         rav ? strlen(rav) : 0, x.body, x.len);
    }
    free(x.body);
    curl_slist_free_all(hdrs);
}

/* ---- metrics: an HTTP endpoint and a node_exporter textfile ----------------------------- */

static pthread_mutex_t metrics_lock = PTHREAD_MUTEX_INITIALIZER;
static kubeboot_metrics metrics_snapshot; /* the agent's, as of its last step */
static const char *metrics_textfile;
static int64_t metrics_written_at;

static void metrics_update(kubeboot_agent *agent) {
    kubeboot_metrics m;
    if (kubeboot_agent_metrics(agent, &m) != KUBEBOOT_RESULT_OK) return;
    pthread_mutex_lock(&metrics_lock);
    metrics_snapshot = m;
    pthread_mutex_unlock(&metrics_lock);
}

/* The text at this moment (the TTLs are computed now). */
static size_t metrics_render(char *buf, size_t cap) {
    kubeboot_metrics m;
    pthread_mutex_lock(&metrics_lock);
    m = metrics_snapshot;
    pthread_mutex_unlock(&metrics_lock);
    size_t n = 0;
    return kubeboot_metrics_text(&m, now_unix(), buf, cap, &n) == KUBEBOOT_RESULT_OK ? n : 0;
}

/* Atomically (a temporary file beside it, renamed into place), mode 0644: the collector reads
   whole files, often as another user. A failure is reported, never fatal. */
static void metrics_write_textfile(void) {
    if (!metrics_textfile) return;
    metrics_written_at = now_unix(); /* tried: a failing write is retried at the next refresh */
    char body[KUBEBOOT_METRICS_TEXT_CAP], tmp[4200];
    size_t n = metrics_render(body, sizeof body);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", metrics_textfile, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && fchmod(fd, 0644) == 0 && write(fd, body, n) == (ssize_t)n && fsync(fd) == 0;
    if (fd >= 0) ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, metrics_textfile) == 0) return;
    perror(metrics_textfile);
    unlink(tmp);
}

static size_t put(char *dst, size_t cap, const char *s) {
    size_t n = strlen(s) < cap ? strlen(s) : cap;
    memcpy(dst, s, n);
    return n;
}

/* One HTTP/1.1 exchange per connection, then close: GET /metrics, GET /healthz; else 404/405. */
static void metrics_answer(int fd) {
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    char req[8192];
    size_t got = 0;
    req[0] = 0;
    while (got < sizeof req - 1 && !strstr(req, "\r\n\r\n")) {
        ssize_t r = recv(fd, req + got, sizeof req - 1 - got, 0);
        if (r <= 0) break;
        got += (size_t)r;
        req[got] = 0;
    }
    bool get = !strncmp(req, "GET ", 4), head = !strncmp(req, "HEAD ", 5);
    const char *target = get ? req + 4 : head ? req + 5 : "";
    size_t tlen = strcspn(target, " ?\r\n");
    char body[KUBEBOOT_METRICS_TEXT_CAP];
    size_t blen;
    const char *status = "200 OK", *ctype = "text/plain; charset=utf-8";
    if (!get && !head) status = "405 Method Not Allowed", blen = put(body, sizeof body, "GET only\n");
    else if (tlen == 8 && !strncmp(target, "/metrics", 8))
        ctype = "text/plain; version=0.0.4; charset=utf-8", blen = metrics_render(body, sizeof body);
    else if (tlen == 8 && !strncmp(target, "/healthz", 8)) blen = put(body, sizeof body, "ok");
    else status = "404 Not Found", blen = put(body, sizeof body, "not found\n");
    char hdr[256];
    int hn = snprintf(hdr, sizeof hdr, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n\r\n", status, ctype, blen);
    if (send(fd, hdr, (size_t)hn, MSG_NOSIGNAL) == hn && !head) (void)send(fd, body, blen, MSG_NOSIGNAL);
    close(fd);
}

static void *metrics_serve(void *arg) {
    int lfd = (int)(intptr_t)arg;
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd >= 0) metrics_answer(fd);
    }
    return NULL;
}

/* Listen on "IPv4:PORT" or "[IPv6]:PORT" and serve from a thread; -1 on a bad address. */
static int metrics_listen(const char *addr) {
    const char *colon = strrchr(addr, ':');
    char host[64];
    if (!colon || (size_t)(colon - addr) >= sizeof host) return -1;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = 0;
    char *end = NULL;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || port > 65535) return -1;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t len;
    size_t hl = strlen(host);
    if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
        host[hl - 1] = 0;
        if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1) return -1;
        a6->sin6_family = AF_INET6, a6->sin6_port = htons((uint16_t)port), len = sizeof *a6;
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
        if (inet_pton(AF_INET, host, &a4->sin_addr) != 1) return -1;
        a4->sin_family = AF_INET, a4->sin_port = htons((uint16_t)port), len = sizeof *a4;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    pthread_t t;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 16) != 0 ||
        pthread_create(&t, NULL, metrics_serve, (void *)(intptr_t)fd) != 0) {
        perror(addr);
        if (fd >= 0) close(fd);
        return -2;
    }
    pthread_detach(t);
    return 0;
}

/* ---- the loop ---------------------------------------------------------------------------- */

/* Print a line; on a terminal a progress update replaces the rows the line before took. */
static void print_line(const char *line, size_t len, bool update, size_t *rows) {
    struct winsize ws;
    size_t cols = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
    if (cols && update && *rows) printf("\x1b[%zuF\x1b[J", *rows);
    printf("%.*s\n", (int)len, line);
    fflush(stdout);
    *rows = cols ? (len + cols - 1) / cols : 0;
}

static int drive(kubeboot_agent *agent, CURL *curl) {
    size_t rows = 0;
    for (;;) {
        kubeboot_agent_action a;
        char msg[512];
        size_t n = 0;
        int64_t now = now_unix();
        kubeboot_agent_set_utc_offset(agent, (int32_t)utc_offset());
        if (hangup) {
            bool woken = false;
            hangup = 0;
            kubeboot_agent_wake(agent, &woken);
        }
        if (kubeboot_agent_poll(agent, now, &a) != KUBEBOOT_RESULT_OK) return 1;
        metrics_update(agent);
        /* Every change of the metrics comes with an event; the TTLs age: rewrite then, and at
           least every KUBEBOOT_METRICS_TEXTFILE_REFRESH_SECS. */
        if (a.kind == KUBEBOOT_AGENT_EVENT || a.kind == KUBEBOOT_AGENT_DONE || a.kind == KUBEBOOT_AGENT_FAILED ||
            now - metrics_written_at >= KUBEBOOT_METRICS_TEXTFILE_REFRESH_SECS)
            metrics_write_textfile();
        if (stop_requested && (a.kind == KUBEBOOT_AGENT_SLEEP || a.kind == KUBEBOOT_AGENT_HTTP))
            return notify("STOPPING=1", 10), 0;
        switch (a.kind) {
        case KUBEBOOT_AGENT_READ:
        case KUBEBOOT_AGENT_FILE:
            if (kubeboot_agent_perform_file_action(agent, now, msg, sizeof msg, &n) == KUBEBOOT_RESULT_OK && n)
                fprintf(stderr, "kubeboot-agent: %.*s\n", (int)n, msg);
            break;
        case KUBEBOOT_AGENT_ENTROPY:
            if (kubeboot_agent_perform_entropy(agent) != KUBEBOOT_RESULT_OK) return 1;
            break;
        case KUBEBOOT_AGENT_KEY:
            device_key_action(agent, now, &a);
            break;
        case KUBEBOOT_AGENT_HTTP:
            in_http = 1;
            if (stop_requested) return notify("STOPPING=1", 10), 0;
            http(agent, curl, &a);
            in_http = 0;
            break;
        case KUBEBOOT_AGENT_SLEEP:
            /* Woken early for the textfile's refresh, it polls again (and is told to sleep on). */
            while (!stop_requested && !hangup && now_unix() < a.until &&
                   !(metrics_textfile && now_unix() - metrics_written_at >= KUBEBOOT_METRICS_TEXTFILE_REFRESH_SECS))
                sleep(1);
            break;
        case KUBEBOOT_AGENT_EVENT:
            print_line(a.line, a.line_len, a.line_update, &rows);
            notify_event(a.line, a.line_len, a.line_ready);
            break;
        case KUBEBOOT_AGENT_DONE:
            return 0;
        case KUBEBOOT_AGENT_FAILED:
        default:
            print_line(a.line, a.line_len, false, &rows);
            notify_event(a.line, a.line_len, false);
            fprintf(stderr, "kubeboot-agent: %.*s\n", (int)a.detail_len, a.detail);
            return 1;
        }
    }
}

static void usage(void) {
    fprintf(stderr, "usage: kubeboot-agent --kubeconfig F [--bootstrap-kubeconfig F] [--cert-dir D] [--node-name N]\n"
                    "  [--ca-bundle F] [--once] [--rotations N] [--rotate-now] [--rotate-now-serving] [--wait D]\n"
                    "  [--rotation-wait D] [--expiration-seconds N] [--poll] [--serving --dns D.. --ip IP..]\n"
                    "  [--discovery-endpoint URL --discovery-token T --discovery-token-ca-cert-hash H..\n"
                    "   | --discovery-token-unsafe-skip-ca-verification]\n"
                    "  [--metrics-bind-address IP:PORT] [--metrics-textfile F.prom] [--log-format text|json]\n"
                    "  [--ca-refresh-interval D (0: never)] [--key pkcs11:token=T?module-path=M&pin-source=F]\n");
}

int main(int argc, char **argv) {
    kubeboot_agent_config c;
    memset(&c, 0, sizeof c);
    const char *kubeconfig = NULL, *bootstrap = NULL, *cert_dir = "/var/lib/kubelet/pki", *node = NULL;
    const char *ca_bundle = NULL, *endpoint = NULL, *token = NULL, *metrics_addr = NULL, *key = NULL;
    kubeboot_str dns[MAX_LIST], ips[MAX_LIST], pins[MAX_LIST];
    size_t ndns = 0, nips = 0, npins = 0;
    bool once = false;
    c.mode = KUBEBOOT_MODE_RUN;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true;
        if (!strcmp(f, "--once")) once = true, takes = false;
        else if (!strcmp(f, "--rotate-now")) c.rotate_now_client = true, takes = false;
        else if (!strcmp(f, "--rotate-now-serving")) c.rotate_now_serving = true, takes = false;
        else if (!strcmp(f, "--poll")) c.poll = true, takes = false;
        else if (!strcmp(f, "--serving")) c.serving = true, takes = false;
        else if (!strcmp(f, "--discovery-token-unsafe-skip-ca-verification"))
            c.discovery_unsafe_skip_ca_verification = true, takes = false;
        else if (!v || !*v) return usage(), 2;
        else if (!strcmp(f, "--kubeconfig")) kubeconfig = v;
        else if (!strcmp(f, "--bootstrap-kubeconfig")) bootstrap = v;
        else if (!strcmp(f, "--cert-dir")) cert_dir = v;
        else if (!strcmp(f, "--node-name")) node = v;
        else if (!strcmp(f, "--ca-bundle")) ca_bundle = v;
        else if (!strcmp(f, "--discovery-endpoint")) endpoint = v;
        else if (!strcmp(f, "--discovery-token")) token = v;
        else if (!strcmp(f, "--metrics-bind-address")) metrics_addr = v;
        else if (!strcmp(f, "--key")) key = v;
        else if (!strcmp(f, "--metrics-textfile")) metrics_textfile = v;
        else if (!strcmp(f, "--log-format") && !strcmp(v, "text")) c.log_format = KUBEBOOT_LOG_TEXT;
        else if (!strcmp(f, "--log-format") && !strcmp(v, "json")) c.log_format = KUBEBOOT_LOG_JSON;
        else if (!strcmp(f, "--rotations")) c.max_rotations = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(f, "--expiration-seconds")) c.expiration_seconds = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(f, "--wait") && duration(v) > 0) c.bootstrap_wait_seconds = duration(v);
        else if (!strcmp(f, "--rotation-wait") && duration(v) > 0) c.rotation_wait_seconds = duration(v);
        else if (!strcmp(f, "--ca-refresh-interval") && duration(v) >= 0)
            c.ca_refresh_seconds = duration(v) > 0 ? duration(v) : -1; /* 0 in the ABI: the default */
        else if (!strcmp(f, "--dns") && ndns < MAX_LIST) dns[ndns++] = str_of(v);
        else if (!strcmp(f, "--ip") && nips < MAX_LIST) ips[nips++] = str_of(v);
        else if (!strcmp(f, "--discovery-token-ca-cert-hash") && npins < MAX_LIST) pins[npins++] = str_of(v);
        else return usage(), 2;
        if (takes) i++;
    }
    if (!kubeconfig) return usage(), 2;
    /* --key: where every client key is made. A token's URI (its PIN from pin-source=, never from
       the command line); the agent checks it. */
    if (key && strncmp(key, "tpm:", 4) == 0)
        return fprintf(stderr, "kubeboot-agent: --key %s: the C agent has no TPM route: libcurl 7.88 has no "
                               "provider key type (PROV is curl 8.12) and tpm2-pkcs11 is another key model than the "
                               "TSS2 blobs the agents share (README); use the Rust or Go agent\n",
                       key), 1;
    if (key && strncmp(key, "pkcs11:", 7) != 0)
        return fprintf(stderr, "kubeboot-agent: --key %s: the agent makes its own keys; give a token "
                               "(pkcs11:token=T?module-path=M&pin-source=F) or no --key\n", key), 1;
    if (key) c.key_device = key, c.key_device_len = strlen(key);
    if (metrics_textfile &&
        kubeboot_metrics_check_textfile(metrics_textfile, strlen(metrics_textfile)) != KUBEBOOT_RESULT_OK)
        return fprintf(stderr, "kubeboot-agent: --metrics-textfile %s: node_exporter reads only *.prom files\n",
                       metrics_textfile), 1;
    int listening = metrics_addr ? metrics_listen(metrics_addr) : 0;
    if (listening == -1)
        return fprintf(stderr, "kubeboot-agent: --metrics-bind-address %s: want IP:PORT\n", metrics_addr), 1;
    if (listening != 0) return 1;
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) return perror("getcwd"), 1;
    if (once) c.mode = KUBEBOOT_MODE_ONCE;
    c.front_end = "c", c.front_end_len = 1;
    c.working_dir = cwd, c.working_dir_len = strlen(cwd);
    c.kubeconfig = kubeconfig, c.kubeconfig_len = strlen(kubeconfig);
    c.cert_dir = cert_dir, c.cert_dir_len = strlen(cert_dir);
    if (node) c.node_name = node, c.node_name_len = strlen(node);
    if (bootstrap) c.bootstrap_kubeconfig = bootstrap, c.bootstrap_kubeconfig_len = strlen(bootstrap);
    if (ca_bundle) c.ca_bundle = ca_bundle, c.ca_bundle_len = strlen(ca_bundle);
    c.serving_dns = dns, c.serving_dns_count = ndns;
    c.serving_ips = ips, c.serving_ip_count = nips;
    c.utc_offset = (int32_t)utc_offset();
    FILE *r = fopen("/dev/urandom", "rb");
    if (!r || fread(&c.seed, sizeof c.seed, 1, r) != 1) return perror("/dev/urandom"), 1;
    fclose(r);
    kubeboot_token *tok = NULL;
    if (endpoint) {
        if (!token || kubeboot_token_parse(token, strlen(token), &tok) != KUBEBOOT_RESULT_OK)
            return fprintf(stderr, "kubeboot-agent: --discovery-token: not a bootstrap token\n"), 1;
        c.discovery_server = endpoint, c.discovery_server_len = strlen(endpoint);
        c.discovery_token = tok;
        c.discovery_pins = pins, c.discovery_pin_count = npins;
    }
    kubeboot_agent *agent = NULL;
    kubeboot_result rc = kubeboot_agent_new(&c, &agent);
    kubeboot_token_free(tok);
    if (rc != KUBEBOOT_RESULT_OK) {
        char name[64], msg[256];
        size_t nn = 0, mn = 0;
        kubeboot_result_name(rc, name, sizeof name, &nn);
        kubeboot_result_message(rc, msg, sizeof msg, &mn);
        fprintf(stderr, "kubeboot-agent: %.*s: %.*s\n", (int)nn, name, (int)mn, msg);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_hangup;
    sigaction(SIGHUP, &sa, NULL);
    int status = 1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK) {
        CURL *curl = curl_easy_init();
        if (curl) status = drive(agent, curl);
        curl_easy_cleanup(curl);
        curl_global_cleanup();
    }
    kubeboot_agent_free(agent);
    return status;
}
