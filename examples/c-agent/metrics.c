/*
 * The runtime's metrics output: the kubelet's certificate metrics (libkubeboot's text, rendered
 * from the agent's last snapshot when read) at http://IP:PORT/metrics, served by a thread, and in
 * a node_exporter textfile.
 */
#define _GNU_SOURCE
#include "metrics.h"

#include "flag_values.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static kubeboot_metrics snapshot; /* the agent's, as of its last step */
static const char *textfile;
static int64_t written_at;
static int listen_fd = -1;
static volatile sig_atomic_t stopping;
static pthread_t server;

void metrics_update(const kubeboot_agent *agent) {
    kubeboot_metrics m;
    if (kubeboot_agent_metrics(agent, &m) != KUBEBOOT_RESULT_OK) return;
    pthread_mutex_lock(&lock);
    snapshot = m;
    pthread_mutex_unlock(&lock);
}

/* The text at this moment (the TTLs are computed now). */
static size_t render(char *buf, size_t cap) {
    kubeboot_metrics m;
    pthread_mutex_lock(&lock);
    m = snapshot;
    pthread_mutex_unlock(&lock);
    size_t n = 0;
    return kubeboot_metrics_text(&m, (int64_t)time(NULL), buf, cap, &n) == KUBEBOOT_RESULT_OK ? n : 0;
}

bool metrics_textfile_due(int64_t now) {
    return textfile && now - written_at >= KUBEBOOT_METRICS_TEXTFILE_REFRESH_SECS;
}

/* Atomically (a temporary file beside it, renamed into place), mode 0644: the collector reads
   whole files, often as another user. A failure is reported, never fatal. */
void metrics_write_textfile(int64_t now) {
    if (!textfile) return;
    written_at = now; /* tried: a failing write is retried at the next refresh */
    char body[KUBEBOOT_METRICS_TEXT_CAP], tmp[4200];
    size_t n = render(body, sizeof body);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", textfile, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && fchmod(fd, 0644) == 0 && write(fd, body, n) == (ssize_t)n && fsync(fd) == 0;
    if (fd >= 0) ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, textfile) == 0) return;
    perror(textfile);
    unlink(tmp);
}

static size_t put(char *dst, size_t cap, const char *s) {
    size_t n = strlen(s) < cap ? strlen(s) : cap;
    memcpy(dst, s, n);
    return n;
}

/* One HTTP/1.1 exchange per connection, then close: GET /metrics, GET /healthz; else 404/405. */
static void answer(int fd) {
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
        ctype = "text/plain; version=0.0.4; charset=utf-8", blen = render(body, sizeof body);
    else if (tlen == 8 && !strncmp(target, "/healthz", 8)) blen = put(body, sizeof body, "ok");
    else status = "404 Not Found", blen = put(body, sizeof body, "not found\n");
    char hdr[256];
    int hn = snprintf(hdr, sizeof hdr, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n\r\n", status, ctype, blen);
    if (send(fd, hdr, (size_t)hn, MSG_NOSIGNAL) == hn && !head) (void)send(fd, body, blen, MSG_NOSIGNAL);
    close(fd);
}

/* Until metrics_stop shuts the socket down (accept then fails). Signals are the loop's. */
static void *serve(void *arg) {
    sigset_t all;
    (void)arg;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    while (!stopping) {
        int fd = accept(listen_fd, NULL, NULL);
        if (fd >= 0) answer(fd);
        else if (!stopping && errno != EINTR) usleep(10000); /* (out of descriptors: try again) */
    }
    return NULL;
}

bool metrics_start(const char *bind_address, const char *file, const char *program) {
    if (file && kubeboot_metrics_check_textfile(file, strlen(file)) != KUBEBOOT_RESULT_OK)
        return fprintf(stderr, "%s: --metrics-textfile %s: node_exporter reads only *.prom files\n", program, file), false;
    textfile = file;
    written_at = 0;
    if (!bind_address) return true;
    struct sockaddr_storage ss;
    socklen_t len = 0;
    kubeboot_result rc = value_address(bind_address, &ss, &len);
    if (rc != KUBEBOOT_RESULT_OK) return value_refused("--metrics-bind-address", bind_address, rc), false;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 16) != 0) {
        perror(bind_address);
        if (fd >= 0) close(fd);
        return false;
    }
    listen_fd = fd;
    stopping = 0;
    if (pthread_create(&server, NULL, serve, NULL) != 0) {
        perror("pthread_create");
        close(fd);
        listen_fd = -1;
        return false;
    }
    return true;
}

void metrics_stop(void) {
    if (listen_fd < 0) return;
    stopping = 1;
    shutdown(listen_fd, SHUT_RDWR); /* wakes the accept */
    pthread_join(server, NULL);
    close(listen_fd);
    listen_fd = -1;
}
