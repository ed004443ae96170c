/*
 * kubeboot-agent: a node agent in C that does kubelet-style TLS bootstrapping and client
 * certificate rotation with libkubeboot (protocol, validation, files) and libcurl (HTTPS).
 *
 *   kubeboot-agent --bootstrap-kubeconfig F --kubeconfig F --cert-dir D --node-name N
 *                  [--ca-bundle F] [--once] [--rotate-now]
 *
 * Flow (kubelet path B, spec §3.3):
 *  1. If --kubeconfig exists and its client certificate is valid (kubeboot_verify_issued against
 *     the CA bundle, our key, the node name, now), skip to rotation scheduling.
 *  2. Otherwise read the bootstrap kubeconfig (server, CA, token), take the key from the cert dir
 *     (current pair's key or the key cache), and drive the engine: create node-csr-<digest>, watch
 *     it until approved and issued, validate the certificate.
 *  3. Store the pair (<cert-dir>/kubelet-client-<ts>.pem, -current.pem symlink), write the node
 *     kubeconfig atomically (mode 0600), delete the key cache.
 *  4. Unless --once: sleep until the rotation deadline, rotate (new key, generateName, client
 *     certificate auth), store, repeat. The kubeconfig is never rewritten.
 *
 * --ca-bundle: the CA that issued node client certificates (default: the kubeconfig's CA).
 * --rotate-now: rotate once right away (tests the rotation path; with --once, then exit).
 *
 * Output: one `agent=c step=...` line per protocol step on stdout; on failure
 * `agent=c error=<result name> detail="..."` and exit status 1 (no files written besides the
 * bootstrap key cache, as the kubelet).
 */
#define _GNU_SOURCE
#include <kubeboot.h>

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILE (1u << 20)     /* largest kubeconfig / PEM file we read */
#define MAX_BODY (1u << 20)     /* largest non-streamed response body we keep */
#define MAX_PATH_LEN 4096
#define CONNECT_TIMEOUT_S 10L
#define REQUEST_TIMEOUT_S 30L
#define WATCH_MARGIN_S 30L
#define ROTATION_RETRY_S 32

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Small helpers */

static void fail_msg(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "kubeboot-agent: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const char *rc_name(kubeboot_result rc) {
    static char name[96];
    size_t n = 0;
    if (kubeboot_result_name(rc, name, sizeof name - 1, &n) != KUBEBOOT_RESULT_OK) n = 0;
    name[n] = '\0';
    return name;
}

/* Print `s` (len bytes) inside double quotes on stdout: quotes and control bytes become '. */
static void print_quoted(const char *s, size_t len) {
    putchar('"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        putchar(c == '"' || c == '\\' || c < 0x20 || c == 0x7f ? '\'' : c);
    }
    putchar('"');
}

static void print_error(kubeboot_result rc, const char *detail, size_t detail_len) {
    printf("agent=c error=%s detail=", rc_name(rc));
    print_quoted(detail, detail_len);
    putchar('\n');
    fflush(stdout);
}

static const char *fmt_time(int64_t t, char *buf, size_t len) {
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) snprintf(buf, len, "%lld", (long long)t);
    return buf;
}

static int64_t now_unix(void) { return (int64_t)time(NULL); }

/* Sleep until `until` (unix seconds) or a signal. */
static void sleep_until(int64_t until) {
    while (!stop_requested) {
        int64_t now = now_unix();
        if (now >= until) return;
        int64_t d = until - now;
        struct timespec ts = {d > 1 ? 1 : (time_t)d, 0};
        nanosleep(&ts, NULL);
    }
}

static int random_bytes(void *buf, size_t len) {
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f) return -1;
    size_t n = fread(buf, 1, len, f);
    fclose(f);
    return n == len ? 0 : -1;
}

/* Read a whole file (at most MAX_FILE bytes) into a NUL-terminated malloc'ed buffer. */
static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = malloc(MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, MAX_FILE + 1, f) : 0;
    int err = ferror(f);
    fclose(f);
    if (!buf || err || n > MAX_FILE) {
        free(buf);
        errno = err ? EIO : EFBIG;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static void wipe_free(void *p, size_t len) {
    if (!p) return;
    volatile unsigned char *v = p;
    for (size_t i = 0; i < len; i++) v[i] = 0;
    free(p);
}

/* Copy (s, len) into a new NUL-terminated string; NULL if it contains NUL or is too long. */
static char *dup_n(const void *s, size_t len) {
    if (len > MAX_PATH_LEN * 4 || (len && memchr(s, '\0', len))) return NULL;
    char *d = malloc(len + 1);
    if (!d) return NULL;
    if (len) memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

/* The directory part of `path` ("." when none), malloc'ed. */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return dup_n(".", 1);
    if (slash == path) return dup_n("/", 1);
    return dup_n(path, (size_t)(slash - path));
}

/* `p` made absolute: relative paths are joined to `base_dir` (the kubeconfig's directory, spec
   §9), then to the working directory; `..` is resolved by realpath when the file exists. */
static char *abs_path(const char *base_dir, const char *p) {
    char joined[MAX_PATH_LEN];
    if (p[0] == '/') {
        if (snprintf(joined, sizeof joined, "%s", p) >= (int)sizeof joined) return NULL;
    } else if (base_dir[0] == '/') {
        if (snprintf(joined, sizeof joined, "%s/%s", base_dir, p) >= (int)sizeof joined) return NULL;
    } else {
        char cwd[MAX_PATH_LEN];
        if (!getcwd(cwd, sizeof cwd)) return NULL;
        if (snprintf(joined, sizeof joined, "%s/%s/%s", cwd, base_dir, p) >= (int)sizeof joined) return NULL;
    }
    char *real = realpath(joined, NULL);
    return real ? real : dup_n(joined, strlen(joined));
}

/* Write `data` to `path` atomically: temp file in the same dir (mode), fsync, rename, fsync dir. */
static int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode) {
    char tmp[MAX_PATH_LEN];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp) return -1;
    int fd = mkstemp(tmp);
    if (fd < 0) return -1;
    const unsigned char *p = data;
    size_t left = len;
    int ok = fchmod(fd, mode) == 0;
    while (ok && left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            ok = 0;
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    ok = ok && fsync(fd) == 0;
    ok = (close(fd) == 0) && ok;
    ok = ok && rename(tmp, path) == 0;
    if (!ok) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    char *dir = dir_of(path);
    if (dir) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
        free(dir);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Connection settings from a kubeconfig */

struct cluster {
    char *server;           /* https://host:port (no trailing slash) */
    unsigned char *ca_pem;  /* the CA bundle PEM for TLS (NULL: system roots) */
    size_t ca_pem_len;
    char *ca_file;          /* absolute CA file path, if the kubeconfig named one */
    bool insecure;
};

static void cluster_free(struct cluster *c) {
    free(c->server);
    free(c->ca_pem);
    free(c->ca_file);
    memset(c, 0, sizeof *c);
}

/* Read a kubeconfig file; fills `cl` (server, CA) and returns the handle for credentials. */
static kubeboot_kubeconfig *load_kubeconfig(const char *path, struct cluster *cl, kubeboot_kubeconfig_view *v,
                                            char **dir_out) {
    size_t len = 0;
    unsigned char *bytes = read_file(path, &len);
    if (!bytes) {
        fail_msg("cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    kubeboot_kubeconfig *kc = NULL;
    kubeboot_result rc = kubeboot_kubeconfig_load(bytes, len, &kc);
    wipe_free(bytes, len);
    if (rc != KUBEBOOT_RESULT_OK) {
        fail_msg("%s: not a usable kubeconfig (%s)", path, rc_name(rc));
        return NULL;
    }
    char *dir = dir_of(path);
    if (!dir || kubeboot_kubeconfig_get(kc, v) != KUBEBOOT_RESULT_OK) goto fail;
    memset(cl, 0, sizeof *cl);
    size_t sl = v->server.len;
    while (sl > 0 && v->server.data[sl - 1] == '/') sl--;
    cl->server = dup_n(v->server.data, sl);
    if (!cl->server || strncmp(cl->server, "https://", 8) != 0) {
        fail_msg("%s: server must be an https:// URL", path);
        goto fail;
    }
    cl->insecure = v->insecure_skip_tls_verify;
    if (v->ca_source == KUBEBOOT_SOURCE_DATA) {
        cl->ca_pem = malloc(v->ca_data.len ? v->ca_data.len : 1);
        if (!cl->ca_pem) goto fail;
        memcpy(cl->ca_pem, v->ca_data.data, v->ca_data.len);
        cl->ca_pem_len = v->ca_data.len;
    } else if (v->ca_source == KUBEBOOT_SOURCE_FILE) {
        char *f = dup_n(v->ca_file.data, v->ca_file.len);
        cl->ca_file = f ? abs_path(dir, f) : NULL;
        free(f);
        if (!cl->ca_file || !(cl->ca_pem = read_file(cl->ca_file, &cl->ca_pem_len))) {
            fail_msg("%s: cannot read certificate-authority %s", path, cl->ca_file ? cl->ca_file : "?");
            goto fail;
        }
    }
    *dir_out = dir;
    return kc;
fail:
    free(dir);
    cluster_free(cl);
    kubeboot_kubeconfig_free(kc);
    return NULL;
}

/* A credential of the view (data or file, resolved against `dir`), malloc'ed. */
static unsigned char *load_cred(uint32_t source, kubeboot_bytes data, kubeboot_bytes file, const char *dir,
                                size_t *len) {
    if (source == KUBEBOOT_SOURCE_DATA) {
        unsigned char *b = malloc(data.len + 1);
        if (!b) return NULL;
        memcpy(b, data.data, data.len);
        b[data.len] = 0;
        *len = data.len;
        return b;
    }
    if (source != KUBEBOOT_SOURCE_FILE) return NULL;
    char *f = dup_n(file.data, file.len);
    char *p = f ? abs_path(dir, f) : NULL;
    unsigned char *b = p ? read_file(p, len) : NULL;
    free(f);
    free(p);
    return b;
}

/* ------------------------------------------------------------------------------------------ */
/* HTTP transport over libcurl */

struct agent {
    const char *node;
    const char *cert_dir;
    const char *kubeconfig_path;
    unsigned char *verify_ca; /* CA bundle the issued certificate must chain to */
    size_t verify_ca_len;
    kubeboot_store *store;
    CURL *curl;
};

struct xfer {
    kubeboot_engine *engine;
    CURL *curl;
    bool watch;
    bool streaming;  /* watch with 200: bytes go to the engine */
    bool engine_stopped; /* the engine refused more stream data (done or failed) */
    unsigned char *body;
    size_t body_len;
    bool overflow;
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
        kubeboot_result rc = kubeboot_engine_on_stream_data(x->engine, now_unix(), (const uint8_t *)ptr, n);
        if (rc != KUBEBOOT_RESULT_OK || !kubeboot_engine_request_outstanding(x->engine)) {
            /* The certificate arrived, the CSR failed or the watch must restart: stop reading
               (the apiserver would keep the stream open until its timeout). */
            x->engine_stopped = true;
            return 0;
        }
        return n;
    }
    if (n > MAX_BODY - x->body_len) {
        x->overflow = true;
        return 0;
    }
    if (!x->body) {
        x->body = malloc(MAX_BODY);
        if (!x->body) return 0;
    }
    memcpy(x->body + x->body_len, ptr, n);
    x->body_len += n;
    return n;
}

static const char *kind_name(uint32_t k) {
    switch (k) {
    case KUBEBOOT_REQUEST_CREATE: return "create";
    case KUBEBOOT_REQUEST_GET: return "get";
    case KUBEBOOT_REQUEST_WATCH: return "watch";
    default: return "?";
    }
}

/* Send the action's request and feed the outcome to the engine. `client_pem`: path of the
   combined cert+key PEM to present (rotation), or NULL. */
static void http_do(struct agent *ag, const struct cluster *cl, kubeboot_engine *e, const kubeboot_action *a,
                    const char *client_pem) {
    CURL *h = ag->curl;
    curl_easy_reset(h);
    char *path = dup_n(a->path, a->path_len);
    size_t url_len = strlen(cl->server) + a->path_len + 1;
    char *url = path ? malloc(url_len) : NULL;
    char *auth = NULL;
    struct curl_slist *hdrs = NULL, *tmp;
    struct xfer x = {e, h, a->request_kind == KUBEBOOT_REQUEST_WATCH, false, false, NULL, 0, false};
    bool ok = url != NULL;
    if (ok) snprintf(url, url_len, "%s%s", cl->server, path);
    if (ok && a->authorization) {
        const char prefix[] = "Authorization: ";
        auth = malloc(sizeof prefix + a->authorization_len);
        ok = auth != NULL && !memchr(a->authorization, '\n', a->authorization_len) &&
             !memchr(a->authorization, '\r', a->authorization_len);
        if (ok) {
            memcpy(auth, prefix, sizeof prefix - 1);
            memcpy(auth + sizeof prefix - 1, a->authorization, a->authorization_len);
            auth[sizeof prefix - 1 + a->authorization_len] = '\0';
        }
    }
    char accept[64], ctype[64];
    snprintf(accept, sizeof accept, "Accept: %s", a->accept ? a->accept : "application/json");
    if (ok && (tmp = curl_slist_append(hdrs, accept))) hdrs = tmp; else ok = false;
    if (ok && a->content_type) {
        snprintf(ctype, sizeof ctype, "Content-Type: %s", a->content_type);
        if ((tmp = curl_slist_append(hdrs, ctype))) hdrs = tmp; else ok = false;
    }
    if (ok && auth) {
        if ((tmp = curl_slist_append(hdrs, auth))) hdrs = tmp; else ok = false;
    }
    if (ok && (tmp = curl_slist_append(hdrs, "Expect:"))) hdrs = tmp; else ok = false;
    if (!ok) {
        fail_msg("out of memory building the request");
        kubeboot_engine_on_transport_error(e, now_unix());
        goto out;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "kubeboot-agent-c/0.1");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_TIMEOUT,
                     x.watch ? (long)KUBEBOOT_WATCH_TIMEOUT_SECS + WATCH_MARGIN_S : REQUEST_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, cl->insecure ? 0L : 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, cl->insecure ? 0L : 2L);
    if (cl->ca_pem) {
        struct curl_blob blob = {cl->ca_pem, cl->ca_pem_len, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    }
    if (client_pem) {
        curl_easy_setopt(h, CURLOPT_SSLCERT, client_pem);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLKEY, client_pem);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (a->method && strcmp(a->method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, a->body ? (const char *)a->body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)a->body_len);
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);

    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    int64_t now = now_unix();
    if (x.streaming) {
        /* A 200 watch: the stream ended (server timeout, closed, or we stopped it). */
        if (!x.engine_stopped) kubeboot_engine_on_stream_end(e, now);
    } else if (cc == CURLE_OK && status > 0 && status < 1000 && !x.overflow) {
        printf("agent=c step=response request=%s status=%ld\n", kind_name(a->request_kind), status);
        kubeboot_result rc = kubeboot_engine_on_response(e, now, (uint16_t)status, x.body, x.body_len);
        (void)rc; /* a failure is reported by the next poll */
    } else {
        printf("agent=c step=transport-error request=%s curl=%d detail=", kind_name(a->request_kind), (int)cc);
        const char *msg = x.overflow ? "response too large" : curl_easy_strerror(cc);
        print_quoted(msg, strlen(msg));
        putchar('\n');
        kubeboot_engine_on_transport_error(e, now);
    }
    fflush(stdout);
out:
    curl_slist_free_all(hdrs);
    wipe_free(auth, auth ? strlen(auth) : 0);
    free(url);
    free(path);
    free(x.body);
}

/* ------------------------------------------------------------------------------------------ */
/* Driving the engine */

struct issued {
    unsigned char *cert_pem;
    size_t cert_pem_len;
    int64_t not_before, not_after, rotation_deadline;
};

/* Run the engine to DONE (0, fills `out`) or FAILED (1, error printed). */
static int drive(struct agent *ag, const struct cluster *cl, kubeboot_engine *e, const char *client_pem,
                 struct issued *out) {
    char name[300];
    size_t n = 0;
    bool announced_wait = false;
    for (;;) {
        if (stop_requested) {
            print_error(KUBEBOOT_RESULT_TIMEOUT, "interrupted", 11);
            return 1;
        }
        kubeboot_action a;
        int64_t now = now_unix();
        kubeboot_result rc = kubeboot_engine_poll(e, now, &a);
        if (rc != KUBEBOOT_RESULT_OK) {
            print_error(rc, "engine poll failed", 18);
            return 1;
        }
        if (kubeboot_engine_csr_name(e, name, sizeof name - 1, &n) != KUBEBOOT_RESULT_OK) n = 0;
        name[n] = '\0';
        switch (a.kind) {
        case KUBEBOOT_ACTION_SEND:
            if (a.request_kind == KUBEBOOT_REQUEST_CREATE) {
                printf("agent=c step=create-csr name=%s\n", n ? name : "(generateName:csr-)");
            } else if (a.request_kind == KUBEBOOT_REQUEST_WATCH && !announced_wait) {
                printf("agent=c step=wait-approval csr=%s hint=\"kubectl certificate approve %s\"\n", name, name);
                announced_wait = true;
            } else {
                printf("agent=c step=%s csr=%s\n", a.request_kind == KUBEBOOT_REQUEST_WATCH ? "rewatch" : "get-csr",
                       name);
            }
            fflush(stdout);
            http_do(ag, cl, e, &a, client_pem);
            break;
        case KUBEBOOT_ACTION_AWAIT:
            /* We are synchronous: a request is never outstanding here. Count it as lost. */
            kubeboot_engine_on_transport_error(e, now);
            break;
        case KUBEBOOT_ACTION_WAIT: {
            char t[40];
            printf("agent=c step=backoff until=%s\n", fmt_time(a.until, t, sizeof t));
            fflush(stdout);
            sleep_until(a.until);
            break;
        }
        case KUBEBOOT_ACTION_DONE: {
            char nb[40], na[40], rd[40];
            printf("agent=c step=issued csr=%.*s not_before=%s not_after=%s rotation_deadline=%s\n", (int)a.csr_name_len,
                   a.csr_name, fmt_time(a.not_before, nb, sizeof nb), fmt_time(a.not_after, na, sizeof na),
                   fmt_time(a.rotation_deadline, rd, sizeof rd));
            fflush(stdout);
            out->cert_pem = malloc(a.cert_pem_len + 1);
            if (!out->cert_pem) return 1;
            memcpy(out->cert_pem, a.cert_pem, a.cert_pem_len);
            out->cert_pem_len = a.cert_pem_len;
            out->not_before = a.not_before;
            out->not_after = a.not_after;
            out->rotation_deadline = a.rotation_deadline;
            return 0;
        }
        case KUBEBOOT_ACTION_FAILED:
        default: {
            char msg[700];
            size_t ml = 0;
            if (kubeboot_engine_failure_message(e, msg, sizeof msg, &ml) != KUBEBOOT_RESULT_OK) ml = 0;
            print_error(a.result, msg, ml);
            return 1;
        }
        }
    }
}

/* Store the issued pair (key = `key`) under the local-time timestamp. */
static int store_pair(struct agent *ag, const struct issued *is, const kubeboot_key *key) {
    char kp[KUBEBOOT_KEY_SEC1_PEM_LEN];
    size_t kn = 0;
    if (kubeboot_key_to_pem(key, kp, sizeof kp, &kn) != KUBEBOOT_RESULT_OK) return -1;
    int64_t now = now_unix();
    time_t tt = (time_t)now;
    struct tm tm;
    long off = localtime_r(&tt, &tm) ? tm.tm_gmtoff : 0;
    kubeboot_result rc =
        kubeboot_store_update(ag->store, now, (int32_t)off, is->cert_pem, is->cert_pem_len, (const uint8_t *)kp, kn);
    volatile char *v = kp;
    for (size_t i = 0; i < sizeof kp; i++) v[i] = 0;
    if (rc != KUBEBOOT_RESULT_OK) {
        char msg[600];
        size_t ml = 0;
        if (kubeboot_store_last_error(ag->store, msg, sizeof msg, &ml) != KUBEBOOT_RESULT_OK) ml = 0;
        print_error(rc, msg, ml);
        return -1;
    }
    char p[MAX_PATH_LEN];
    size_t pl = 0;
    if (kubeboot_store_current_path(ag->store, p, sizeof p - 1, &pl) != KUBEBOOT_RESULT_OK) pl = 0;
    p[pl] = '\0';
    printf("agent=c step=stored path=%s\n", p);
    fflush(stdout);
    return 0;
}

static char *current_pem_path(struct agent *ag) {
    char p[MAX_PATH_LEN];
    size_t pl = 0;
    if (kubeboot_store_current_path(ag->store, p, sizeof p - 1, &pl) != KUBEBOOT_RESULT_OK) return NULL;
    return dup_n(p, pl);
}

/* ------------------------------------------------------------------------------------------ */
/* The flows */

/* Is the node kubeconfig usable? Returns 1 (and fills cl, not_before/after) when its client
   certificate validates now. */
static int existing_valid(struct agent *ag, struct cluster *cl, int64_t *nb, int64_t *na, bool have_ca_bundle) {
    if (access(ag->kubeconfig_path, F_OK) != 0) return 0;
    kubeboot_kubeconfig_view v;
    char *dir = NULL;
    kubeboot_kubeconfig *kc = load_kubeconfig(ag->kubeconfig_path, cl, &v, &dir);
    if (!kc) return 0;
    int valid = 0;
    size_t cn = 0, kn = 0;
    unsigned char *cert = load_cred(v.client_cert_source, v.client_cert_data, v.client_cert_file, dir, &cn);
    unsigned char *keyp = load_cred(v.client_key_source, v.client_key_data, v.client_key_file, dir, &kn);
    kubeboot_key *key = NULL;
    const unsigned char *ca = have_ca_bundle ? ag->verify_ca : cl->ca_pem;
    size_t ca_len = have_ca_bundle ? ag->verify_ca_len : cl->ca_pem_len;
    kubeboot_result rc = KUBEBOOT_RESULT_STORE_NO_CERT_KEY_FILES;
    if (cert && keyp && ca && (rc = kubeboot_key_from_pem(keyp, kn, &key)) == KUBEBOOT_RESULT_OK) {
        uint8_t spki[KUBEBOOT_KEY_SPKI_LEN];
        size_t sn = 0;
        kubeboot_verified ver;
        rc = kubeboot_key_public_spki_der(key, spki, sizeof spki, &sn);
        if (rc == KUBEBOOT_RESULT_OK)
            rc = kubeboot_verify_issued(cert, cn, ca, ca_len, ag->node, strlen(ag->node), spki, sn,
                                        KUBEBOOT_PROFILE_CLIENT, NULL, 0, NULL, 0, now_unix(), &ver);
        if (rc == KUBEBOOT_RESULT_OK) {
            char t[40];
            valid = 1;
            *nb = ver.not_before;
            *na = ver.not_after;
            printf("agent=c step=kubeconfig-valid path=%s not_after=%s\n", ag->kubeconfig_path,
                   fmt_time(ver.not_after, t, sizeof t));
        }
    }
    if (!valid) printf("agent=c step=kubeconfig-invalid path=%s reason=%s\n", ag->kubeconfig_path, rc_name(rc));
    fflush(stdout);
    kubeboot_key_free(key);
    free(cert);
    wipe_free(keyp, kn);
    kubeboot_kubeconfig_free(kc);
    free(dir);
    if (!valid) cluster_free(cl);
    return valid;
}

static int write_node_kubeconfig(struct agent *ag, const struct cluster *cl) {
    char *certdir = realpath(ag->cert_dir, NULL);
    if (!certdir) return -1;
    size_t need = 0;
    const char *caf = cl->ca_file;
    int rc = -1;
    char *buf = NULL;
    kubeboot_result r = kubeboot_node_kubeconfig_write(
        cl->server, strlen(cl->server), caf, caf ? strlen(caf) : 0, caf ? NULL : cl->ca_pem, caf ? 0 : cl->ca_pem_len,
        cl->insecure, certdir, strlen(certdir), NULL, 0, &need);
    if (r == KUBEBOOT_RESULT_INSUFFICIENT_SIZE && (buf = malloc(need))) {
        size_t n = 0;
        r = kubeboot_node_kubeconfig_write(cl->server, strlen(cl->server), caf, caf ? strlen(caf) : 0,
                                           caf ? NULL : cl->ca_pem, caf ? 0 : cl->ca_pem_len, cl->insecure, certdir,
                                           strlen(certdir), buf, need, &n);
        if (r == KUBEBOOT_RESULT_OK && write_file_atomic(ag->kubeconfig_path, buf, n, 0600) == 0) {
            printf("agent=c step=kubeconfig-written path=%s\n", ag->kubeconfig_path);
            rc = 0;
        } else if (r == KUBEBOOT_RESULT_OK) {
            fail_msg("cannot write %s: %s", ag->kubeconfig_path, strerror(errno));
        }
    }
    if (rc != 0 && r != KUBEBOOT_RESULT_OK) print_error(r, "writing the node kubeconfig", 27);
    fflush(stdout);
    free(buf);
    free(certdir);
    return rc;
}

/* Bootstrap with the token of the bootstrap kubeconfig. 0 ok; fills `cl` with its cluster. */
static int bootstrap(struct agent *ag, const char *bootstrap_path, struct cluster *cl, struct issued *is) {
    kubeboot_kubeconfig_view v;
    char *dir = NULL;
    kubeboot_kubeconfig *kc = load_kubeconfig(bootstrap_path, cl, &v, &dir);
    if (!kc) return 1;
    int result = 1;
    kubeboot_token *tok = NULL;
    kubeboot_key *key = NULL;
    kubeboot_engine *e = NULL;
    unsigned char *tokfile = NULL;
    size_t tokfile_len = 0;
    const uint8_t *tp = v.token.data;
    size_t tl = v.token.len;
    if (!tp && v.token_file.data) {
        char *f = dup_n(v.token_file.data, v.token_file.len);
        char *p = f ? abs_path(dir, f) : NULL;
        tokfile = p ? read_file(p, &tokfile_len) : NULL;
        free(f);
        free(p);
        tp = tokfile;
        tl = tokfile_len;
        while (tl > 0 && (tp[tl - 1] == '\n' || tp[tl - 1] == '\r')) tl--;
    }
    kubeboot_result rc = tp ? kubeboot_token_parse((const char *)tp, tl, &tok) : KUBEBOOT_RESULT_INVALID_TOKEN;
    if (rc != KUBEBOOT_RESULT_OK) {
        print_error(rc, "the bootstrap kubeconfig has no valid bootstrap token", 53);
        goto out;
    }
    if (!cl->ca_pem && !ag->verify_ca) {
        print_error(KUBEBOOT_RESULT_INVALID_PARAMETER, "no CA to validate the issued certificate (--ca-bundle)", 54);
        goto out;
    }
    rc = kubeboot_store_bootstrap_key(ag->store, &key);
    if (rc != KUBEBOOT_RESULT_OK) {
        char msg[600];
        size_t ml = 0;
        if (kubeboot_store_last_error(ag->store, msg, sizeof msg, &ml) != KUBEBOOT_RESULT_OK) ml = 0;
        print_error(rc, msg, ml);
        goto out;
    }
    printf("agent=c step=bootstrap server=%s node=%s\n", cl->server, ag->node);
    fflush(stdout);
    uint64_t seed = 0;
    (void)random_bytes(&seed, sizeof seed);
    kubeboot_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.node_name = ag->node;
    cfg.node_name_len = strlen(ag->node);
    cfg.profile = KUBEBOOT_PROFILE_CLIENT;
    cfg.auth = KUBEBOOT_AUTH_TOKEN;
    cfg.token = tok;
    cfg.naming = KUBEBOOT_NAMING_NODE_CSR;
    cfg.ca_pem = ag->verify_ca ? ag->verify_ca : cl->ca_pem;
    cfg.ca_pem_len = ag->verify_ca ? ag->verify_ca_len : cl->ca_pem_len;
    cfg.watch = true;
    rc = kubeboot_engine_new(&cfg, key, now_unix(), seed, &e);
    if (rc != KUBEBOOT_RESULT_OK) {
        print_error(rc, "cannot start the engine", 23);
        goto out;
    }
    if (drive(ag, cl, e, NULL, is) != 0) goto out;
    if (store_pair(ag, is, key) != 0) goto out;
    if (write_node_kubeconfig(ag, cl) != 0) goto out;
    rc = kubeboot_store_remove_key_cache(ag->store);
    if (rc != KUBEBOOT_RESULT_OK) fail_msg("warning: could not remove the key cache (%s)", rc_name(rc));
    result = 0;
out:
    kubeboot_engine_free(e);
    kubeboot_key_free(key);
    kubeboot_token_free(tok);
    wipe_free(tokfile, tokfile_len);
    kubeboot_kubeconfig_free(kc);
    free(dir);
    return result;
}

/* One rotation: new key, generateName, client certificate auth. 0 ok (is filled). */
static int rotate(struct agent *ag, const struct cluster *cl, struct issued *is) {
    kubeboot_key *key = NULL;
    kubeboot_engine *e = NULL;
    char *pem_path = current_pem_path(ag);
    int result = 1;
    kubeboot_result rc = kubeboot_key_generate(&key);
    if (rc != KUBEBOOT_RESULT_OK || !pem_path) {
        print_error(rc, "cannot generate a key", 21);
        goto out;
    }
    printf("agent=c step=rotate server=%s client_cert=%s\n", cl->server, pem_path);
    fflush(stdout);
    uint64_t seed = 0;
    (void)random_bytes(&seed, sizeof seed);
    kubeboot_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.node_name = ag->node;
    cfg.node_name_len = strlen(ag->node);
    cfg.profile = KUBEBOOT_PROFILE_CLIENT;
    cfg.auth = KUBEBOOT_AUTH_CLIENT_CERTIFICATE;
    cfg.naming = KUBEBOOT_NAMING_GENERATE;
    cfg.ca_pem = ag->verify_ca ? ag->verify_ca : cl->ca_pem;
    cfg.ca_pem_len = ag->verify_ca ? ag->verify_ca_len : cl->ca_pem_len;
    cfg.watch = true;
    rc = kubeboot_engine_new(&cfg, key, now_unix(), seed, &e);
    if (rc != KUBEBOOT_RESULT_OK) {
        print_error(rc, "cannot start the engine", 23);
        goto out;
    }
    if (drive(ag, cl, e, pem_path, is) != 0) goto out;
    if (store_pair(ag, is, key) != 0) goto out;
    result = 0;
out:
    kubeboot_engine_free(e);
    kubeboot_key_free(key);
    free(pem_path);
    return result;
}

static void usage(void) {
    fprintf(stderr, "usage: kubeboot-agent --bootstrap-kubeconfig F --kubeconfig F --cert-dir D --node-name N\n"
                    "                      [--ca-bundle F] [--once] [--rotate-now]\n");
}

int main(int argc, char **argv) {
    const char *bootstrap_path = NULL, *ca_bundle = NULL;
    struct agent ag;
    memset(&ag, 0, sizeof ag);
    bool once = false, rotate_now = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (strcmp(a, "--once") == 0) once = true;
        else if (strcmp(a, "--rotate-now") == 0) rotate_now = true;
        else if (strcmp(a, "--bootstrap-kubeconfig") == 0) slot = &bootstrap_path;
        else if (strcmp(a, "--kubeconfig") == 0) slot = &ag.kubeconfig_path;
        else if (strcmp(a, "--cert-dir") == 0) slot = &ag.cert_dir;
        else if (strcmp(a, "--node-name") == 0) slot = &ag.node;
        else if (strcmp(a, "--ca-bundle") == 0) slot = &ca_bundle;
        else {
            usage();
            return 2;
        }
        if (slot) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                usage();
                return 2;
            }
            *slot = argv[++i];
        }
    }
    if (!bootstrap_path || !ag.kubeconfig_path || !ag.cert_dir || !ag.node) {
        usage();
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    int status = 1;
    struct cluster cl;
    memset(&cl, 0, sizeof cl);
    struct issued is;
    memset(&is, 0, sizeof is);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fail_msg("curl_global_init failed");
        return 1;
    }
    ag.curl = curl_easy_init();
    if (!ag.curl) goto done;
    if (ca_bundle && !(ag.verify_ca = read_file(ca_bundle, &ag.verify_ca_len))) {
        fail_msg("cannot read --ca-bundle %s: %s", ca_bundle, strerror(errno));
        goto done;
    }
    kubeboot_result rc =
        kubeboot_store_open("kubelet-client", strlen("kubelet-client"), ag.cert_dir, strlen(ag.cert_dir), &ag.store);
    if (rc != KUBEBOOT_RESULT_OK) {
        print_error(rc, ag.cert_dir, strlen(ag.cert_dir));
        goto done;
    }

    int64_t nb = 0, na = 0, deadline = 0;
    if (existing_valid(&ag, &cl, &nb, &na, ca_bundle != NULL)) {
        uint32_t jitter = 0;
        (void)random_bytes(&jitter, sizeof jitter);
        deadline = kubeboot_rotation_deadline(nb, na, jitter);
    } else {
        if (bootstrap(&ag, bootstrap_path, &cl, &is) != 0) goto done;
        deadline = is.rotation_deadline;
        free(is.cert_pem);
        memset(&is, 0, sizeof is);
    }
    if (rotate_now) deadline = now_unix();
    for (;;) {
        char t[40];
        if (once && !rotate_now) {
            status = 0;
            break;
        }
        if (!rotate_now) {
            printf("agent=c step=sleep-until-rotation deadline=%s\n", fmt_time(deadline, t, sizeof t));
            fflush(stdout);
            sleep_until(deadline);
        }
        if (stop_requested) {
            status = 0;
            break;
        }
        if (rotate(&ag, &cl, &is) == 0) {
            deadline = is.rotation_deadline;
            free(is.cert_pem);
            memset(&is, 0, sizeof is);
            if (once) {
                status = 0;
                break;
            }
        } else {
            free(is.cert_pem);
            memset(&is, 0, sizeof is);
            if (once) break;
            deadline = now_unix() + ROTATION_RETRY_S; /* retry while the current certificate lasts */
        }
        rotate_now = false;
    }
done:
    cluster_free(&cl);
    kubeboot_store_free(ag.store);
    free(ag.verify_ca);
    if (ag.curl) curl_easy_cleanup(ag.curl);
    curl_global_cleanup();
    return status;
}
