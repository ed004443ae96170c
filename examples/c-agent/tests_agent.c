/*
 * C tests of the agent through the ABI: its capacities and the memory they size (a static and a
 * stack block on a microcontroller's capacities, the hosts' on the heap), every member of the
 * tagged action, every answer, and runs driven by the recorded apiserver's answers
 * (core/tests/data/recorded: a real apiserver's bytes) to DONE or a typed FAILED. Files go
 * through libkubeboot's own store (kubeboot_agent_perform_file_action) or through this file's
 * own file steps (the READ and FILE answers a front-end without the store gives), in temporary
 * directories.
 */
#define _POSIX_C_SOURCE 200809L
#include "tests.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 2026-12-02T10:50:40Z, when the recorded run happened (the issued cert is valid then). */
static const int64_t REC_NOW = 1796208640;
static const char REC_SECRET[] = "cpoi3m254kzpt12t"; /* the recorded token's secret */
static const char REC_APPROVED[] = "kubeboot-rec-approved-105026";

/* A microcontroller's capacities (the networked firmware's). */
static const kubeboot_capacities SMALL = {4096, 1536, 512, 3072, 64, 0};

/* ---- files -------------------------------------------------------------------------------- */

static void write_file(const char *dir, const char *name, const void *b, size_t n) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(b, 1, n, f) == n);
    fclose(f);
}

static bool exists(const char *dir, const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static bool file_has(const char *dir, const char *name, const char *needle) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    size_t n = 0;
    unsigned char *b = read_file(p, &n);
    bool has = b && find_bytes(b, n, needle, strlen(needle)) != NULL;
    free(b);
    return has;
}

static void copy_fixture(const char *dir, const char *fixture, const char *name) {
    size_t n = 0;
    unsigned char *b = data(fixture, &n);
    write_file(dir, name, b, n);
    free(b);
}

static void remove_dir(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* A node's directory for the recorded bootstrap (mkdtemp of tmpl): the CAs, the bootstrap
   kubeconfig and, when `key`, the recorded key in the key cache (so the recorded approval
   validates for it). */
static char *node_dir(char *tmpl, bool key) {
    char *dir = mkdtemp(tmpl);
    CHECK(dir != NULL);
    if (!dir) return NULL;
    copy_fixture(dir, "recorded/client-ca.pem", "client-ca.pem");
    copy_fixture(dir, "recorded/serving-ca.pem", "serving-ca.pem");
    const char *bk = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n"
                     "    certificate-authority: serving-ca.pem\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n"
                     "current-context: c\nusers:\n- name: u\n  user:\n    token: hi3rc6.cpoi3m254kzpt12t\n";
    write_file(dir, "bootstrap.conf", bk, strlen(bk));
    if (key) {
        char p[512];
        snprintf(p, sizeof p, "%s/pki", dir);
        CHECK(mkdir(p, 0700) == 0);
        copy_fixture(dir, "recorded/approved.key.pem", "pki/kubelet-client.key.tmp");
    }
    return dir;
}

/* The configuration of a run-once agent for `node` in `dir` (the CA bundle: the recorded
   client CA). */
static kubeboot_agent_config node_config(const char *dir, const char *node, bool with_bootstrap) {
    kubeboot_agent_config c;
    memset(&c, 0x5a, sizeof c); /* _default must write every field */
    CHECK_RC(kubeboot_agent_config_default(&c), OK);
    CHECK(c.mode == KUBEBOOT_MODE_ONCE && c.log_format == KUBEBOOT_LOG_TEXT && !c.poll && !c.serving);
    CHECK(c.bootstrap_wait_seconds == 3600 && c.rotation_wait_seconds == 900 && c.ca_refresh_seconds == 600);
    CHECK(c.discovery_timeout_seconds == 300 && c.expiration_seconds == 0 && c.max_rotations == 0);
    CHECK(c.node_name == NULL && c.key_device == NULL && c.discovery_token == NULL && c.seed == 0);
    c.front_end = "c", c.front_end_len = 1;
    c.working_dir = dir, c.working_dir_len = strlen(dir);
    c.node_name = node, c.node_name_len = strlen(node);
    c.kubeconfig = "kubelet.conf", c.kubeconfig_len = 12;
    if (with_bootstrap) c.bootstrap_kubeconfig = "bootstrap.conf", c.bootstrap_kubeconfig_len = 14;
    c.cert_dir = "pki", c.cert_dir_len = 3;
    c.ca_bundle = "client-ca.pem", c.ca_bundle_len = 13;
    c.seed = 42;
    return c;
}

/* ---- a front-end's own file steps (the READ and FILE answers, by hand) ---------------------- */

/* The borrowed path as a C string. */
static const char *cpath(kubeboot_str s, char *buf, size_t cap) {
    snprintf(buf, cap, "%.*s", (int)s.len, s.data);
    return buf;
}

static uint32_t errno_result(void) {
    return errno == ENOENT ? KUBEBOOT_RESULT_STORE_NOT_FOUND
           : errno == EACCES ? KUBEBOOT_RESULT_STORE_PERMISSION_DENIED
                             : KUBEBOOT_RESULT_STORE_IO;
}

/* Answer a READ from the disk. */
static void c_read(kubeboot_agent *agent, int64_t now, const kubeboot_read *r) {
    char p[512];
    FILE *f = fopen(cpath(r->path, p, sizeof p), "rb");
    if (!f) {
        CHECK_RC(kubeboot_agent_on_read(agent, now, errno_result(), NULL, 0), OK);
        return;
    }
    unsigned char *b = malloc(r->max_len + 1 < 65536 ? r->max_len + 1 : 65536);
    size_t n = fread(b, 1, r->max_len + 1 < 65536 ? r->max_len + 1 : 65536, f);
    fclose(f);
    if (n > r->max_len) CHECK_RC(kubeboot_agent_on_read(agent, now, KUBEBOOT_RESULT_STORE_FILE_TOO_LARGE, NULL, 0), OK);
    else CHECK_RC(kubeboot_agent_on_read(agent, now, OK, n ? b : NULL, n), OK);
    free(b);
}

/* Write path atomically: a temporary file beside it, fsync, rename. */
static uint32_t c_write(const char *path, kubeboot_bytes d, mode_t mode) {
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.c-tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0) return errno_result();
    bool ok = fchmod(fd, mode) == 0 && write(fd, d.data, d.len) == (ssize_t)d.len && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) return unlink(tmp), KUBEBOOT_RESULT_STORE_IO;
    return OK;
}

/* Whether path exists as something else than a symlink. */
static bool not_a_link(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && !S_ISLNK(st.st_mode);
}

/* Whether name is <prefix>-YYYY-MM-DD-HH-MM-SS.pem (digits where the layout has them). */
static bool pair_name(const char *name, kubeboot_str prefix) {
    static const char layout[] = "dddd-dd-dd-dd-dd-dd.pem";
    size_t n = strlen(name), lay = sizeof layout - 1;
    if (n != prefix.len + 1 + lay || memcmp(name, prefix.data, prefix.len) != 0 || name[prefix.len] != '-') return false;
    for (size_t i = 0; i < lay; i++) {
        char c = name[prefix.len + 1 + i];
        if (layout[i] == 'd' ? c < '0' || c > '9' : c != layout[i]) return false;
    }
    return true;
}

/* PRUNE_PAIRS: every regular data file of the store in dir but keep. */
static uint32_t c_prune(const char *dir, kubeboot_str prefix, const char *keep) {
    DIR *d = opendir(dir);
    if (!d) return errno_result();
    uint32_t r = OK;
    char p[1024];
    struct stat st;
    for (struct dirent *e; (e = readdir(d));) {
        if (!pair_name(e->d_name, prefix)) continue;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || strcmp(p, keep) == 0) continue;
        if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (unlink(p) != 0 && errno != ENOENT && r == OK) r = errno_result();
    }
    closedir(d);
    return r;
}

/* Do a FILE step as kubeboot_file_step documents it. */
static uint32_t c_step(const kubeboot_file_step *f) {
    char p[512], updated[512], target[512];
    struct stat st;
    cpath(f->path, p, sizeof p);
    switch (f->step) {
    case KUBEBOOT_FILE_STEP_KIND_RECOVER:
        return stat(p, &st) == 0 && S_ISDIR(st.st_mode) ? OK : KUBEBOOT_RESULT_STORE_NOT_FOUND;
    case KUBEBOOT_FILE_STEP_KIND_CREATE_DIR:
        return mkdir(p, 0700) == 0 || errno == EEXIST ? OK : errno_result();
    case KUBEBOOT_FILE_STEP_KIND_WRITE_CA:
        return c_write(p, f->data, 0644);
    case KUBEBOOT_FILE_STEP_KIND_WRITE_PAIR: {
        uint32_t r = c_write(p, f->data, 0600);
        size_t n = 0;
        unsigned char *back = r == OK ? read_file(p, &n) : NULL;
        if (r == OK && !(back && n == f->data.len && memcmp(back, f->data.data, n) == 0))
            r = KUBEBOOT_RESULT_STORE_READ_BACK_MISMATCH;
        free(back);
        return r;
    }
    case KUBEBOOT_FILE_STEP_KIND_WRITE_KEY_CACHE:
    case KUBEBOOT_FILE_STEP_KIND_WRITE_KUBECONFIG:
    case KUBEBOOT_FILE_STEP_KIND_WRITE_BOOTSTRAP_KUBECONFIG:
        return c_write(p, f->data, 0600);
    case KUBEBOOT_FILE_STEP_KIND_SWAP_CURRENT:
        cpath(f->updated, updated, sizeof updated), cpath(f->target, target, sizeof target);
        if (not_a_link(p)) return KUBEBOOT_RESULT_STORE_CURRENT_NOT_SYMLINK;
        if (not_a_link(updated)) return KUBEBOOT_RESULT_STORE_UPDATED_NOT_SYMLINK;
        unlink(updated);
        return symlink(target, updated) == 0 && rename(updated, p) == 0 ? OK : errno_result();
    case KUBEBOOT_FILE_STEP_KIND_REMOVE_KEY_CACHE:
        return unlink(p) == 0 || errno == ENOENT ? OK : errno_result();
    case KUBEBOOT_FILE_STEP_KIND_REMOVE_DIR:
        return rmdir(p) == 0 || errno == ENOENT || errno == ENOTEMPTY || errno == EEXIST ? OK : errno_result();
    case KUBEBOOT_FILE_STEP_KIND_PRUNE_PAIRS:
        cpath(f->target, target, sizeof target);
        return c_prune(p, f->prefix, target);
    default:
        CHECK(!"unknown file step");
        return KUBEBOOT_RESULT_STORE_IO;
    }
}

/* ---- the tagged action: every member as its kind says ------------------------------------- */

static bool empty(kubeboot_str s) { return s.len == 0 && s.data == NULL; }
static bool empty_bytes(kubeboot_bytes b) { return b.len == 0 && b.data == NULL; }
static bool absolute(kubeboot_str s) { return s.len > 1 && s.data && s.data[0] == '/'; }

static const char *const STEP_NAMES[] = {"recover", "create-dir", "write-key-cache", "write-pair",
                                         "swap-current", "write-kubeconfig", "write-bootstrap-kubeconfig",
                                         "remove-key-cache", "remove-dir", "write-ca", "prune-pairs"};

static void check_file_step(const kubeboot_file_step *f) {
    uint32_t k = f->step;
    CHECK(k <= KUBEBOOT_FILE_STEP_KIND_PRUNE_PAIRS);
    if (k > KUBEBOOT_FILE_STEP_KIND_PRUNE_PAIRS) return;
    CHECK(str_is(f->name, STEP_NAMES[k]));
    CHECK(absolute(f->path));
    bool writes = k == KUBEBOOT_FILE_STEP_KIND_WRITE_KEY_CACHE || k == KUBEBOOT_FILE_STEP_KIND_WRITE_PAIR ||
                  k == KUBEBOOT_FILE_STEP_KIND_WRITE_KUBECONFIG || k == KUBEBOOT_FILE_STEP_KIND_WRITE_CA ||
                  k == KUBEBOOT_FILE_STEP_KIND_WRITE_BOOTSTRAP_KUBECONFIG;
    CHECK(writes ? f->data.len > 0 && f->data.data != NULL : empty_bytes(f->data));
    CHECK(f->secret == (k == KUBEBOOT_FILE_STEP_KIND_WRITE_KEY_CACHE || k == KUBEBOOT_FILE_STEP_KIND_WRITE_PAIR ||
                        k == KUBEBOOT_FILE_STEP_KIND_WRITE_BOOTSTRAP_KUBECONFIG));
    CHECK(k == KUBEBOOT_FILE_STEP_KIND_RECOVER || k == KUBEBOOT_FILE_STEP_KIND_PRUNE_PAIRS
              ? str_is(f->prefix, "kubelet-client") || str_is(f->prefix, "kubelet-server")
              : empty(f->prefix));
    if (k == KUBEBOOT_FILE_STEP_KIND_SWAP_CURRENT) {
        CHECK(absolute(f->updated) && absolute(f->target) && str_has(f->path, "-current.pem") &&
              str_has(f->updated, "-updated.pem"));
    } else if (k == KUBEBOOT_FILE_STEP_KIND_PRUNE_PAIRS) {
        CHECK(empty(f->updated) && absolute(f->target) && str_has(f->target, ".pem"));
    } else {
        CHECK(empty(f->updated) && empty(f->target));
    }
    if (k == KUBEBOOT_FILE_STEP_KIND_WRITE_PAIR) CHECK(str_has((kubeboot_str){(const char *)f->data.data, f->data.len},
                                                               "-----BEGIN CERTIFICATE-----"));
}

static void check_http(const kubeboot_http_request *h, int64_t now) {
    const kubeboot_connection *c = &h->connection;
    CHECK(h->kind <= KUBEBOOT_REQUEST_KIND_SELF_SUBJECT_REVIEW);
    CHECK(c->server.len > 8 && memcmp(c->server.data, "https://", 8) == 0);
    CHECK(c->insecure ? empty_bytes(c->ca_pem) : c->ca_pem.len > 100);
    CHECK(c->client_cert_pem.len ? c->client_key_pem.len > 0 : empty_bytes(c->client_key_pem));
    CHECK(c->client_key_holder <= KUBEBOOT_KEY_HOLDER_PKCS11);
    bool post = h->kind == KUBEBOOT_REQUEST_KIND_CREATE || h->kind == KUBEBOOT_REQUEST_KIND_SELF_SUBJECT_REVIEW;
    CHECK(str_is(h->method, post ? "POST" : "GET"));
    CHECK(h->path.len > 1 && h->path.data[0] == '/');
    CHECK(h->kind == KUBEBOOT_REQUEST_KIND_WATCH ? h->idle_at == 0 || h->idle_at > now : h->idle_at == 0);
    CHECK(post ? h->body.len > 50 && str_is(h->content_type, "application/json")
               : empty_bytes(h->body) && empty(h->content_type));
    CHECK(h->accept.len > 0 && str_has(h->user_agent, "kubeboot-c/0.4.0"));
    CHECK(h->give_up_at > now);
    CHECK(!str_has(h->path, REC_SECRET) && !str_has(h->user_agent, REC_SECRET));
}

/* What every action must be, whatever the run. */
static void check_action(const kubeboot_action *a, int64_t now) {
    switch (a->kind) {
    case KUBEBOOT_ACTION_KIND_READ:
        CHECK(absolute(a->of.read.path) && a->of.read.role <= KUBEBOOT_FILE_ROLE_SERVING_PAIR && a->of.read.max_len > 0);
        break;
    case KUBEBOOT_ACTION_KIND_FILE:
        check_file_step(&a->of.file);
        break;
    case KUBEBOOT_ACTION_KIND_ENTROPY:
        CHECK(a->of.entropy.len >= KUBEBOOT_KEY_ENTROPY_LEN);
        break;
    case KUBEBOOT_ACTION_KIND_KEY:
        CHECK(a->of.key.op <= KUBEBOOT_KEY_OP_KIND_DESTROY && a->of.key.holder <= KUBEBOOT_KEY_HOLDER_PKCS11);
        CHECK(a->of.key.op == KUBEBOOT_KEY_OP_KIND_GENERATE ? a->of.key.device.len > 0 && a->of.key.label.len > 0 &&
                                                                 empty_bytes(a->of.key.key_ref)
                                                           : a->of.key.key_ref.len > 0 && empty(a->of.key.device));
        CHECK(a->of.key.op == KUBEBOOT_KEY_OP_KIND_SIGN ? a->of.key.message.len > 100 : empty_bytes(a->of.key.message));
        break;
    case KUBEBOOT_ACTION_KIND_HTTP:
        check_http(&a->of.http, now);
        break;
    case KUBEBOOT_ACTION_KIND_SLEEP:
        CHECK(a->of.sleep.until >= now);
        break;
    case KUBEBOOT_ACTION_KIND_EVENT: {
        const kubeboot_event *e = &a->of.event;
        char head[64];
        snprintf(head, sizeof head, "agent=c step=%.*s", (int)e->step.len, e->step.data);
        char json[64];
        snprintf(json, sizeof json, "{\"agent\":\"c\",\"step\":\"%.*s\"", (int)e->step.len, e->step.data);
        CHECK(e->step.len > 0 && (find_bytes(e->line.data, e->line.len, head, strlen(head)) == e->line.data ||
                                  find_bytes(e->line.data, e->line.len, json, strlen(json)) == e->line.data));
        CHECK(!str_has(e->line, REC_SECRET) && !memchr(e->line.data, '\n', e->line.len));
        break;
    }
    case KUBEBOOT_ACTION_KIND_DONE: {
        const kubeboot_cert_status *c = &a->of.done.client;
        CHECK(c->present && c->not_before < c->not_after);
        int64_t life = c->not_after - c->not_before;
        CHECK(c->rotation_deadline >= c->not_before + life * 7 / 10 && c->rotation_deadline <= c->not_before + life * 9 / 10);
        const kubeboot_cert_status *s = &a->of.done.serving;
        CHECK(s->present || (s->not_before == 0 && s->not_after == 0 && s->rotation_deadline == 0));
        break;
    }
    case KUBEBOOT_ACTION_KIND_FAILED:
        CHECK(a->of.failed.result != OK && a->of.failed.line.len > 0 && !str_has(a->of.failed.line, REC_SECRET));
        CHECK(!str_has(a->of.failed.detail, REC_SECRET));
        break;
    default:
        CHECK(!"unknown action kind");
    }
}

/* ---- the recorded apiserver and a run ------------------------------------------------------ */

/* How the recorded apiserver answers, and what a run saw. */
struct run {
    /* files: libkubeboot's store (false) or this file's own steps (true) */
    bool c_files;
    /* the create's answer (status 201 with this file, or another status and file) */
    const char *create;
    uint16_t create_status;
    /* answer the first create 429 with Retry-After: 1 (API Priority and Fairness) */
    bool pushback;
    /* break the first create with a transport error */
    bool drop_first;
    /* the watch stream (status 200), fed in chunk-byte pieces; the first watch ends early
       without an event when end_first */
    const char *watch;
    size_t chunk;
    bool end_first;
    /* the watch stays quiet past its idle_at first (the agent's progress while it is open) */
    bool quiet_first;
    /* the answer to a GET of the CSR (poll mode) */
    const char *get;
    /* the entropy given for a new key (NULL: the OS RNG) */
    const uint8_t *entropy;
    /* a device's KEY actions (struct sim_token *; NULL: none expected) */
    void *token;
    /* seen */
    int requests, creates, watches, gets, files, sleeps, entropies;
    bool said_retry, json_lines, watched_approved, progressed;
    char create_name[64], pair_path[256];
};

static void answer(kubeboot_agent *agent, int64_t now, uint16_t status, const char *file, const char *retry_after) {
    size_t n = 0;
    unsigned char *b = file ? data(file, &n) : NULL;
    kubeboot_http_response r = {status, retry_after, retry_after ? strlen(retry_after) : 0, b, n};
    CHECK_RC(kubeboot_agent_on_http_response(agent, now, &r), OK);
    free(b);
}

static void serve(kubeboot_agent *agent, int64_t now, const kubeboot_http_request *h, struct run *r) {
    r->requests++;
    switch (h->kind) {
    case KUBEBOOT_REQUEST_KIND_HEALTHZ:
        CHECK(empty(h->authorization) && str_is(h->path, "/healthz"));
        answer(agent, now, 200, NULL, NULL);
        break;
    case KUBEBOOT_REQUEST_KIND_CREATE:
        r->creates++;
        CHECK(str_is(h->path, "/apis/certificates.k8s.io/v1/certificatesigningrequests"));
        CHECK(r->token || str_is(h->authorization, "Bearer hi3rc6.cpoi3m254kzpt12t"));
        CHECK(find_bytes(h->body.data, h->body.len, "kube-apiserver-client-kubelet", 29) != NULL);
        if (r->drop_first && r->creates == 1) {
            CHECK_RC(kubeboot_agent_on_transport_error(agent, now, S("connection refused")), OK);
        } else if (r->pushback && r->creates == 1 + r->drop_first) {
            answer(agent, now, 429, "recorded/secrets-list-403-bootstrap.json", "1");
        } else {
            answer(agent, now, r->create_status, r->create, NULL);
        }
        break;
    case KUBEBOOT_REQUEST_KIND_WATCH: {
        r->watches++;
        CHECK(str_has(h->path, "watch=true") && str_has(h->path, "fieldSelector=metadata.name%3D"));
        r->watched_approved = r->watched_approved || str_has(h->path, REC_APPROVED);
        bool keep = true;
        if (r->end_first && r->watches == 1) {
            CHECK_RC(kubeboot_agent_on_stream_end(agent, now), OK);
            break;
        }
        if (r->quiet_first && r->watches == 1) {
            /* Quiet until idle_at: the agent says how long it has waited, without ending it. */
            int64_t idle_at = h->idle_at;
            kubeboot_event e;
            bool has = true;
            CHECK(idle_at > now);
            CHECK_RC(kubeboot_agent_on_stream_idle(agent, idle_at, &keep), OK);
            CHECK(keep);
            /* (the lines said since the watch began, then the progress: an update of the wait) */
            bool update = false;
            for (int i = 0; i < 8 && has; i++) {
                CHECK_RC(kubeboot_agent_next_event(agent, &e, &has), OK);
                if (has && e.update) {
                    update = true;
                    CHECK(str_is(e.step, "wait") && !e.ready && !str_has(e.line, "elapsed=0s") &&
                          str_has(e.line, "elapsed="));
                    r->progressed = str_has(e.line, "name=kubeboot-rec-approved-105026");
                }
            }
            CHECK(update && !has);
            CHECK_RC(kubeboot_agent_on_stream_idle(agent, idle_at, &keep), OK); /* not due again yet */
            CHECK_RC(kubeboot_agent_next_event(agent, &e, &has), OK);
            CHECK(keep && !has);
            CHECK_RC(kubeboot_agent_on_stream_idle(NULL, idle_at, &keep), NULLP);
            CHECK_RC(kubeboot_agent_on_stream_idle(agent, idle_at, NULL), NULLP);
            CHECK_RC(kubeboot_agent_next_event(NULL, &e, &has), NULLP);
            CHECK_RC(kubeboot_agent_next_event(agent, NULL, &has), NULLP);
            CHECK_RC(kubeboot_agent_next_event(agent, &e, NULL), NULLP);
        }
        size_t wn = 0;
        unsigned char *w = data(r->watch, &wn);
        for (size_t off = 0; keep && off < wn; off += r->chunk) {
            size_t len = wn - off < r->chunk ? wn - off : r->chunk;
            CHECK_RC(kubeboot_agent_on_stream_data(agent, now, w + off, len, &keep), OK);
        }
        CHECK(!keep); /* the answer arrived: stop reading */
        free(w);
        break;
    }
    case KUBEBOOT_REQUEST_KIND_GET:
        r->gets++;
        CHECK(str_has(h->path, "/apis/certificates.k8s.io/v1/certificatesigningrequests/"));
        answer(agent, now, 200, r->get, NULL);
        break;
    default:
        CHECK_RC(kubeboot_agent_on_transport_error(agent, now, S("unexpected")), OK);
    }
}

static void sim_key(kubeboot_agent *agent, int64_t now, const kubeboot_key_action *k, void *token);

/* Drive agent from now to DONE or FAILED; every action checked. The final action is returned
   (its strings valid until the next call on the agent). */
static kubeboot_action run_agent(kubeboot_agent *agent, int64_t now, struct run *r) {
    kubeboot_action a;
    char msg[256];
    size_t n = 0;
    for (int i = 0; i < 300; i++) {
        CHECK_RC(kubeboot_agent_poll(agent, now, &a), OK);
        check_action(&a, now);
        switch (a.kind) {
        case KUBEBOOT_ACTION_KIND_READ:
            if (r->c_files) c_read(agent, now, &a.of.read);
            else CHECK_RC(kubeboot_agent_perform_file_action(agent, now, msg, sizeof msg, &n), OK);
            break;
        case KUBEBOOT_ACTION_KIND_FILE:
            r->files++;
            if (a.of.file.step == KUBEBOOT_FILE_STEP_KIND_WRITE_PAIR) cpath(a.of.file.path, r->pair_path, sizeof r->pair_path);
            if (r->c_files) CHECK_RC(kubeboot_agent_on_file_done(agent, now, c_step(&a.of.file)), OK);
            else CHECK_RC(kubeboot_agent_perform_file_action(agent, now, msg, sizeof msg, &n), OK);
            break;
        case KUBEBOOT_ACTION_KIND_ENTROPY:
            r->entropies++;
            CHECK(r->token == NULL); /* a device agent asks for no entropy */
            if (r->entropy) CHECK_RC(kubeboot_agent_on_entropy(agent, r->entropy, a.of.entropy.len), OK);
            else CHECK_RC(kubeboot_agent_perform_entropy(agent), OK);
            break;
        case KUBEBOOT_ACTION_KIND_KEY:
            CHECK(r->token != NULL);
            if (r->token) sim_key(agent, now, &a.of.key, r->token);
            break;
        case KUBEBOOT_ACTION_KIND_HTTP:
            serve(agent, now, &a.of.http, r);
            break;
        case KUBEBOOT_ACTION_KIND_SLEEP:
            r->sleeps++;
            now = a.of.sleep.until;
            break;
        case KUBEBOOT_ACTION_KIND_EVENT:
            r->json_lines = a.of.event.line.len && a.of.event.line.data[0] == '{';
            if (str_is(a.of.event.step, "retry") && str_has(a.of.event.line, "reason=server-asked retry_after=1"))
                r->said_retry = true;
            if (str_is(a.of.event.step, "create")) {
                const char *p = find_bytes(a.of.event.line.data, a.of.event.line.len, "name=", 5);
                if (p) snprintf(r->create_name, sizeof r->create_name, "%.52s", p + 5);
            }
            if (getenv("KUBEBOOT_TEST_VERBOSE")) fprintf(stderr, "%.*s\n", (int)a.of.event.line.len, a.of.event.line.data);
            break;
        default:
            if (a.kind == KUBEBOOT_ACTION_KIND_FAILED && getenv("KUBEBOOT_TEST_VERBOSE"))
                fprintf(stderr, "%.*s\n", (int)a.of.failed.line.len, a.of.failed.line.data);
            return a;
        }
    }
    CHECK(!"the agent did not finish");
    return a;
}

/* The recorded approval: created, then approved and issued on the watch. */
static struct run approved(void) {
    struct run r;
    memset(&r, 0, sizeof r);
    r.create = "recorded/csr-create-201.json", r.create_status = 201;
    r.watch = "recorded/watch-approved.json", r.chunk = 10;
    r.get = "recorded/csr-get-approved-issued.json";
    return r;
}

/* ---- capacities and memory ----------------------------------------------------------------- */

void test_capacities(void) {
    kubeboot_capacities host, c;
    kubeboot_capacity which = KUBEBOOT_CAPACITY_MEMORY;
    CHECK_RC(kubeboot_capacities_host(&host), OK);
    CHECK(host.response == 32768 && host.pem == 16384 && host.key == 4096 && host.path == 1024 &&
          host.serving_dns == KUBEBOOT_CSR_MAX_SANS && host.file >= host.pem + host.key);
    CHECK_RC(kubeboot_capacities_host(NULL), NULLP);
    CHECK_RC(kubeboot_capacities_check(&host, &which), OK);
    CHECK(which == KUBEBOOT_CAPACITY_NONE);
    CHECK_RC(kubeboot_capacities_check(&SMALL, &which), OK);
    /* Each rule names its capacity. */
    const struct {
        size_t *field;
        size_t value;
        kubeboot_capacity want;
    } cases[] = {
        {&c.response, 100, KUBEBOOT_CAPACITY_RESPONSE}, {&c.pem, 10, KUBEBOOT_CAPACITY_PEM},
        {&c.key, 10, KUBEBOOT_CAPACITY_KEY},            {&c.path, 10, KUBEBOOT_CAPACITY_PATH},
        {&c.serving_dns, 99, KUBEBOOT_CAPACITY_SERVING_DNS}, {&c.file, 1536, KUBEBOOT_CAPACITY_FILE},
        {&c.response, SIZE_MAX, KUBEBOOT_CAPACITY_MEMORY},
    };
    size_t size = 77;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        c = SMALL;
        *cases[i].field = cases[i].value;
        which = KUBEBOOT_CAPACITY_NONE;
        CHECK_RC(kubeboot_capacities_check(&c, &which), KUBEBOOT_RESULT_TOO_LARGE);
        CHECK(which == cases[i].want);
        CHECK_RC(kubeboot_agent_size(&c, &size), KUBEBOOT_RESULT_TOO_LARGE);
        CHECK(size == 77); /* nothing written */
    }
    CHECK_RC(kubeboot_capacities_check(NULL, &which), NULLP);
    CHECK_RC(kubeboot_capacities_check(&SMALL, NULL), NULLP);
    /* The size: the regions (17 paths, 5 PEM regions, the key, a file, the work buffer) and the
       agent itself; the hosts' take more than a small device's. */
    size_t small = 0, big = 0;
    CHECK_RC(kubeboot_agent_size(&SMALL, &small), OK);
    CHECK_RC(kubeboot_agent_size(&host, &big), OK);
    CHECK(small > 17 * 64 + 5 * 1536 + 512 + 3072 + 4096 && small < 64 * 1024 && big > small + 100 * 1024);
    CHECK_RC(kubeboot_agent_size(NULL, &small), NULLP);
    CHECK_RC(kubeboot_agent_size(&SMALL, NULL), NULLP);
}

/* ---- the agent ----------------------------------------------------------------------------- */

/* A static block for SMALL (checked against kubeboot_agent_size), one byte more to misalign. */
static unsigned char static_block[48 * 1024 + 1];

/* Start refusals on an agent in caller memory: each a typed reason, the agent idle after it. */
static void start_refusals(kubeboot_agent *agent, const char *dir) {
    kubeboot_agent_config c = node_config(dir, "rec-1", true), bad;
    kubeboot_action a;
    bad = c, bad.mode = 9;
    CHECK_RC(kubeboot_agent_start(agent, &bad), KUBEBOOT_RESULT_INVALID_CONFIG);
    bad = c, bad.log_format = 7;
    CHECK_RC(kubeboot_agent_start(agent, &bad), KUBEBOOT_RESULT_INVALID_CONFIG);
    bad = c, bad.working_dir = "relative", bad.working_dir_len = 8;
    CHECK_RC(kubeboot_agent_start(agent, &bad), KUBEBOOT_RESULT_INVALID_CONFIG);
    bad = c, bad.node_name = "Bad_Name", bad.node_name_len = 8;
    CHECK_RC(kubeboot_agent_start(agent, &bad), KUBEBOOT_RESULT_INVALID_NODE_NAME);
    bad = c, bad.front_end = NULL;
    CHECK_RC(kubeboot_agent_start(agent, &bad), NULLP);
    /* A path over the path capacity (64) is too large, named at start. */
    const char *long_dir = "a-cert-dir-whose-name-alone-is-longer-than-the-sixty-four-bytes-of-path";
    bad = c, bad.cert_dir = long_dir, bad.cert_dir_len = strlen(long_dir);
    CHECK_RC(kubeboot_agent_start(agent, &bad), KUBEBOOT_RESULT_TOO_LARGE);
    /* The CA refresh needs a larger work buffer than a small device's: named at start; 0 means
       never. */
    bad = c, bad.mode = KUBEBOOT_MODE_RUN;
    CHECK_RC(kubeboot_agent_start(agent, &bad), KUBEBOOT_RESULT_TOO_LARGE);
    bad.ca_refresh_seconds = 0;
    CHECK_RC(kubeboot_agent_start(agent, &bad), OK);
    CHECK_RC(kubeboot_agent_start(agent, NULL), NULLP);
    CHECK_RC(kubeboot_agent_start(NULL, &c), NULLP);
    /* After a refusal it is idle: a poll says so. */
    bad.mode = 9;
    CHECK_RC(kubeboot_agent_start(agent, &bad), KUBEBOOT_RESULT_INVALID_CONFIG);
    CHECK_RC(kubeboot_agent_poll(agent, REC_NOW, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_FAILED && a.of.failed.result == KUBEBOOT_RESULT_INVALID_STATE);
}

/* The agent in a static block sized for a microcontroller: too short refused with nothing
   written; built at any alignment; refusals at start; the recorded bootstrap to DONE with this
   file's own file steps; freed, the block holds no secret. */
static void agent_in_static_block(void) {
    size_t size = 0;
    CHECK_RC(kubeboot_agent_size(&SMALL, &size), OK);
    CHECK(size + 1 <= sizeof static_block);
    if (size + 1 > sizeof static_block) return;
    unsigned char *mem = static_block + 1; /* misaligned on purpose */
    kubeboot_agent *agent = (kubeboot_agent *)&size, *sentinel = agent;
    memset(static_block, 0xa5, sizeof static_block);
    CHECK_RC(kubeboot_agent_init_in(mem, size - 8, &SMALL, &agent), KUBEBOOT_RESULT_TOO_LARGE);
    CHECK(agent == sentinel);
    bool untouched = true;
    for (size_t i = 0; i < sizeof static_block; i++) untouched = untouched && static_block[i] == 0xa5;
    CHECK(untouched);
    kubeboot_capacities bad = SMALL;
    bad.key = 10;
    CHECK_RC(kubeboot_agent_init_in(mem, size, &bad, &agent), KUBEBOOT_RESULT_TOO_LARGE);
    CHECK_RC(kubeboot_agent_init_in(NULL, size, &SMALL, &agent), NULLP);
    CHECK_RC(kubeboot_agent_init_in(mem, size, NULL, &agent), NULLP);
    CHECK_RC(kubeboot_agent_init_in(mem, size, &SMALL, NULL), NULLP);
    CHECK(agent == sentinel);
    CHECK_RC(kubeboot_agent_init_in(mem, size, &SMALL, &agent), OK);
    CHECK((unsigned char *)agent >= mem && (unsigned char *)agent < mem + size);
    kubeboot_action a;
    CHECK_RC(kubeboot_agent_poll(agent, REC_NOW, &a), OK); /* not started */
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_FAILED && a.of.failed.result == KUBEBOOT_RESULT_INVALID_STATE);

    char tmpl[] = "/tmp/kbsXXXXXX"; /* short: the paths fit the small path capacity */
    char *dir = node_dir(tmpl, true);
    if (!dir) return;
    start_refusals(agent, dir);
    kubeboot_agent_config c = node_config(dir, "rec-1", true);
    CHECK_RC(kubeboot_agent_start(agent, &c), OK);
    struct run r = approved();
    r.c_files = true, r.quiet_first = true;
    a = run_agent(agent, REC_NOW, &r);
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_DONE && a.of.done.client.present && !a.of.done.serving.present);
    CHECK(r.requests == 3 && r.entropies == 0); /* healthz, create, watch; the cached key */
    CHECK(r.watched_approved && r.progressed); /* the name the apiserver gave */
    CHECK(exists(dir, "pki/kubelet-client-current.pem") && exists(dir, "kubelet.conf") &&
          !exists(dir, "pki/kubelet-client.key.tmp"));
    CHECK(file_has(dir, "kubelet.conf", "pki/kubelet-client-current.pem"));
    kubeboot_agent_free(agent);
    CHECK(find_bytes(static_block, sizeof static_block, REC_SECRET, strlen(REC_SECRET)) == NULL);
    CHECK(find_bytes(static_block, sizeof static_block, "PRIVATE KEY", 11) == NULL);

    /* What these steps wrote, libkubeboot's store reads: valid, nothing sent. */
    CHECK_RC(kubeboot_agent_init_in(mem, size, &SMALL, &agent), OK);
    CHECK_RC(kubeboot_agent_start(agent, &c), OK);
    r = approved();
    a = run_agent(agent, REC_NOW + 60, &r);
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_DONE && r.requests == 0 && r.files > 0);
    kubeboot_agent_free(agent);
    remove_dir(dir);
}

/* Serve a run-once agent's whole recorded bootstrap from a block on the stack. */
static void agent_on_the_stack(void) {
    unsigned char block[40 * 1024];
    size_t size = 0;
    kubeboot_agent *agent = NULL;
    CHECK_RC(kubeboot_agent_size(&SMALL, &size), OK);
    CHECK(size <= sizeof block);
    if (size > sizeof block) return;
    CHECK_RC(kubeboot_agent_init_in(block, sizeof block, &SMALL, &agent), OK);
    char tmpl[] = "/tmp/kbkXXXXXX";
    char *dir = node_dir(tmpl, true);
    if (!dir) return;
    kubeboot_agent_config c = node_config(dir, "rec-1", true);
    c.log_format = KUBEBOOT_LOG_JSON;
    CHECK_RC(kubeboot_agent_start(agent, &c), OK);
    CHECK_RC(kubeboot_agent_set_utc_offset(agent, 3600), OK); /* data files named by local time */
    CHECK_RC(kubeboot_agent_set_utc_offset(NULL, 0), NULLP);
    struct run r = approved();
    r.chunk = 1; /* the stream byte by byte */
    kubeboot_action a = run_agent(agent, REC_NOW, &r);
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_DONE && r.json_lines);
    /* 10:50:40Z at UTC+1 */
    CHECK(strstr(r.pair_path, "/pki/kubelet-client-2026-12-02-11-50-40.pem") != NULL);
    kubeboot_agent_free(agent);
    remove_dir(dir);
}

/* The recorded answers that end in a typed failure: nothing written but the key cache. */
static void recorded_failures(void) {
    const struct {
        const char *key, *node, *create, *watch;
        uint16_t status;
        kubeboot_result want;
        const char *detail;
    } cases[] = {
        {"recorded/denied.key.pem", "rec-2", "recorded/csr-create-201-pending.json", "recorded/watch-denied.json", 201,
         KUBEBOOT_RESULT_CSR_DENIED, "denied"},
        {"recorded/failed.key.pem", "rec-3", "recorded/csr-create-201-to-fail.json", "recorded/watch-failed.json", 201,
         KUBEBOOT_RESULT_CSR_FAILED, "SignerValidationFailure"},
        {"recorded/approved.key.pem", "rec-1", "recorded/csr-create-401-wrong-secret.json", NULL, 401,
         KUBEBOOT_RESULT_UNAUTHORIZED, "Unauthorized"},
        {"recorded/approved.key.pem", "rec-1", "recorded/csr-create-403-no-binding.json", NULL, 403,
         KUBEBOOT_RESULT_FORBIDDEN, "cannot create resource"},
        {"recorded/approved.key.pem", "rec-1", "recorded/csr-create-422-invalid.json", NULL, 422,
         KUBEBOOT_RESULT_HTTP_STATUS, "Invalid"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char tmpl[] = "/tmp/kubeboot-c-fail-XXXXXX";
        char *dir = node_dir(tmpl, false);
        if (!dir) return;
        char p[512];
        snprintf(p, sizeof p, "%s/pki", dir);
        CHECK(mkdir(p, 0700) == 0);
        copy_fixture(dir, cases[i].key, "pki/kubelet-client.key.tmp");
        kubeboot_agent *agent = NULL;
        CHECK_RC(kubeboot_agent_new(NULL, &agent), OK);
        kubeboot_agent_config c = node_config(dir, cases[i].node, true);
        CHECK_RC(kubeboot_agent_start(agent, &c), OK);
        struct run r = approved();
        r.create = cases[i].create, r.create_status = cases[i].status, r.watch = cases[i].watch, r.chunk = 64;
        kubeboot_action a = run_agent(agent, REC_NOW, &r);
        CHECK(a.kind == KUBEBOOT_ACTION_KIND_FAILED && a.of.failed.result == cases[i].want);
        CHECK(str_has(a.of.failed.detail, cases[i].detail) || str_has(a.of.failed.line, cases[i].detail));
        CHECK(!exists(dir, "pki/kubelet-client-current.pem") && !exists(dir, "kubelet.conf"));
        CHECK(exists(dir, "pki/kubelet-client.key.tmp")); /* kept for the next try */
        kubeboot_agent_free(agent);
        remove_dir(dir);
    }
}

/* The hosts' agent on the heap: no bootstrap kubeconfig; the recorded bootstrap through
   pushback, a broken connection and an early end of the watch; valid credentials; the metrics;
   polling with GET; a new key from the caller's entropy; answers out of turn; NULLs. */
static void agent_on_the_heap(void) {
    char tmpl[] = "/tmp/kubeboot-c-agent-XXXXXX";
    char *dir = node_dir(tmpl, false);
    if (!dir) return;
    kubeboot_agent *agent = NULL;
    CHECK_RC(kubeboot_agent_new(NULL, NULL), NULLP);
    kubeboot_capacities bad = SMALL;
    bad.path = 1;
    CHECK_RC(kubeboot_agent_new(&bad, &agent), KUBEBOOT_RESULT_TOO_LARGE);
    CHECK(agent == NULL);

    /* Without a bootstrap kubeconfig: the typed reason, nothing written. */
    CHECK_RC(kubeboot_agent_new(NULL, &agent), OK);
    kubeboot_agent_config nb = node_config(dir, "rec-1", false);
    CHECK_RC(kubeboot_agent_start(agent, &nb), OK);
    struct run r = approved();
    kubeboot_action a = run_agent(agent, REC_NOW, &r);
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_FAILED && a.of.failed.result == KUBEBOOT_RESULT_STORE_NOT_FOUND);
    CHECK(str_has(a.of.failed.detail, "no bootstrap kubeconfig"));
    CHECK(r.requests == 0 && !exists(dir, "pki") && !exists(dir, "kubelet.conf"));

    /* A new key from the caller's entropy: the create names that key's node-csr. Refused (401):
       typed, the key cache kept. The same agent, started again. */
    uint8_t entropy[KUBEBOOT_KEY_ENTROPY_LEN];
    for (size_t i = 0; i < sizeof entropy; i++) entropy[i] = (uint8_t)(7 * i + 1);
    kubeboot_agent_config c = node_config(dir, "rec-1", true);
    CHECK_RC(kubeboot_agent_start(agent, &c), OK);
    r = approved();
    r.entropy = entropy, r.create = "recorded/csr-create-401-wrong-secret.json", r.create_status = 401;
    a = run_agent(agent, REC_NOW, &r);
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_FAILED && a.of.failed.result == KUBEBOOT_RESULT_UNAUTHORIZED);
    kubeboot_key *k = NULL;
    char name[KUBEBOOT_NODE_CSR_NAME_LEN];
    size_t n = 0;
    CHECK_RC(kubeboot_key_from_entropy(entropy, sizeof entropy, &k), OK);
    CHECK_RC(kubeboot_key_node_csr_name(k, S("rec-1"), name, sizeof name, &n), OK);
    CHECK(r.entropies == 1 && r.create_name[0] && eq(name, n, r.create_name));
    kubeboot_key_free(k);
    /* (a key made for a refused request is of no use: removed with its directory) */
    CHECK(!exists(dir, "pki/kubelet-client.key.tmp") && !exists(dir, "kubelet.conf"));

    /* The recorded bootstrap: the create broken once and pushed back once (429, Retry-After: 1),
       the first watch ended early. The key cache holds the recorded key. */
    char p[512];
    snprintf(p, sizeof p, "%s/pki", dir);
    CHECK(mkdir(p, 0700) == 0 || errno == EEXIST);
    copy_fixture(dir, "recorded/approved.key.pem", "pki/kubelet-client.key.tmp");
    CHECK_RC(kubeboot_agent_start(agent, &c), OK);
    r = approved();
    r.drop_first = r.pushback = r.end_first = true;
    a = run_agent(agent, REC_NOW, &r);
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_DONE);
    CHECK(r.creates == 3 && r.watches == 2 && r.said_retry && r.sleeps >= 2);
    CHECK(a.of.done.client.not_after > REC_NOW && a.of.done.client.rotation_deadline > REC_NOW);
    int64_t not_after = a.of.done.client.not_after;
    CHECK(exists(dir, "pki/kubelet-client-current.pem") && exists(dir, "kubelet.conf"));
    CHECK(!exists(dir, "pki/kubelet-client.key.tmp"));
    /* The issued certificate passes the stand-alone validation too (recorded client CA). */
    kubeboot_expected x;
    memset(&x, 0, sizeof x);
    x.node_name = "rec-1", x.node_name_len = 5, x.profile = KUBEBOOT_PROFILE_CLIENT;
    size_t pn = 0, cn = 0, kn = 0;
    snprintf(p, sizeof p, "%s/pki/kubelet-client-current.pem", dir);
    unsigned char *pair = read_file(p, &pn), *ca = data("recorded/client-ca.pem", &cn);
    unsigned char *kp = data("recorded/approved.key.pem", &kn);
    uint8_t spki[KUBEBOOT_KEY_SPKI_LEN];
    CHECK_RC(kubeboot_key_from_pem(kp, kn, &k), OK);
    CHECK_RC(kubeboot_key_public_spki_der(k, spki, sizeof spki, &n), OK);
    kubeboot_verified v;
    CHECK(pair != NULL);
    if (pair) CHECK_RC(kubeboot_verify_issued(pair, pn, ca, cn, &x, spki, sizeof spki, REC_NOW + 1, &v), OK);
    CHECK(v.not_after == not_after && eq(v.ca_subject, v.ca_subject_len, "CN=kubeboot-e2e-client-ca"));
    kubeboot_key_free(k);
    free(pair), free(ca), free(kp);
    kubeboot_agent_free(agent);

    /* Again: the credentials are valid, nothing is sent. */
    CHECK_RC(kubeboot_agent_new(NULL, &agent), OK);
    CHECK_RC(kubeboot_agent_start(agent, &c), OK);
    r = approved();
    a = run_agent(agent, REC_NOW + 60, &r);
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_DONE && r.requests == 0 && a.of.done.client.not_after == not_after);
    /* The metrics, as data (copied out, rendered later: a server thread's way): the valid
       certificate's TTL at the time asked, no renewal error, no serving certificate (+Inf); a
       short buffer gets the size, NULLs are refused. */
    kubeboot_metrics m;
    memset(&m, 0, sizeof m);
    CHECK_RC(kubeboot_agent_metrics(agent, &m), OK);
    CHECK(m.has_client && m.client_not_after == not_after && !m.has_serving);
    CHECK(m.client_renew_errors == 0 && m.serving_rotation_count == 0 && m.serving_rotation_buckets[10] == 0);
    char text[KUBEBOOT_METRICS_TEXT_CAP];
    size_t tn = 0, need = 0;
    CHECK_RC(kubeboot_metrics_text(&m, not_after - 100, text, sizeof text, &tn), OK);
    CHECK(find_bytes(text, tn, "\nkubelet_certificate_manager_client_ttl_seconds 100\n", 52) != NULL);
    CHECK(find_bytes(text, tn, "\nkubelet_certificate_manager_server_ttl_seconds +Inf\n", 53) != NULL);
    CHECK(find_bytes(text, tn, "\nkubelet_certificate_manager_client_expiration_renew_errors 0\n", 62) != NULL);
    CHECK_RC(kubeboot_metrics_text(&m, REC_NOW, text, 10, &need), SHORT);
    CHECK(need > 10 && need <= sizeof text);
    m.serving_rotation_buckets[0] = 2, m.serving_rotation_buckets[3] = 1, m.serving_rotation_count = 3;
    CHECK_RC(kubeboot_metrics_text(&m, REC_NOW, text, sizeof text, &tn), OK);
    CHECK(find_bytes(text, tn, "_bucket{le=\"60\"} 2\n", 19) != NULL);
    CHECK(find_bytes(text, tn, "_bucket{le=\"86400\"} 3\n", 22) != NULL);
    CHECK_RC(kubeboot_agent_metrics(NULL, &m), NULLP);
    CHECK_RC(kubeboot_agent_metrics(agent, NULL), NULLP);
    CHECK_RC(kubeboot_metrics_text(NULL, REC_NOW, text, sizeof text, &tn), NULLP);
    CHECK_RC(kubeboot_metrics_text(&m, REC_NOW, text, sizeof text, NULL), NULLP);
    CHECK_RC(kubeboot_metrics_check_textfile("node.prom", 9), OK);
    CHECK_RC(kubeboot_metrics_check_textfile("node.txt", 8), KUBEBOOT_RESULT_INVALID_CONFIG);
    /* Done, not sleeping: a wake changes nothing. */
    bool woken = true;
    CHECK_RC(kubeboot_agent_wake(agent, &woken), OK);
    CHECK(!woken);
    CHECK_RC(kubeboot_agent_wake(NULL, &woken), NULLP);
    CHECK_RC(kubeboot_agent_wake(agent, NULL), NULLP);
    /* Answers out of turn are ignored; NULLs refused. */
    bool keep;
    kubeboot_http_response resp = {429, "1", 1, NULL, 0};
    CHECK_RC(kubeboot_agent_on_http_response(agent, REC_NOW, &resp), OK);
    CHECK_RC(kubeboot_agent_on_http_response(NULL, REC_NOW, &resp), NULLP);
    CHECK_RC(kubeboot_agent_on_http_response(agent, REC_NOW, NULL), NULLP);
    resp.retry_after = NULL;
    CHECK_RC(kubeboot_agent_on_http_response(agent, REC_NOW, &resp), NULLP); /* a length without bytes */
    resp = (kubeboot_http_response){200, NULL, 0, NULL, 5};
    CHECK_RC(kubeboot_agent_on_http_response(agent, REC_NOW, &resp), NULLP);
    CHECK_RC(kubeboot_agent_on_read(agent, REC_NOW, OK, NULL, 0), OK);
    CHECK_RC(kubeboot_agent_on_read(NULL, REC_NOW, OK, NULL, 0), NULLP);
    CHECK_RC(kubeboot_agent_on_read(agent, REC_NOW, OK, NULL, 3), NULLP);
    CHECK_RC(kubeboot_agent_on_file_done(agent, REC_NOW, OK), OK);
    CHECK_RC(kubeboot_agent_on_file_done(NULL, REC_NOW, OK), NULLP);
    CHECK_RC(kubeboot_agent_on_entropy(agent, entropy, sizeof entropy), OK);
    CHECK_RC(kubeboot_agent_on_entropy(NULL, entropy, sizeof entropy), NULLP);
    CHECK_RC(kubeboot_agent_on_entropy(agent, NULL, 32), NULLP);
    CHECK_RC(kubeboot_agent_on_stream_end(agent, REC_NOW), OK);
    CHECK_RC(kubeboot_agent_on_stream_end(NULL, REC_NOW), NULLP);
    keep = true;
    CHECK_RC(kubeboot_agent_on_stream_idle(agent, REC_NOW, &keep), OK);
    CHECK(!keep); /* no watch open */
    kubeboot_event ev;
    bool has = true;
    CHECK_RC(kubeboot_agent_next_event(agent, &ev, &has), OK);
    CHECK(!has);
    CHECK_RC(kubeboot_agent_perform_file_action(agent, REC_NOW, text, sizeof text, &n), KUBEBOOT_RESULT_INVALID_STATE);
    CHECK_RC(kubeboot_agent_perform_entropy(agent), KUBEBOOT_RESULT_INVALID_STATE);
    CHECK_RC(kubeboot_agent_perform_entropy(NULL), NULLP);
    CHECK_RC(kubeboot_agent_poll(agent, REC_NOW, NULL), NULLP);
    CHECK_RC(kubeboot_agent_poll(NULL, REC_NOW, &a), NULLP);
    CHECK_RC(kubeboot_agent_on_stream_data(agent, REC_NOW, NULL, 0, NULL), NULLP);
    CHECK_RC(kubeboot_agent_on_stream_data(NULL, REC_NOW, NULL, 0, &keep), NULLP);
    CHECK_RC(kubeboot_agent_on_transport_error(agent, REC_NOW, NULL, 3), NULLP);
    CHECK_RC(kubeboot_agent_on_transport_error(NULL, REC_NOW, NULL, 0), NULLP);
    CHECK_RC(kubeboot_agent_poll(agent, REC_NOW, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_DONE); /* still */
    kubeboot_agent_free(agent);
    kubeboot_agent_free(NULL);
    remove_dir(dir);

    /* Polling with GET instead of watching. */
    char tmpl2[] = "/tmp/kbpXXXXXX"; /* short: the paths fit 64 bytes */
    dir = node_dir(tmpl2, true);
    if (!dir) return;
    CHECK_RC(kubeboot_agent_new(&SMALL, &agent), OK);
    c = node_config(dir, "rec-1", true);
    c.poll = true;
    CHECK_RC(kubeboot_agent_start(agent, &c), OK);
    r = approved();
    a = run_agent(agent, REC_NOW, &r);
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_DONE && r.gets >= 1 && r.watches == 0);
    kubeboot_agent_free(agent);
    remove_dir(dir);
}

void test_agent(void) {
    agent_in_static_block();
    agent_on_the_stack();
    agent_on_the_heap();
    recorded_failures();
}

/* ---------------------------------------------------------------------------------------- */
/* A node key in a device, through the ABI: the "token" here is a software key (the recorded
   approval's, so the recorded certificate matches), answered the way a front-end answers a
   PKCS#11 token: GENERATE with kubeboot_pkcs11_key_reference, SIGN through the C sign callback
   (kubeboot_agent_sign_with), PUBLIC with the point. The files hold the reference only. */

#define DEV "pkcs11:token=sim;serial=0042?module-path=/opt/sim%20hsm.so&pin-source=/etc/kb/pin"

struct sim_token {
    const kubeboot_key *key;
    int generated, signed_, publics, destroyed, fail;
};

/* Answer a KEY action as the token would. */
static void sim_key(kubeboot_agent *agent, int64_t now, const kubeboot_key_action *k, void *token) {
    struct sim_token *t = token;
    uint8_t point[KUBEBOOT_KEY_POINT_LEN];
    CHECK_RC(kubeboot_key_public_point(t->key, point), OK);
    if (t->fail) {
        CHECK_RC(kubeboot_agent_on_key_error(agent, now, S("pkcs11 token=sim: C_Login: CKR_PIN_INCORRECT")), OK);
        return;
    }
    CHECK(k->holder == KUBEBOOT_KEY_HOLDER_PKCS11);
    switch (k->op) {
    case KUBEBOOT_KEY_OP_KIND_GENERATE: {
        t->generated++;
        CHECK(str_is(k->device, DEV));
        CHECK(k->label.len > 15 && memcmp(k->label.data, "kubelet-client-", 15) == 0);
        uint8_t ref[KUBEBOOT_KEY_REF_MAX_LEN];
        size_t n = 0, need = 0;
        const uint8_t id[] = {0xde, 0xad, 0x01};
        CHECK_RC(kubeboot_pkcs11_key_reference(k->device.data, k->device.len, k->label.data, k->label.len, id,
                                               sizeof id, ref, 10, &need),
                 SHORT);
        CHECK(need > 10 && need <= sizeof ref);
        CHECK_RC(kubeboot_pkcs11_key_reference(k->device.data, k->device.len, k->label.data, k->label.len, id,
                                               sizeof id, ref, sizeof ref, &n),
                 OK);
        CHECK(n > 40 && memcmp(ref, "-----BEGIN PKCS#11 PROVIDER URI-----\n", 37) == 0);
        /* A point of the wrong length, or an answer to another operation: refused, unanswered. */
        CHECK_RC(kubeboot_agent_on_key_generated(agent, now, ref, n, point, 64), KUBEBOOT_RESULT_INVALID_PARAMETER);
        CHECK_RC(kubeboot_agent_on_key_public(agent, now, point, sizeof point), KUBEBOOT_RESULT_INVALID_STATE);
        CHECK_RC(kubeboot_agent_on_key_destroyed(agent, now), KUBEBOOT_RESULT_INVALID_STATE);
        CHECK_RC(kubeboot_agent_on_key_generated(agent, now, ref, n, point, sizeof point), OK);
        break;
    }
    case KUBEBOOT_KEY_OP_KIND_SIGN: {
        t->signed_++;
        CHECK(k->message.len > 100 && k->key_ref.len > 40);
        struct cb_state st = {t->key, 0, 0};
        kubeboot_signer signer;
        memset(&signer, 0, sizeof signer);
        CHECK_RC(kubeboot_agent_sign_with(agent, now, &signer), NULLP); /* no function */
        signer.sign = sign_cb;
        signer.userdata = &st;
        memcpy(signer.public_point, point, sizeof point);
        CHECK_RC(kubeboot_agent_on_key_signature(agent, now, point, 63), KUBEBOOT_RESULT_INVALID_PARAMETER);
        CHECK_RC(kubeboot_agent_sign_with(agent, now, &signer), OK);
        CHECK(st.calls == 1);
        CHECK_RC(kubeboot_agent_sign_with(agent, now, &signer), KUBEBOOT_RESULT_INVALID_STATE); /* answered */
        break;
    }
    case KUBEBOOT_KEY_OP_KIND_PUBLIC: {
        t->publics++;
        /* The reference names the key the GENERATE made: its URI, its attributes decoded. */
        char uri[KUBEBOOT_PKCS11_URI_MAX_LEN];
        size_t un = 0, vn = 0;
        uint8_t v[64];
        bool found = false;
        CHECK_RC(kubeboot_key_reference_uri(k->key_ref.data, k->key_ref.len, uri, sizeof uri, &un), OK);
        CHECK(find_bytes(uri, un, ";id=%de%ad%01;type=private?module-path=", 39) != NULL);
        CHECK_RC(kubeboot_pkcs11_uri_attribute(uri, un, S("module-path"), v, sizeof v, &vn, &found), OK);
        CHECK(found && eq(v, vn, "/opt/sim hsm.so"));
        CHECK_RC(kubeboot_pkcs11_uri_attribute(uri, un, S("id"), v, sizeof v, &vn, &found), OK);
        CHECK(found && vn == 3 && v[0] == 0xde && v[2] == 0x01);
        CHECK_RC(kubeboot_pkcs11_uri_attribute(uri, un, S("serial"), v, sizeof v, &vn, &found), OK);
        CHECK(found && eq(v, vn, "0042"));
        CHECK_RC(kubeboot_pkcs11_uri_attribute(uri, un, S("model"), v, sizeof v, &vn, &found), OK);
        CHECK(!found && vn == 0);
        CHECK_RC(kubeboot_agent_on_key_public(agent, now, point, sizeof point), OK);
        break;
    }
    case KUBEBOOT_KEY_OP_KIND_DESTROY:
        t->destroyed++;
        CHECK_RC(kubeboot_agent_on_key_destroyed(agent, now), OK);
        break;
    default:
        CHECK(!"unknown key operation");
    }
}

void test_agent_device(void) {
    char tmpl[] = "/tmp/kubeboot-c-device-XXXXXX";
    char *dir = node_dir(tmpl, false);
    if (!dir) return;
    size_t n = 0;
    unsigned char *b = data("recorded/approved.key.pem", &n);
    kubeboot_key *key = NULL;
    CHECK_RC(kubeboot_key_from_pem(b, n, &key), OK);
    free(b);
    struct sim_token t = {key, 0, 0, 0, 0, 0};

    /* Bad device names: refused at start. */
    kubeboot_agent *agent = NULL;
    CHECK_RC(kubeboot_agent_new(NULL, &agent), OK);
    kubeboot_agent_config c = node_config(dir, "rec-1", true);
    kubeboot_agent_config bad = c;
    bad.key_device = "pkcs11:token=sim;colour=blue?module-path=/m.so";
    bad.key_device_len = strlen(bad.key_device);
    CHECK_RC(kubeboot_agent_start(agent, &bad), KUBEBOOT_RESULT_INVALID_KEY_REFERENCE);
    bad.key_device = "pkcs11:token=sim;object=k?module-path=/m.so"; /* a device names no object */
    bad.key_device_len = strlen(bad.key_device);
    CHECK_RC(kubeboot_agent_start(agent, &bad), KUBEBOOT_RESULT_INVALID_KEY_REFERENCE);

    /* The token fails: the typed reason with the device's words, nothing written. */
    c.key_device = DEV;
    c.key_device_len = strlen(DEV);
    t.fail = 1;
    CHECK_RC(kubeboot_agent_start(agent, &c), OK);
    struct run r = approved();
    r.token = &t;
    kubeboot_action a = run_agent(agent, REC_NOW, &r);
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_FAILED && a.of.failed.result == KUBEBOOT_RESULT_KEY_DEVICE);
    CHECK(str_has(a.of.failed.detail, "CKR_PIN_INCORRECT"));
    CHECK(r.requests == 0 && !exists(dir, "pki/kubelet-client-current.pem") && !exists(dir, "kubelet.conf"));
    CHECK_RC(kubeboot_agent_on_key_error(agent, REC_NOW, NULL, 0), KUBEBOOT_RESULT_INVALID_STATE);

    /* Bootstrap: the key made in the token, the CSR signed there, the reference stored. */
    t.fail = 0;
    CHECK_RC(kubeboot_agent_start(agent, &c), OK);
    r = approved();
    r.token = &t, r.pushback = true;
    a = run_agent(agent, REC_NOW, &r);
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_DONE);
    CHECK(t.generated == 1 && t.signed_ == 1 && t.destroyed == 0 && r.requests == 4); /* the first create pushed back */
    CHECK(file_has(dir, "pki/kubelet-client-current.pem", "-----BEGIN PKCS#11 PROVIDER URI-----"));
    CHECK(!file_has(dir, "pki/kubelet-client-current.pem", "PRIVATE KEY-----"));
    CHECK(!exists(dir, "pki/kubelet-client.key.tmp"));

    /* Again: the token tells the key's point, the credentials are valid, nothing is sent. */
    CHECK_RC(kubeboot_agent_start(agent, &c), OK);
    r = approved();
    r.token = &t;
    a = run_agent(agent, REC_NOW + 60, &r);
    CHECK(a.kind == KUBEBOOT_ACTION_KIND_DONE && r.requests == 0 && t.publics > 0 && t.generated == 1);
    kubeboot_agent_free(agent);

    /* The helpers refuse what the agent refuses; NULLs are typed. */
    char out[64];
    size_t on = 0;
    bool found = false;
    CHECK_RC(kubeboot_pkcs11_key_reference(S("tpm"), S("k"), NULL, 0, (uint8_t *)out, sizeof out, &on),
             KUBEBOOT_RESULT_INVALID_KEY_REFERENCE);
    CHECK_RC(kubeboot_pkcs11_key_reference(S(DEV), S("k"), NULL, 0, (uint8_t *)out, sizeof out, NULL), NULLP);
    CHECK_RC(kubeboot_key_reference_uri((const uint8_t *)"x", 1, out, sizeof out, &on), KUBEBOOT_RESULT_MALFORMED_KEY);
    CHECK_RC(kubeboot_pkcs11_uri_attribute(S("pkcs11:token=a;pin-value=1"), S("token"), (uint8_t *)out, sizeof out,
                                           &on, &found),
             KUBEBOOT_RESULT_INVALID_KEY_REFERENCE);
    CHECK_RC(kubeboot_pkcs11_uri_attribute(S("pkcs11:token=a"), S("colour"), (uint8_t *)out, sizeof out, &on, &found),
             KUBEBOOT_RESULT_INVALID_PARAMETER);
    CHECK_RC(kubeboot_pkcs11_uri_attribute(S("pkcs11:token=a"), S("token"), (uint8_t *)out, sizeof out, &on, NULL),
             NULLP);
    CHECK_RC(kubeboot_agent_on_key_public(NULL, REC_NOW, (const uint8_t *)out, 65), NULLP);
    CHECK_RC(kubeboot_agent_on_key_generated(NULL, REC_NOW, NULL, 0, NULL, 0), NULLP);
    CHECK_RC(kubeboot_agent_on_key_signature(NULL, REC_NOW, NULL, 0), NULLP);
    CHECK_RC(kubeboot_agent_on_key_destroyed(NULL, REC_NOW), NULLP);
    CHECK_RC(kubeboot_agent_on_key_error(NULL, REC_NOW, NULL, 0), NULLP);
    CHECK_RC(kubeboot_agent_sign_with(NULL, REC_NOW, NULL), NULLP);
    kubeboot_key_free(key);
    remove_dir(dir);
}
