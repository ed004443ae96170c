/* kubeboot through its C ABI (include/kubeboot.h) on a Cortex-M4 (QEMU mps2-an386), linked
 * against libkubeboot.a built without std: no allocator (the agent in a static block the image
 * sizes, key and token handles in static pools), no OS RNG. Parses a token, derives a node key
 * from fixed entropy, builds the client CSR and its object, verifies an issued certificate
 * (core/tests/data/ec-leaf.crt by ec-ca.crt, scratch from the caller), runs the agent on a
 * microcontroller's capacities through a bootstrap against the recorded apiserver's answers
 * (core/tests/data/recorded) with its files in RAM (flash.c), refuses malformed input, and
 * reports its footprint. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flash.h"
#include "kubeboot.h"

void sh_puts(const char *s);

extern uint32_t __sidata, __sdata, __edata, __ebss, __stack_top;

static int failed;

static size_t slen(const char *s)
{
    size_t n = 0;
    while (s[n]) n++;
    return n;
}

static bool prefix(const void *buf, size_t len, const char *p)
{
    size_t n = slen(p);
    if (len < n) return false;
    const uint8_t *b = buf;
    for (size_t i = 0; i < n; i++)
        if (b[i] != (uint8_t)p[i]) return false;
    return true;
}

static bool same(const void *a, size_t alen, const char *s) { return alen == slen(s) && prefix(a, alen, s); }

static void put_uint(unsigned long v)
{
    char buf[24];
    char *p = buf + sizeof buf;
    *--p = 0;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    sh_puts(p);
}

/* (len bytes of text, not NUL-terminated) */
static void put_text(const char *s, size_t len)
{
    char buf[129];
    while (len) {
        size_t n = len < sizeof buf - 1 ? len : sizeof buf - 1;
        for (size_t i = 0; i < n; i++) buf[i] = s[i];
        buf[n] = 0;
        sh_puts(buf);
        s += n, len -= n;
    }
}

static void check(bool ok, const char *what)
{
    sh_puts(what);
    sh_puts(ok ? " ok\n" : " FAILED\n");
    if (!ok) failed = 1;
}

/* ---- stack painting (as in the Rust firmware) ---- */
#define PAINT 0xC0FFEE11u
#define PROBE (64u * 1024u)

static uintptr_t paint_bottom(void) { return (uintptr_t)&__stack_top - PROBE; }

static __attribute__((always_inline)) inline void paint_stack(void)
{
    uintptr_t sp;
    __asm volatile("mov %0, sp" : "=r"(sp));
    for (volatile uint32_t *p = (uint32_t *)paint_bottom(); (uintptr_t)p < sp - 128; p++) *p = PAINT;
}

static size_t stack_peak(void)
{
    volatile uint32_t *p = (uint32_t *)paint_bottom();
    while ((uintptr_t)p < (uintptr_t)&__stack_top && *p == PAINT) p++;
    return (uintptr_t)&__stack_top - (uintptr_t)p;
}

/* 32 bytes: SHA-256("k8s-bootstrap-spec-test-vector-p256"), the spec's key K1. */
static const uint8_t ENTROPY[32] = {
    0x14, 0x1c, 0xe7, 0x4a, 0x3e, 0x4b, 0x20, 0x5f, 0x7e, 0x9c, 0xdf, 0x46, 0x3c, 0x9f, 0x50, 0xba,
    0x3e, 0xc8, 0x91, 0x81, 0xec, 0x50, 0xf1, 0x2d, 0x26, 0x10, 0xcd, 0x43, 0xa7, 0x4a, 0x8f, 0xbc,
};
#define NODE "node-1"
/* Validity of core/tests/data/ec-leaf.crt: 2026-12-02T10:39:18Z .. 2036-11-29T10:39:18Z. */
#define NOT_BEFORE 1796207958LL
#define NOT_AFTER 2111567958LL
#define NOW 1811808000LL

static uint8_t csr[KUBEBOOT_CSR_MAX_LEN];
static size_t csr_len;

/* The EC fixtures, embedded by the assembler (the run script passes -Wa,-I core/tests/data). */
#define INCBIN(sym, file)                                                                      \
    __asm__(".section .rodata." #sym ",\"a\"\n.global " #sym "\n.balign 4\n" #sym ":\n"         \
            ".incbin \"" file "\"\n.global " #sym "_end\n" #sym "_end:\n.previous\n")
INCBIN(ec_ca, "ec-ca.crt");
INCBIN(ec_leaf, "ec-leaf.crt");
extern const uint8_t ec_ca[], ec_ca_end[], ec_leaf[], ec_leaf_end[];
#define EC_CA ec_ca, (size_t)(ec_ca_end - ec_ca)
#define EC_LEAF ec_leaf, (size_t)(ec_leaf_end - ec_leaf)

/* Decoded DER of the leaf and the CA (kubeboot_verify_scratch_len: 1.2 KiB for the fixtures). */
static uint8_t scratch[2048];
static struct kubeboot_verified verified;

static kubeboot_result verify_as(const char *node, const uint8_t *spki, size_t spki_len,
                                 const uint8_t *cert, size_t cert_len, const uint8_t *ca,
                                 size_t ca_len, int64_t now, size_t scratch_len, size_t *needed)
{
    struct kubeboot_expected x = {0};
    x.node_name = node;
    x.node_name_len = slen(node);
    x.profile = KUBEBOOT_PROFILE_CLIENT;
    return kubeboot_verify_issued_scratch(cert, cert_len, ca, ca_len, &x, spki, spki_len, now,
                                          scratch, scratch_len, needed, &verified);
}

static __attribute__((noinline)) void step_token(void)
{
    struct kubeboot_token *t = NULL;
    char id[8], user[32];
    size_t id_len = 0, user_len = 0;
    bool ok = kubeboot_token_parse("abcdef.0123456789abcdef", 23, &t) == KUBEBOOT_RESULT_OK &&
              kubeboot_token_id(t, id, sizeof id, &id_len) == KUBEBOOT_RESULT_OK &&
              same(id, id_len, "abcdef") &&
              kubeboot_token_user_name(t, user, sizeof user, &user_len) == KUBEBOOT_RESULT_OK &&
              same(user, user_len, "system:bootstrap:abcdef");
    kubeboot_token_free(t);
    check(ok, "token");
}

static __attribute__((noinline)) struct kubeboot_key *step_key(void)
{
    struct kubeboot_key *key = NULL;
    uint8_t spki[KUBEBOOT_KEY_SPKI_LEN];
    size_t n = 0;
    bool ok = kubeboot_key_from_entropy(ENTROPY, sizeof ENTROPY, &key) == KUBEBOOT_RESULT_OK &&
              kubeboot_key_public_spki_der(key, spki, sizeof spki, &n) == KUBEBOOT_RESULT_OK &&
              n == 91 && spki[0] == 0x30;
    check(ok, "key");
    return key;
}

/* The client CSR of node, signed with key. */
static struct kubeboot_csr_spec client_spec(const char *node, const struct kubeboot_key *key)
{
    struct kubeboot_csr_spec s = {0};
    s.profile = KUBEBOOT_PROFILE_CLIENT;
    s.node_name = node;
    s.node_name_len = slen(node);
    s.format = KUBEBOOT_FORMAT_PEM;
    s.key = key;
    return s;
}

static __attribute__((noinline)) void step_csr(const struct kubeboot_key *key)
{
    struct kubeboot_csr_spec s = client_spec(NODE, key);
    kubeboot_result r = kubeboot_csr_write(&s, csr, sizeof csr, &csr_len);
    check(r == KUBEBOOT_RESULT_OK && prefix(csr, csr_len, "-----BEGIN CERTIFICATE REQUEST-----\n"),
          "csr");
}

static __attribute__((noinline)) void step_object(const struct kubeboot_key *key)
{
    char name[KUBEBOOT_NODE_CSR_NAME_LEN];
    size_t name_len = 0, json_len = 0;
    static char json[2048];
    bool ok = kubeboot_key_node_csr_name(key, NODE, slen(NODE), name, sizeof name, &name_len) ==
                  KUBEBOOT_RESULT_OK &&
              name_len == 52 && prefix(name, name_len, "node-csr-") &&
              kubeboot_csr_object_json(csr, csr_len, name, name_len, KUBEBOOT_PROFILE_CLIENT, 86400,
                                       json, sizeof json, &json_len) == KUBEBOOT_RESULT_OK &&
              prefix(json, json_len, "{\"apiVersion\":\"certificates.k8s.io/v1\"");
    check(ok, "object");
}

static __attribute__((noinline)) void step_verify(const struct kubeboot_key *key)
{
    uint8_t spki[KUBEBOOT_KEY_SPKI_LEN];
    size_t n = 0, need = 0;
    bool ok = kubeboot_key_public_spki_der(key, spki, sizeof spki, &n) == KUBEBOOT_RESULT_OK &&
              kubeboot_verify_scratch_len(EC_LEAF, EC_CA, &need) == KUBEBOOT_RESULT_OK &&
              need > 0 && need <= sizeof scratch &&
              verify_as(NODE, spki, n, EC_LEAF, EC_CA, NOW, need, NULL) == KUBEBOOT_RESULT_OK &&
              verified.not_before == NOT_BEFORE && verified.not_after == NOT_AFTER &&
              verified.ca_index == 0 && verified.intermediates_used == 0 &&
              same(verified.ca_subject, verified.ca_subject_len, "CN=kubernetes-ec");
    check(ok, "verify");
}

static bool refused_cert;

static void cert_case(bool good, const char *what)
{
    if (!good) {
        refused_cert = false;
        sh_puts("  cert case ");
        sh_puts(what);
        sh_puts(" not refused as expected\n");
    }
}

static __attribute__((noinline)) void refuse_cert(const struct kubeboot_key *key)
{
    uint8_t spki[KUBEBOOT_KEY_SPKI_LEN];
    size_t n = 0, need = 0, need2 = 0;
    struct kubeboot_verified before = verified;
    refused_cert = kubeboot_key_public_spki_der(key, spki, sizeof spki, &n) == KUBEBOOT_RESULT_OK &&
                   kubeboot_verify_scratch_len(EC_LEAF, EC_CA, &need) == KUBEBOOT_RESULT_OK;
    verified.ca_index = 77;
    cert_case(verify_as("node-2", spki, n, EC_LEAF, EC_CA, NOW, need, NULL) ==
                  KUBEBOOT_RESULT_VERIFY_SUBJECT_MISMATCH,
              "other node");
    cert_case(verify_as(NODE, spki, n, EC_LEAF, EC_LEAF, NOW, sizeof scratch, NULL) ==
                  KUBEBOOT_RESULT_VERIFY_UNTRUSTED,
              "self-anchored");
    cert_case(verify_as(NODE, spki, n, EC_LEAF, EC_CA, 2208988800LL, need, NULL) ==
                  KUBEBOOT_RESULT_VERIFY_EXPIRED,
              "expired (2040)");
    cert_case(verify_as(NODE, spki, n, EC_LEAF, EC_CA, NOW, 100, &need2) ==
                      KUBEBOOT_RESULT_INSUFFICIENT_SIZE &&
                  need2 == need,
              "short scratch");
    cert_case(verify_as(NODE, NULL, 5, EC_LEAF, EC_CA, NOW, need, NULL) ==
                  KUBEBOOT_RESULT_NULL_PARAMETER,
              "NULL key");
    /* Another key: the last byte of the SPKI (the point's Y) changed. */
    spki[n - 1] ^= 1;
    cert_case(verify_as(NODE, spki, n, EC_LEAF, EC_CA, NOW, need, NULL) ==
                  KUBEBOOT_RESULT_VERIFY_KEY_MISMATCH,
              "other key");
    /* Nothing was written on failure. */
    cert_case(verified.ca_index == 77, "untouched output");
    verified = before;
    check(refused_cert, "refuse certificate");
}

static __attribute__((noinline)) void refuse_token(void)
{
    static const char *const bad[] = {"", "abcdef0123456789abcdef", "abcdef.0123456789ABCDEF",
                                      "abcde.0123456789abcdef", "abcdef.0123456789abcdef0"};
    bool ok = true;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct kubeboot_token *t = NULL;
        ok = ok && kubeboot_token_parse(bad[i], slen(bad[i]), &t) == KUBEBOOT_RESULT_INVALID_TOKEN &&
             t == NULL;
    }
    struct kubeboot_token *t = NULL;
    ok = ok && kubeboot_token_parse(NULL, 5, &t) == KUBEBOOT_RESULT_NULL_PARAMETER;
    check(ok, "refuse token");
}

static __attribute__((noinline)) void refuse_key(const struct kubeboot_key *key)
{
    struct kubeboot_key *k = NULL;
    static const uint8_t zero[32], ff[32] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    static const char garbage[] = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n";
    bool ok = kubeboot_key_from_entropy(ENTROPY, 31, &k) == KUBEBOOT_RESULT_INSUFFICIENT_ENTROPY &&
              kubeboot_key_from_entropy(zero, 32, &k) == KUBEBOOT_RESULT_BAD_ENTROPY &&
              kubeboot_key_from_entropy(ff, 32, &k) == KUBEBOOT_RESULT_BAD_ENTROPY &&
              kubeboot_key_from_pem((const uint8_t *)"nope", 4, &k) == KUBEBOOT_RESULT_MALFORMED_KEY &&
              kubeboot_key_from_pem((const uint8_t *)garbage, slen(garbage), &k) ==
                  KUBEBOOT_RESULT_MALFORMED_KEY &&
              k == NULL;
    uint8_t small[64];
    size_t n = 0;
    struct kubeboot_csr_spec bad = client_spec("Node_1!", key), good = client_spec(NODE, key),
                             both = good;
    both.signer = &(struct kubeboot_signer){0};
    ok = ok && kubeboot_csr_write(&bad, csr, sizeof csr, &n) == KUBEBOOT_RESULT_INVALID_NODE_NAME &&
         kubeboot_csr_write(&both, csr, sizeof csr, &n) == KUBEBOOT_RESULT_INVALID_PARAMETER &&
         kubeboot_csr_write(&good, small, sizeof small, &n) == KUBEBOOT_RESULT_INSUFFICIENT_SIZE &&
         n > sizeof small &&
         kubeboot_csr_object_json(csr, csr_len, NULL, 0, KUBEBOOT_PROFILE_CLIENT, 60, (char *)small,
                                  sizeof small, &n) == KUBEBOOT_RESULT_INVALID_EXPIRATION_SECONDS;
    /* Handles come from a static pool of 4 per type in no-std builds: the 5th is refused as
     * such (POOL_EXHAUSTED), and freeing one makes room again. */
    struct kubeboot_key *keys[4] = {0};
    int made = 0;
    kubeboot_result last = KUBEBOOT_RESULT_OK;
    for (int i = 0; i < 4; i++)
        if ((last = kubeboot_key_from_entropy(ENTROPY, 32, &keys[i])) == KUBEBOOT_RESULT_OK) made++;
    /* One slot is held by `key` already: 3 succeed, the 4th is refused. */
    ok = ok && made == 3 && keys[3] == NULL && last == KUBEBOOT_RESULT_POOL_EXHAUSTED;
    for (int i = 0; i < 4; i++) kubeboot_key_free(keys[i]);
    ok = ok && kubeboot_key_from_entropy(ENTROPY, 32, &k) == KUBEBOOT_RESULT_OK;
    kubeboot_key_free(k);
    check(ok, "refuse key/csr");
}

/* ---- the agent against the recorded apiserver (core/tests/data/recorded) ---- */
INCBIN(rec_key, "recorded/approved.key.pem");
INCBIN(rec_ca, "recorded/client-ca.pem");
INCBIN(rec_serving_ca, "recorded/serving-ca.pem");
INCBIN(rec_created, "recorded/csr-create-201.json");
INCBIN(rec_watch, "recorded/watch-approved.json");
extern const uint8_t rec_key[], rec_key_end[], rec_ca[], rec_ca_end[], rec_serving_ca[], rec_serving_ca_end[],
    rec_created[], rec_created_end[], rec_watch[], rec_watch_end[];
#define REC(sym) sym, (size_t)(sym##_end - sym)
/* 2026-12-02T10:50:40Z, when the recording was made (the issued certificate is valid then). */
#define REC_NOW 1796208640LL

/* A microcontroller's capacities: a 4 KiB work buffer (a watch event with its certificate),
 * 1.5 KiB per CA bundle or chain, a 512-byte key, 3 KiB per file written, 64-byte paths, a
 * client certificate only. */
static const struct kubeboot_capacities CAPS = {4096, 1536, 512, 3072, 64, 0};
/* The agent's memory: at least kubeboot_agent_size(&CAPS) on this target (checked, printed). */
static uint8_t agent_mem[36 * 1024];

/* The node's bootstrap kubeconfig, as provisioned. */
static const char BOOTSTRAP[] =
    "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n"
    "    certificate-authority: serving-ca.pem\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n"
    "current-context: c\nusers:\n- name: u\n  user:\n    token: hi3rc6.cpoi3m254kzpt12t\n";

#define FILE_AT(path) path, sizeof path - 1

/* The node's files as provisioned in its flash: the bootstrap kubeconfig, the cluster's CA, the
 * CA bundle issued certificates must chain to, and the key cache with the key the recording's
 * approval is for (the key a device made on its first boot, before it lost power). */
static bool provision(void)
{
    return flash_mkdir(FILE_AT("/node/pki")) == 0 &&
           flash_write(FILE_AT("/node/bootstrap.conf"), (const uint8_t *)BOOTSTRAP, sizeof BOOTSTRAP - 1) == 0 &&
           flash_write(FILE_AT("/node/serving-ca.pem"), REC(rec_serving_ca)) == 0 &&
           flash_write(FILE_AT("/node/client-ca.pem"), REC(rec_ca)) == 0 &&
           flash_write(FILE_AT("/node/pki/kubelet-client.key.tmp"), REC(rec_key)) == 0;
}

/* The clock: the recording's time, moved on by the agent's sleeps (the board has no set RTC; a
 * device reads its RTC or SNTP). Entropy: none (QEMU's board has no TRNG); the key is the
 * cached one, so an ENTROPY action here is a failure. */
static int64_t clock_now = REC_NOW;

static void answer(struct kubeboot_agent *a, uint16_t status, const uint8_t *body, size_t len)
{
    struct kubeboot_http_response r = {status, NULL, 0, body, len};
    kubeboot_agent_on_http_response(a, clock_now, &r);
}

/* The apiserver, as recorded: /healthz, the create, the watch in 64-byte pieces (as a UART or a
 * TLS record boundary would cut it). */
static void serve(struct kubeboot_agent *a, const struct kubeboot_http_request *h)
{
    bool keep = true;
    size_t wn = (size_t)(rec_watch_end - rec_watch);
    switch (h->kind) {
    case KUBEBOOT_REQUEST_KIND_HEALTHZ:
        answer(a, 200, (const uint8_t *)"ok", 2);
        break;
    case KUBEBOOT_REQUEST_KIND_CREATE:
        answer(a, 201, REC(rec_created));
        break;
    case KUBEBOOT_REQUEST_KIND_WATCH:
        for (size_t off = 0; keep && off < wn; off += 64)
            kubeboot_agent_on_stream_data(a, clock_now, rec_watch + off, wn - off < 64 ? wn - off : 64, &keep);
        if (keep) kubeboot_agent_on_stream_end(a, clock_now);
        break;
    default:
        kubeboot_agent_on_transport_error(a, clock_now, "not recorded", 12);
    }
}

static struct kubeboot_agent_config node_config(void)
{
    struct kubeboot_agent_config c;
    kubeboot_agent_config_default(&c);
    c.front_end = "c-firmware", c.front_end_len = 10;
    c.working_dir = "/node", c.working_dir_len = 5;
    c.node_name = "rec-1", c.node_name_len = 5;
    c.kubeconfig = "kubelet.conf", c.kubeconfig_len = 12;
    c.bootstrap_kubeconfig = "bootstrap.conf", c.bootstrap_kubeconfig_len = 14;
    c.cert_dir = "pki", c.cert_dir_len = 3;
    c.ca_bundle = "client-ca.pem", c.ca_bundle_len = 13;
    c.seed = 42;
    return c;
}

/* Drive the agent to its end, printing its lines: DONE (true, in *done) or not. */
static bool drive(struct kubeboot_agent *agent, int *requests, struct kubeboot_done *done)
{
    static struct kubeboot_action act; /* (off the stack) */
    for (int i = 0; i < 200; i++) {
        kubeboot_agent_poll(agent, clock_now, &act);
        switch (act.kind) {
        case KUBEBOOT_ACTION_KIND_READ: flash_read(agent, clock_now, &act.of.read); break;
        case KUBEBOOT_ACTION_KIND_FILE: flash_step(agent, clock_now, &act.of.file); break;
        case KUBEBOOT_ACTION_KIND_HTTP: (*requests)++, serve(agent, &act.of.http); break;
        case KUBEBOOT_ACTION_KIND_SLEEP: clock_now = act.of.sleep.until; break;
        case KUBEBOOT_ACTION_KIND_EVENT:
            put_text(act.of.event.line.data, act.of.event.line.len);
            sh_puts("\n");
            break;
        case KUBEBOOT_ACTION_KIND_DONE: *done = act.of.done; return true;
        case KUBEBOOT_ACTION_KIND_FAILED:
            put_text(act.of.failed.line.data, act.of.failed.line.len);
            sh_puts("\n");
            return false;
        default: return false; /* ENTROPY, KEY: not on this board */
        }
    }
    return false;
}

static __attribute__((noinline)) void step_agent(void)
{
    size_t need = 0;
    struct kubeboot_agent *agent = NULL;
    struct kubeboot_done done = {0};
    int requests = 0;
    bool ok = kubeboot_agent_size(&CAPS, &need) == KUBEBOOT_RESULT_OK && need <= sizeof agent_mem;
    sh_puts("agent: memory=");
    put_uint(need);
    sh_puts(" block=");
    put_uint(sizeof agent_mem);
    sh_puts("\n");
    struct kubeboot_agent_config cfg = node_config();
    ok = ok && provision() && kubeboot_agent_init_in(agent_mem, sizeof agent_mem, &CAPS, &agent) == KUBEBOOT_RESULT_OK &&
         kubeboot_agent_start(agent, &cfg) == KUBEBOOT_RESULT_OK && drive(agent, &requests, &done);
    int64_t life = done.client.not_after - done.client.not_before;
    /* healthz, create, watch; the certificate valid then; the deadline at 70-90 % of its life */
    ok = ok && requests == 3 && done.client.present && !done.serving.present && done.client.not_before <= REC_NOW &&
         done.client.not_after > REC_NOW && done.client.rotation_deadline >= done.client.not_before + life * 7 / 10 &&
         done.client.rotation_deadline <= done.client.not_before + life * 9 / 10;
    /* Again, from what the flash holds now: the credentials are valid, nothing is sent. */
    requests = 0;
    ok = ok && kubeboot_agent_start(agent, &cfg) == KUBEBOOT_RESULT_OK && drive(agent, &requests, &done) &&
         requests == 0;
    kubeboot_agent_free(agent);
    sh_puts("flash: peak=");
    put_uint(flash_peak());
    sh_puts("\n");
    check(ok, "agent");
}

/* Capacities too small for what they must hold are named; a block too short is refused with
 * nothing written; a work buffer too small for the CA refresh is refused at start. */
static __attribute__((noinline)) void refuse_agent(void)
{
    struct kubeboot_capacities small = CAPS;
    kubeboot_capacity which = KUBEBOOT_CAPACITY_NONE;
    struct kubeboot_agent *agent = NULL;
    size_t need = 0;
    small.file = small.pem;
    bool ok = kubeboot_capacities_check(&small, &which) == KUBEBOOT_RESULT_TOO_LARGE &&
              which == KUBEBOOT_CAPACITY_FILE && kubeboot_agent_size(&CAPS, &need) == KUBEBOOT_RESULT_OK;
    for (size_t i = 0; i < sizeof agent_mem; i++) agent_mem[i] = 0xa5;
    ok = ok && kubeboot_agent_init_in(agent_mem, need / 2, &CAPS, &agent) == KUBEBOOT_RESULT_TOO_LARGE &&
         kubeboot_agent_init_in(agent_mem, sizeof agent_mem, &small, &agent) == KUBEBOOT_RESULT_TOO_LARGE &&
         kubeboot_agent_init_in(NULL, sizeof agent_mem, &CAPS, &agent) == KUBEBOOT_RESULT_NULL_PARAMETER &&
         agent == NULL;
    for (size_t i = 0; i < sizeof agent_mem; i++) ok = ok && agent_mem[i] == 0xa5;
    struct kubeboot_agent_config cfg = node_config();
    cfg.mode = KUBEBOOT_MODE_RUN;
    ok = ok && kubeboot_agent_init_in(agent_mem, sizeof agent_mem, &CAPS, &agent) == KUBEBOOT_RESULT_OK &&
         kubeboot_agent_start(agent, &cfg) == KUBEBOOT_RESULT_TOO_LARGE;
    kubeboot_agent_free(agent);
    check(ok, "refuse agent");
}

#define STEP(name, call)                                                                     \
    do {                                                                                     \
        paint_stack();                                                                       \
        call;                                                                                \
        size_t s = stack_peak();                                                             \
        sh_puts("stack: " name "=");                                                         \
        put_uint(s);                                                                         \
        sh_puts("\n");                                                                       \
        if (s > peak) peak = s;                                                              \
    } while (0)

int main(void)
{
    size_t peak = 0;
    struct kubeboot_key *key = NULL;
    STEP("token", step_token());
    STEP("key", key = step_key());
    if (!key) return 1;
    STEP("csr", step_csr(key));
    STEP("object", step_object(key));
    STEP("verify", step_verify(key));
    STEP("agent", step_agent());
    STEP("refuse-token", refuse_token());
    STEP("refuse-cert", refuse_cert(key));
    STEP("refuse-key", refuse_key(key));
    STEP("refuse-agent", refuse_agent());
    kubeboot_key_free(key);
    sh_puts("footprint: flash=");
    put_uint((uintptr_t)&__sidata + ((uintptr_t)&__edata - (uintptr_t)&__sdata));
    sh_puts(" ram=");
    put_uint((uintptr_t)&__ebss - 0x20000000u);
    sh_puts(" stack=");
    put_uint(peak);
    sh_puts("\n");
    return failed;
}
