/*
 * The runtime's loop (kubeboot_runtime.h): poll the agent, do what it says, answer it. Stopping,
 * waking, systemd readiness, the progress line and the credentials callback are decided here;
 * HTTPS is http.c, the metrics output metrics.c, keys in a token device.c.
 */
#define _GNU_SOURCE
#include "kubeboot_runtime.h"

#include "device.h"
#include "flag_values.h"
#include "http.h"
#include "metrics.h"

#include <curl/curl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested, wake_requested;

void kubeboot_rt_stop(void) { stop_requested = 1; }
void kubeboot_rt_wake(void) { wake_requested = 1; }
static void on_stop_signal(int sig) { (void)sig, kubeboot_rt_stop(); }
static void on_wake_signal(int sig) { (void)sig, kubeboot_rt_wake(); }

void kubeboot_rt_options_default(struct kubeboot_rt_options *o) {
    memset(o, 0, sizeof *o);
    kubeboot_agent_config_default(&o->agent);
    o->agent.mode = KUBEBOOT_MODE_RUN;
    o->agent.front_end = "c", o->agent.front_end_len = 1;
    o->max_response = KUBEBOOT_MAX_RESPONSE;
    o->handle_signals = true;
    o->program = "kubeboot-agent";
}

static int64_t now_unix(void) { return (int64_t)time(NULL); }

static bool str_is(kubeboot_str s, const char *want) { return s.len == strlen(want) && !memcmp(s.data, want, s.len); }

static int32_t utc_offset(void) {
    time_t t = time(NULL);
    struct tm tm;
    return localtime_r(&t, &tm) ? (int32_t)tm.tm_gmtoff : 0;
}

/* ---- systemd's notification socket ($NOTIFY_SOCKET, sd_notify(3)) -------------------------- */

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

/* READY=1 at the agent's first ready event, STATUS= every line (event lines hold no newline: the
   agent escapes control characters). */
static void notify_line(kubeboot_str line, bool ready, bool *was_ready) {
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "%sSTATUS=%.*s", ready && !*was_ready ? "READY=1\n" : "", (int)line.len,
                     line.data);
    *was_ready = *was_ready || ready;
    if (n > 0) notify(msg, n < (int)sizeof msg ? (size_t)n : sizeof msg - 1);
}

/* Print a line; on a terminal a progress update replaces the rows the line before took. */
static void print_line(kubeboot_str line, bool update, size_t *rows) {
    struct winsize ws;
    size_t cols = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
    if (cols && update && *rows) printf("\x1b[%zuF\x1b[J", *rows);
    printf("%.*s\n", (int)line.len, line.data);
    fflush(stdout);
    *rows = cols ? (line.len + cols - 1) / cols : 0;
}

/* ---- credentials: which pair is current, told once per change --------------------------------- */

struct creds {
    char cert_dir[4096], kubeconfig[4096];
    bool told[2], swapped[2];
    int64_t not_after[2];
};

/* path made absolute against dir */
static void absolute(char *out, size_t cap, const char *dir, size_t dir_len, const char *p, size_t len) {
    if (len && p[0] == '/') snprintf(out, cap, "%.*s", (int)len, p);
    else snprintf(out, cap, "%.*s/%.*s", (int)dir_len, dir, (int)len, p);
}

/* Which pair a file step makes current (a SWAP_CURRENT: new even if its notAfter is the old
   one's), or -1. */
static int swapped_pair(const kubeboot_file_step *f) {
    const char *server = "kubelet-server-current.pem";
    size_t n = strlen(server);
    if (f->step != KUBEBOOT_FILE_STEP_KIND_SWAP_CURRENT) return -1;
    return f->path.len >= n && memcmp(f->path.data + f->path.len - n, server, n) == 0 ? KUBEBOOT_RT_SERVING
                                                                                       : KUBEBOOT_RT_CLIENT;
}

/* Tell the program each pair the agent judged usable and that is new to it: when the agent
   reports the credentials it has just read (a changed notAfter: the pair on disk is another), and
   when it has settled (it sleeps or is done: a pair swapped in with the old one's notAfter). */
static void creds_check(struct creds *c, const kubeboot_agent *agent, const struct kubeboot_rt_options *o,
                        bool settled) {
    kubeboot_metrics m;
    if (!o->on_credentials || kubeboot_agent_metrics(agent, &m) != KUBEBOOT_RESULT_OK) return;
    for (int which = KUBEBOOT_RT_CLIENT; which <= KUBEBOOT_RT_SERVING; which++) {
        bool has = which == KUBEBOOT_RT_CLIENT ? m.has_client : m.has_serving;
        int64_t not_after = which == KUBEBOOT_RT_CLIENT ? m.client_not_after : m.serving_not_after;
        bool is_new = !c->told[which] || c->not_after[which] != not_after || (settled && c->swapped[which]);
        if (!has || !is_new) continue;
        char file[4200];
        snprintf(file, sizeof file, "%s/kubelet-%s-current.pem", c->cert_dir, which ? "server" : "client");
        struct kubeboot_rt_credentials cr = {which, file, file, which ? NULL : c->kubeconfig, not_after};
        c->told[which] = true, c->not_after[which] = not_after, c->swapped[which] = false;
        o->on_credentials(o->userdata, &cr);
    }
}

/* ---- the loop ------------------------------------------------------------------------------ */

static void say(const char *program, kubeboot_str s) { fprintf(stderr, "%s: %.*s\n", program, (int)s.len, s.data); }

/* Stopped at a request or a sleep: nothing half-done. */
static int stopped(void) {
    notify("STOPPING=1", 10);
    return 0;
}

/* What the loop prints: the agent's lines (stdout, the progress line, NOTIFY_SOCKET). */
struct out {
    size_t rows;
    bool was_ready;
};

static void say_event(void *ctx, const kubeboot_event *e) {
    struct out *out = ctx;
    print_line(e->line, e->update, &out->rows);
    notify_line(e->line, e->ready, &out->was_ready);
}

static int drive(kubeboot_agent *agent, CURL *curl, const struct kubeboot_rt_options *o, struct creds *c) {
    struct out out = {0, false};
    struct http_hooks hooks = {&stop_requested, say_event, &out};
    for (;;) {
        kubeboot_action a;
        char msg[512];
        size_t n = 0;
        int64_t now = now_unix();
        kubeboot_agent_set_utc_offset(agent, utc_offset());
        if (wake_requested) {
            bool woken = false;
            wake_requested = 0;
            kubeboot_agent_wake(agent, &woken);
        }
        if (kubeboot_agent_poll(agent, now, &a) != KUBEBOOT_RESULT_OK) return 1;
        metrics_update(agent);
        /* Every change of the metrics comes with an event; the TTLs age: rewrite then, and at
           least every KUBEBOOT_METRICS_TEXTFILE_REFRESH_SECS. */
        if (a.kind == KUBEBOOT_ACTION_KIND_EVENT || a.kind == KUBEBOOT_ACTION_KIND_DONE ||
            a.kind == KUBEBOOT_ACTION_KIND_FAILED || metrics_textfile_due(now))
            metrics_write_textfile(now);
        if (a.kind == KUBEBOOT_ACTION_KIND_SLEEP || a.kind == KUBEBOOT_ACTION_KIND_DONE) creds_check(c, agent, o, true);
        if (stop_requested && (a.kind == KUBEBOOT_ACTION_KIND_SLEEP || a.kind == KUBEBOOT_ACTION_KIND_HTTP))
            return stopped();
        switch (a.kind) {
        case KUBEBOOT_ACTION_KIND_FILE:
        case KUBEBOOT_ACTION_KIND_READ: {
            /* (the action's strings are the agent's until the next call on it: read them first) */
            int swap = a.kind == KUBEBOOT_ACTION_KIND_FILE ? swapped_pair(&a.of.file) : -1;
            if (kubeboot_agent_perform_file_action(agent, now, msg, sizeof msg, &n) != KUBEBOOT_RESULT_OK) return 1;
            if (n) say(o->program, (kubeboot_str){msg, n});
            else if (swap >= 0) c->swapped[swap] = true;
            break;
        }
        case KUBEBOOT_ACTION_KIND_ENTROPY:
            if (kubeboot_agent_perform_entropy(agent) != KUBEBOOT_RESULT_OK) return 1;
            break;
        case KUBEBOOT_ACTION_KIND_KEY:
            device_key_action(agent, now, &a.of.key, o->program);
            break;
        case KUBEBOOT_ACTION_KIND_HTTP:
            http_exchange(agent, curl, &a.of.http, o->max_response, &hooks);
            if (stop_requested) return stopped(); /* (the request abandoned, unanswered) */
            break;
        case KUBEBOOT_ACTION_KIND_SLEEP:
            /* Woken early for the textfile's refresh, it polls again (and is told to sleep on). A
               signal ends sleep(3) at once. */
            while (!stop_requested && !wake_requested && now_unix() < a.of.sleep.until &&
                   !metrics_textfile_due(now_unix()))
                sleep(1);
            break;
        case KUBEBOOT_ACTION_KIND_EVENT:
            say_event(&out, &a.of.event);
            /* (what the agent has just read and judged: a pair may have become current) */
            if (str_is(a.of.event.step, "credentials")) creds_check(c, agent, o, false);
            break;
        case KUBEBOOT_ACTION_KIND_DONE:
            return 0;
        case KUBEBOOT_ACTION_KIND_FAILED:
        default:
            print_line(a.of.failed.line, false, &out.rows);
            notify_line(a.of.failed.line, false, &out.was_ready);
            say(o->program, a.of.failed.detail);
            return 1;
        }
    }
}

/* The agent's refusal of its configuration, by name and message. */
static int refused(const char *program, kubeboot_result rc) {
    char name[64], msg[256];
    size_t nn = 0, mn = 0;
    kubeboot_result_name(rc, name, sizeof name, &nn);
    kubeboot_result_message(rc, msg, sizeof msg, &mn);
    fprintf(stderr, "%s: %.*s: %.*s\n", program, (int)nn, name, (int)mn, msg);
    return 1;
}

/* The agent made and started (its refusal printed), then driven with signals handled. */
static int start_and_drive(const struct kubeboot_rt_options *o) {
    kubeboot_agent_config cfg = o->agent;
    char cwd[4096];
    if (!cfg.working_dir) {
        if (!getcwd(cwd, sizeof cwd)) return perror("getcwd"), 1;
        cfg.working_dir = cwd, cfg.working_dir_len = strlen(cwd);
    }
    cfg.utc_offset = utc_offset();
    FILE *r = fopen("/dev/urandom", "rb");
    bool seeded = r && fread(&cfg.seed, sizeof cfg.seed, 1, r) == 1;
    if (r) fclose(r);
    if (!seeded) return perror("/dev/urandom"), 1;
    static struct creds c; /* (two paths of 4 KiB: not on the stack) */
    memset(&c, 0, sizeof c);
    absolute(c.cert_dir, sizeof c.cert_dir, cfg.working_dir, cfg.working_dir_len, cfg.cert_dir, cfg.cert_dir_len);
    absolute(c.kubeconfig, sizeof c.kubeconfig, cfg.working_dir, cfg.working_dir_len, cfg.kubeconfig,
             cfg.kubeconfig_len);
    kubeboot_agent *agent = NULL;
    kubeboot_result rc = kubeboot_agent_new(o->capacities, &agent);
    if (rc == KUBEBOOT_RESULT_OK) rc = kubeboot_agent_start(agent, &cfg);
    if (rc != KUBEBOOT_RESULT_OK) {
        kubeboot_agent_free(agent);
        return refused(o->program, rc);
    }
    stop_requested = wake_requested = 0;
    struct sigaction sa, old_term, old_int, old_hup;
    memset(&sa, 0, sizeof sa);
    if (o->handle_signals) {
        sa.sa_handler = on_stop_signal; /* (no SA_RESTART: a signal ends a sleep) */
        sigaction(SIGTERM, &sa, &old_term);
        sigaction(SIGINT, &sa, &old_int);
        sa.sa_handler = on_wake_signal;
        sigaction(SIGHUP, &sa, &old_hup);
    }
    int status = 1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK) {
        CURL *curl = curl_easy_init();
        if (curl) status = drive(agent, curl, o, &c);
        curl_easy_cleanup(curl);
        curl_global_cleanup();
    }
    if (o->handle_signals) {
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGHUP, &old_hup, NULL);
    }
    kubeboot_agent_free(agent);
    return status;
}

int kubeboot_rt_run(const struct kubeboot_rt_options *o) {
    const kubeboot_agent_config *c = &o->agent;
    if (c->attestation_len)
        return fprintf(stderr, "%s: --attestation: an attested join certifies the node key with the TPM's attestation "
                               "key (TPM2_Certify), and the C runtime has no TPM route (libcurl 7.88 has no provider "
                               "key type; README); use the Rust or Go "
                               "agent\n", o->program), 1;
    if (c->key_device && c->key_device_len == 3 && memcmp(c->key_device, "tpm", 3) == 0)
        return fprintf(stderr, "%s: key device tpm: the C runtime has no TPM route: libcurl 7.88 has no provider key "
                               "type (PROV is curl 8.12) and tpm2-pkcs11 is another key model than the TSS2 blobs the "
                               "agents share (README); use the Rust or Go agent\n", o->program), 1;
    if (!metrics_start(o->metrics_bind_address, o->metrics_textfile, o->program)) return 1;
    int status = start_and_drive(o);
    metrics_stop();
    return status;
}
