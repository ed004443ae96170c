/*
 * C tests of libkubeboot: every exported function, with NULLs, zero and short buffers, garbage
 * input, _free(NULL), the sign callback and known vectors. This file: results, tokens, keys,
 * CSRs, verification, kubeconfigs; tests_agent.c: the agent, its memory, its actions.
 *
 * Usage: kubeboot-c-tests <k1.pem> [<k1.der>]
 */
#define _POSIX_C_SOURCE 200809L
#include "tests.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int passed, failed;

static const char K1_NODE1_NAME[] = "node-csr-n8Gs_E-Z9L7aSxQqzzA00Csg_R1hDXOPVUFrdIQkVzo";

unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = malloc(65536);
    size_t n = buf ? fread(buf, 1, 65536, f) : 0;
    fclose(f);
    *len = n;
    return buf;
}

int all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

/* Portable memmem. */
const void *find_bytes(const void *hay, size_t hay_len, const void *needle, size_t needle_len) {
    const unsigned char *h = hay;
    if (needle_len == 0) return hay;
    for (size_t i = 0; i + needle_len <= hay_len; i++)
        if (memcmp(h + i, needle, needle_len) == 0) return h + i;
    return NULL;
}

int eq(const void *got, size_t got_len, const char *want) {
    return got_len == strlen(want) && (got_len == 0 || memcmp(got, want, got_len) == 0);
}

int str_is(kubeboot_str s, const char *want) { return eq(s.data, s.len, want) && (s.len > 0 || s.data == NULL); }

int str_has(kubeboot_str s, const char *needle) {
    return s.data && find_bytes(s.data, s.len, needle, strlen(needle)) != NULL;
}

/* Data files under core/tests/data (KUBEBOOT_DATA, set by the Makefile). */
static const char *data_dir(void) {
    const char *d = getenv("KUBEBOOT_DATA");
    return d && *d ? d : "../../core/tests/data";
}

unsigned char *data(const char *name, size_t *len) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir(), name);
    unsigned char *b = read_file(path, len);
    if (!b || *len == 0) {
        /* Every later check would test nothing (or crash on what it did not get): stop here. */
        fprintf(stderr, "FAIL: cannot read the test fixture %s (KUBEBOOT_DATA names core/tests/data)\n", path);
        exit(1);
    }
    return b;
}

/* What a client certificate for `node` must be. */
static kubeboot_expected client_cert(const char *node) {
    kubeboot_expected x;
    memset(&x, 0, sizeof x);
    x.node_name = node;
    x.node_name_len = strlen(node);
    x.profile = KUBEBOOT_PROFILE_CLIENT;
    return x;
}

/* ---------------------------------------------------------------------------------------- */

static void test_results(void) {
    char buf[128];
    size_t n = 12345;
    CHECK(kubeboot_version() != NULL && strcmp(kubeboot_version(), "0.4.0") == 0);

    CHECK_RC(kubeboot_result_message(KUBEBOOT_RESULT_INVALID_TOKEN, buf, sizeof buf, &n), OK);
    CHECK(n > 0 && n < sizeof buf && find_bytes(buf, n, "a-z0-9", 6) != NULL);
    CHECK_RC(kubeboot_result_message(KUBEBOOT_RESULT_INVALID_TOKEN, NULL, 0, &n), SHORT);
    size_t need = n;
    memset(buf, 0, sizeof buf);
    CHECK_RC(kubeboot_result_message(KUBEBOOT_RESULT_INVALID_TOKEN, buf, need - 1, &n), SHORT);
    CHECK(n == need && all_zero(buf, sizeof buf));
    CHECK_RC(kubeboot_result_message(KUBEBOOT_RESULT_OK, buf, sizeof buf, NULL), NULLP);
    CHECK_RC(kubeboot_result_message(KUBEBOOT_RESULT_OK, NULL, 5, &n), NULLP);
    CHECK_RC(kubeboot_result_message(424242, buf, sizeof buf, &n), OK);
    CHECK(eq(buf, n, "unknown result code"));
    CHECK_RC(kubeboot_result_message(KUBEBOOT_RESULT_POLICY_ORGANIZATION, buf, sizeof buf, &n), OK);
    CHECK(eq(buf, n, "subject organization is not system:nodes"));

    /* Names of every range; an unknown code's. */
    const struct {
        uint32_t code;
        const char *name;
    } names[] = {
        {KUBEBOOT_RESULT_VERIFY_EXPIRED, "expired"},      {KUBEBOOT_RESULT_VERIFY_NOT_YET_VALID, "not-yet-valid"},
        {KUBEBOOT_RESULT_INVALID_TOKEN, "invalid-token"}, {KUBEBOOT_RESULT_POOL_EXHAUSTED, "pool-exhausted"},
        {KUBEBOOT_RESULT_STORE_KEY_MISMATCH, "store-key-mismatch"}, {KUBEBOOT_RESULT_CSR_DENIED, "csr-denied"},
        {KUBEBOOT_RESULT_CA_BUNDLE_UNPROVEN, "ca-bundle-unproven"}, {7777, "unknown"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK_RC(kubeboot_result_name(names[i].code, buf, sizeof buf, &n), OK);
        CHECK(eq(buf, n, names[i].name));
    }
    CHECK_RC(kubeboot_result_name(KUBEBOOT_RESULT_OK, buf, 1, &n), SHORT);
    CHECK(n == 2);
    CHECK_RC(kubeboot_result_name(KUBEBOOT_RESULT_OK, buf, sizeof buf, NULL), NULLP);

    CHECK(kubeboot_result_is_verify_error(KUBEBOOT_RESULT_VERIFY_IS_CA));
    CHECK(!kubeboot_result_is_verify_error(KUBEBOOT_RESULT_POLICY_SIGNER));
    CHECK(kubeboot_result_is_policy_error(KUBEBOOT_RESULT_POLICY_SIGNER));
    CHECK(!kubeboot_result_is_policy_error(KUBEBOOT_RESULT_OK));
    /* Stable numbers. */
    CHECK(KUBEBOOT_RESULT_INVALID_TOKEN == 100 && KUBEBOOT_RESULT_VERIFY_EXPIRED == 403 &&
          KUBEBOOT_RESULT_POLICY_ORGANIZATION == 503 && KUBEBOOT_RESULT_PIN_MISMATCH == 601);
    CHECK(KUBEBOOT_RESULT_UNAUTHORIZED == 700 && KUBEBOOT_RESULT_INVALID_STATE == 711 && KUBEBOOT_RESULT_STORE_IO == 10);
    CHECK(KUBEBOOT_RESULT_POOL_EXHAUSTED == 7 && KUBEBOOT_RESULT_TOO_LARGE == 710);
}
/* ---------------------------------------------------------------------------------------- */

static void test_tokens(void) {
    kubeboot_token *t = NULL;
    char buf[1024];
    size_t n = 0;

    CHECK_RC(kubeboot_token_parse(S("abcdef.0123456789abcdef"), NULL), NULLP);
    CHECK_RC(kubeboot_token_parse(NULL, 23, &t), NULLP);
    CHECK_RC(kubeboot_token_parse(NULL, 0, &t), KUBEBOOT_RESULT_INVALID_TOKEN);
    CHECK_RC(kubeboot_token_parse(S("abcdef.0123456789abcdef\n"), &t), KUBEBOOT_RESULT_INVALID_TOKEN);
    CHECK_RC(kubeboot_token_parse(S("ABCDEF.0123456789abcdef"), &t), KUBEBOOT_RESULT_INVALID_TOKEN);
    CHECK_RC(kubeboot_token_parse("\xff\xfe\x00garbage", 10, &t), KUBEBOOT_RESULT_INVALID_TOKEN);
    CHECK(t == NULL);
    CHECK_RC(kubeboot_token_parse(S("abcdef.0123456789abcdef"), &t), OK);
    CHECK(t != NULL);

    CHECK_RC(kubeboot_token_id(t, buf, sizeof buf, &n), OK);
    CHECK(eq(buf, n, "abcdef") && n == KUBEBOOT_TOKEN_ID_LEN);
    CHECK_RC(kubeboot_token_id(NULL, buf, sizeof buf, &n), NULLP);
    CHECK_RC(kubeboot_token_id(t, buf, sizeof buf, NULL), NULLP);
    CHECK_RC(kubeboot_token_secret_name(t, NULL, 0, &n), SHORT);
    CHECK(n == KUBEBOOT_TOKEN_SECRET_NAME_LEN);
    CHECK_RC(kubeboot_token_secret_name(t, buf, sizeof buf, &n), OK);
    CHECK(eq(buf, n, "bootstrap-token-abcdef"));
    CHECK_RC(kubeboot_token_secret_name(NULL, buf, sizeof buf, &n), NULLP);
    CHECK_RC(kubeboot_token_user_name(t, buf, 5, &n), SHORT);
    CHECK(n == KUBEBOOT_TOKEN_USER_NAME_LEN);
    CHECK_RC(kubeboot_token_user_name(t, buf, sizeof buf, &n), OK);
    CHECK(eq(buf, n, "system:bootstrap:abcdef"));
    CHECK_RC(kubeboot_token_user_name(t, NULL, 3, &n), NULLP);
    CHECK_RC(kubeboot_token_wire(t, buf, KUBEBOOT_TOKEN_LEN - 1, &n), SHORT);
    CHECK(n == KUBEBOOT_TOKEN_LEN);
    CHECK_RC(kubeboot_token_wire(t, buf, KUBEBOOT_TOKEN_LEN, &n), OK);
    CHECK(eq(buf, n, "abcdef.0123456789abcdef"));
    CHECK_RC(kubeboot_token_wire(NULL, buf, sizeof buf, &n), NULLP);

    /* Manifest. */
    const char groups[] = "system:bootstrappers:kubeadm:default-node-token";
    memset(buf, 0, sizeof buf);
    CHECK_RC(kubeboot_token_secret_manifest(t, S("join \"node\""), true, 1767225600,
                                            KUBEBOOT_TOKEN_USAGE_AUTHENTICATION |
                                                KUBEBOOT_TOKEN_USAGE_SIGNING,
                                            S(groups), buf, 10, &n),
             SHORT);
    CHECK(all_zero(buf, sizeof buf));
    size_t need = n;
    CHECK_RC(kubeboot_token_secret_manifest(t, S("join \"node\""), true, 1767225600,
                                            KUBEBOOT_TOKEN_USAGE_AUTHENTICATION |
                                                KUBEBOOT_TOKEN_USAGE_SIGNING,
                                            S(groups), buf, need, &n),
             OK);
    CHECK(n == need);
    CHECK(find_bytes(buf, n, "name: bootstrap-token-abcdef\n", 29) != NULL);
    CHECK(find_bytes(buf, n, "token-secret: \"0123456789abcdef\"", 32) != NULL);
    CHECK(find_bytes(buf, n, "expiration: \"2026-01-01T00:00:00Z\"", 34) != NULL);
    CHECK(find_bytes(buf, n, "description: \"join \\\"node\\\"\"", 28) != NULL);
    CHECK(find_bytes(buf, n, "usage-bootstrap-signing: \"true\"", 31) != NULL);
    CHECK(find_bytes(buf, n, groups, sizeof groups - 1) != NULL);
    /* No description, no expiration, no groups, no usages. */
    CHECK_RC(kubeboot_token_secret_manifest(t, NULL, 0, false, 0, 0, NULL, 0, buf, sizeof buf, &n), OK);
    CHECK(find_bytes(buf, n, "expiration", 10) == NULL && find_bytes(buf, n, "usage-", 6) == NULL);
    CHECK_RC(kubeboot_token_secret_manifest(t, NULL, 0, false, 0, 8, NULL, 0, buf, sizeof buf, &n),
             KUBEBOOT_RESULT_INVALID_USAGE);
    CHECK_RC(kubeboot_token_secret_manifest(t, NULL, 0, false, 0, 1, S("system:bootstrappers:a, x"),
                                            buf, sizeof buf, &n),
             KUBEBOOT_RESULT_INVALID_GROUP);
    CHECK_RC(kubeboot_token_secret_manifest(t, "\xc3\x28", 2, false, 0, 1, NULL, 0, buf, sizeof buf, &n),
             KUBEBOOT_RESULT_INVALID_UTF8);
    CHECK_RC(kubeboot_token_secret_manifest(t, NULL, 0, true, 900000000000LL, 1, NULL, 0, buf,
                                            sizeof buf, &n),
             KUBEBOOT_RESULT_INVALID_EXPIRATION);
    CHECK_RC(kubeboot_token_secret_manifest(NULL, NULL, 0, false, 0, 1, NULL, 0, buf, sizeof buf, &n), NULLP);
    CHECK_RC(kubeboot_token_secret_manifest(t, NULL, 0, false, 0, 1, NULL, 5, buf, sizeof buf, &n), NULLP);
    CHECK_RC(kubeboot_token_secret_manifest(t, NULL, 0, false, 0, 1, NULL, 0, buf, sizeof buf, NULL), NULLP);
    kubeboot_token_free(t);

    /* Extra groups. */
    CHECK_RC(kubeboot_token_validate_extra_groups(NULL, 0), OK);
    CHECK_RC(kubeboot_token_validate_extra_groups(S("system:bootstrappers:a,system:bootstrappers:b")), OK);
    CHECK_RC(kubeboot_token_validate_extra_groups(S("system:bootstrappers:A")), KUBEBOOT_RESULT_INVALID_GROUP);
    CHECK_RC(kubeboot_token_validate_extra_groups(S("system:masters")), KUBEBOOT_RESULT_INVALID_GROUP);
    CHECK_RC(kubeboot_token_validate_extra_groups("\xff", 1), KUBEBOOT_RESULT_INVALID_UTF8);
    CHECK_RC(kubeboot_token_validate_extra_groups(NULL, 1), NULLP);

    /* Entropy: deterministic. */
    unsigned char entropy[32];
    for (int i = 0; i < 32; i++) entropy[i] = (unsigned char)i;
    kubeboot_token *t2 = NULL, *t3 = NULL;
    CHECK_RC(kubeboot_token_from_entropy(entropy, sizeof entropy, &t2), OK);
    CHECK_RC(kubeboot_token_from_entropy(entropy, sizeof entropy, &t3), OK);
    char w2[KUBEBOOT_TOKEN_LEN], w3[KUBEBOOT_TOKEN_LEN];
    size_t n2 = 0, n3 = 0;
    CHECK_RC(kubeboot_token_wire(t2, w2, sizeof w2, &n2), OK);
    CHECK_RC(kubeboot_token_wire(t3, w3, sizeof w3, &n3), OK);
    CHECK(n2 == 23 && n3 == 23 && memcmp(w2, w3, 23) == 0);
    /* byte i → ALPHABET[i % 36]: "012345.6789abcdefghijklm" */
    CHECK(memcmp(w2, "012345.6789abcdefghijkl", 23) == 0);
    kubeboot_token_free(t2);
    kubeboot_token_free(t3);
    kubeboot_token *t4 = NULL;
    CHECK_RC(kubeboot_token_from_entropy(entropy, 21, &t4), KUBEBOOT_RESULT_INSUFFICIENT_ENTROPY);
    unsigned char rejected[64];
    memset(rejected, 0xff, sizeof rejected);
    CHECK_RC(kubeboot_token_from_entropy(rejected, sizeof rejected, &t4), KUBEBOOT_RESULT_INSUFFICIENT_ENTROPY);
    CHECK_RC(kubeboot_token_from_entropy(NULL, 32, &t4), NULLP);
    CHECK_RC(kubeboot_token_from_entropy(entropy, 32, NULL), NULLP);
    CHECK(t4 == NULL);

    /* OS RNG. */
    kubeboot_token *g1 = NULL, *g2 = NULL;
    CHECK_RC(kubeboot_token_generate(&g1), OK);
    CHECK_RC(kubeboot_token_generate(&g2), OK);
    CHECK_RC(kubeboot_token_wire(g1, w2, sizeof w2, &n2), OK);
    CHECK_RC(kubeboot_token_wire(g2, w3, sizeof w3, &n3), OK);
    CHECK(memcmp(w2, w3, 23) != 0 && w2[6] == '.');
    CHECK_RC(kubeboot_token_generate(NULL), NULLP);
    kubeboot_token_free(g1);
    kubeboot_token_free(g2);
    kubeboot_token_free(NULL);
}
/* ---------------------------------------------------------------------------------------- */

static void test_keys(const unsigned char *pem, size_t pem_len, const unsigned char *der, size_t der_len) {
    kubeboot_key *k = NULL, *kd = NULL, *ke = NULL, *kg = NULL, *bad = NULL;
    char out[512];
    size_t n = 0;

    CHECK_RC(kubeboot_key_from_pem(pem, pem_len, NULL), NULLP);
    CHECK_RC(kubeboot_key_from_pem(NULL, pem_len, &k), NULLP);
    CHECK_RC(kubeboot_key_from_pem(NULL, 0, &k), KUBEBOOT_RESULT_MALFORMED_KEY);
    CHECK_RC(kubeboot_key_from_pem((const uint8_t *)"hello", 5, &bad), KUBEBOOT_RESULT_MALFORMED_KEY);
    const char rsa[] = "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n";
    CHECK_RC(kubeboot_key_from_pem((const uint8_t *)rsa, sizeof rsa - 1, &bad), KUBEBOOT_RESULT_UNSUPPORTED_KEY);
    /* Truncated PEM. */
    CHECK_RC(kubeboot_key_from_pem(pem, pem_len / 2, &bad), KUBEBOOT_RESULT_MALFORMED_KEY);
    CHECK(bad == NULL);
    CHECK_RC(kubeboot_key_from_pem(pem, pem_len, &k), OK);

    /* PEM export round-trips byte-exactly (K1 is in kubeboot's canonical form). */
    CHECK_RC(kubeboot_key_to_pem(k, NULL, 0, &n), SHORT);
    CHECK(n == KUBEBOOT_KEY_SEC1_PEM_LEN);
    CHECK_RC(kubeboot_key_to_pem(k, out, sizeof out, &n), OK);
    CHECK(n == pem_len && memcmp(out, pem, n) == 0);
    CHECK_RC(kubeboot_key_to_pem(NULL, out, sizeof out, &n), NULLP);
    CHECK_RC(kubeboot_key_to_pem(k, out, sizeof out, NULL), NULLP);

    uint8_t spki[KUBEBOOT_KEY_SPKI_LEN], spki2[KUBEBOOT_KEY_SPKI_LEN];
    CHECK_RC(kubeboot_key_public_spki_der(k, spki, 10, &n), SHORT);
    CHECK(n == KUBEBOOT_KEY_SPKI_LEN);
    CHECK_RC(kubeboot_key_public_spki_der(k, spki, sizeof spki, &n), OK);
    CHECK(n == 91 && spki[0] == 0x30 && spki[26] == 0x04);
    CHECK_RC(kubeboot_key_public_spki_der(NULL, spki, sizeof spki, &n), NULLP);

    uint8_t point[KUBEBOOT_KEY_POINT_LEN];
    CHECK_RC(kubeboot_key_public_point(k, point), OK);
    CHECK(point[0] == 0x04 && memcmp(point, spki + 26, 65) == 0);
    CHECK_RC(kubeboot_key_public_point(NULL, point), NULLP);
    CHECK_RC(kubeboot_key_public_point(k, NULL), NULLP);

    if (der) {
        CHECK_RC(kubeboot_key_from_der(der, der_len, &kd), OK);
        CHECK_RC(kubeboot_key_public_spki_der(kd, spki2, sizeof spki2, &n), OK);
        CHECK(memcmp(spki, spki2, sizeof spki) == 0);
        kubeboot_key_free(kd);
        kd = NULL;
        CHECK_RC(kubeboot_key_from_der(der, der_len - 1, &kd), KUBEBOOT_RESULT_MALFORMED_KEY);
    }
    CHECK_RC(kubeboot_key_from_der((const uint8_t *)"\x30\x03\x02\x01", 4, &kd), KUBEBOOT_RESULT_MALFORMED_KEY);
    CHECK_RC(kubeboot_key_from_der(NULL, 4, &kd), NULLP);
    CHECK_RC(kubeboot_key_from_der(pem, pem_len, NULL), NULLP);
    CHECK(kd == NULL);

    /* Signing. */
    uint8_t sig[KUBEBOOT_SIGNATURE_LEN], sig2[KUBEBOOT_SIGNATURE_LEN];
    CHECK_RC(kubeboot_key_sign(k, (const uint8_t *)"hello", 5, sig), OK);
    CHECK_RC(kubeboot_key_sign(k, (const uint8_t *)"hello", 5, sig2), OK);
    CHECK(memcmp(sig, sig2, 64) == 0); /* RFC 6979 */
    CHECK_RC(kubeboot_key_sign(k, NULL, 0, sig2), OK);
    CHECK_RC(kubeboot_key_sign(k, NULL, 3, sig2), NULLP);
    CHECK_RC(kubeboot_key_sign(NULL, (const uint8_t *)"x", 1, sig2), NULLP);
    CHECK_RC(kubeboot_key_sign(k, (const uint8_t *)"x", 1, NULL), NULLP);

    /* Entropy. */
    uint8_t e[64];
    memset(e, 0x11, sizeof e);
    CHECK_RC(kubeboot_key_from_entropy(e, 31, &ke), KUBEBOOT_RESULT_INSUFFICIENT_ENTROPY);
    uint8_t zero[32] = {0};
    CHECK_RC(kubeboot_key_from_entropy(zero, 32, &ke), KUBEBOOT_RESULT_BAD_ENTROPY);
    CHECK_RC(kubeboot_key_from_entropy(NULL, 32, &ke), NULLP);
    CHECK_RC(kubeboot_key_from_entropy(e, 32, NULL), NULLP);
    CHECK(ke == NULL);
    memset(e, 0xff, 32);
    CHECK_RC(kubeboot_key_from_entropy(e, 64, &ke), OK); /* first chunk out of range, second used */
    kubeboot_key *ke2 = NULL;
    CHECK_RC(kubeboot_key_from_entropy(e + 32, 32, &ke2), OK);
    CHECK_RC(kubeboot_key_public_spki_der(ke, spki, sizeof spki, &n), OK);
    CHECK_RC(kubeboot_key_public_spki_der(ke2, spki2, sizeof spki2, &n), OK);
    CHECK(memcmp(spki, spki2, sizeof spki) == 0);
    kubeboot_key_free(ke);
    kubeboot_key_free(ke2);

    CHECK_RC(kubeboot_key_generate(&kg), OK);
    CHECK_RC(kubeboot_key_generate(NULL), NULLP);
    CHECK_RC(kubeboot_key_to_pem(kg, out, sizeof out, &n), OK);
    CHECK(n == KUBEBOOT_KEY_SEC1_PEM_LEN && memcmp(out, "-----BEGIN EC PRIVATE KEY-----\n", 31) == 0);
    kubeboot_key_free(kg);
    kubeboot_key_free(k);
    kubeboot_key_free(NULL);
}

/* ---------------------------------------------------------------------------------------- */

static int openssl_verify(const uint8_t *pem, size_t len) {
    if (system(NULL) == 0 || system("command -v openssl >/dev/null 2>&1") != 0) return -1;
    char path[] = "/tmp/kubeboot-c-csr-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    int ok = write(fd, pem, len) == (ssize_t)len;
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "openssl req -verify -noout -in %s >/dev/null 2>&1", path);
    int rc = ok ? system(cmd) : -1;
    unlink(path);
    return rc == 0;
}

uint32_t sign_cb(void *userdata, const uint8_t *msg, size_t msg_len, uint8_t *sig_rs) {
    struct cb_state *st = userdata;
    st->calls++;
    if (st->mode == 1) return KUBEBOOT_RESULT_SIGNER_FAILED;
    if (st->mode == 2) {
        memset(sig_rs, 0, 64);
        return KUBEBOOT_RESULT_OK;
    }
    return kubeboot_key_sign(st->key, msg, msg_len, sig_rs);
}

/* A CSR spec: profile, node, signed by key or signer, in format (no SANs). */
static kubeboot_csr_spec spec(uint32_t profile, const char *node, const kubeboot_key *key,
                              const kubeboot_signer *signer, uint32_t format) {
    kubeboot_csr_spec s;
    memset(&s, 0, sizeof s);
    s.profile = profile;
    s.node_name = node;
    s.node_name_len = node ? strlen(node) : 0;
    s.format = format;
    s.key = key;
    s.signer = signer;
    return s;
}

/* The spec with SANs. */
static kubeboot_csr_spec with_sans(kubeboot_csr_spec s, const kubeboot_str *dns, size_t nd, const kubeboot_str *ips,
                                   size_t ni) {
    s.dns_names = dns, s.dns_count = nd, s.ip_addresses = ips, s.ip_count = ni;
    return s;
}

static void test_csr(const unsigned char *pem, size_t pem_len) {
    kubeboot_key *k1 = NULL, *k2 = NULL;
    uint8_t csr[KUBEBOOT_CSR_MAX_LEN], csr2[KUBEBOOT_CSR_MAX_LEN];
    size_t n = 0, n2 = 0;
    CHECK_RC(kubeboot_key_from_pem(pem, pem_len, &k1), OK);
    uint8_t e[32];
    memset(e, 0x42, sizeof e);
    CHECK_RC(kubeboot_key_from_entropy(e, sizeof e, &k2), OK);

    /* Known vector: the node-csr name of K1 for node-1. */
    char name[KUBEBOOT_NODE_CSR_NAME_LEN];
    CHECK_RC(kubeboot_key_node_csr_name(k1, S("node-1"), name, sizeof name, &n), OK);
    CHECK(eq(name, n, K1_NODE1_NAME));
    CHECK_RC(kubeboot_key_node_csr_name(k1, S("node-1"), name, 51, &n), SHORT);
    CHECK(n == 52);
    CHECK_RC(kubeboot_key_node_csr_name(k1, S("Node_1"), name, sizeof name, &n), KUBEBOOT_RESULT_INVALID_NODE_NAME);
    CHECK_RC(kubeboot_key_node_csr_name(NULL, S("node-1"), name, sizeof name, &n), NULLP);
    CHECK_RC(kubeboot_key_node_csr_name(k1, NULL, 6, name, sizeof name, &n), NULLP);
    uint8_t point[65];
    CHECK_RC(kubeboot_key_public_point(k1, point), OK);
    char name2[64];
    CHECK_RC(kubeboot_node_csr_name(point, S("node-1"), name2, sizeof name2, &n), OK);
    CHECK(eq(name2, n, K1_NODE1_NAME));
    CHECK_RC(kubeboot_node_csr_name(NULL, S("node-1"), name2, sizeof name2, &n), NULLP);
    uint8_t badpoint[65] = {4};
    CHECK_RC(kubeboot_node_csr_name(badpoint, S("node-1"), name2, sizeof name2, &n), KUBEBOOT_RESULT_MALFORMED_KEY);

    /* Client CSR, PEM and DER; a short buffer gets the size and keeps its bytes. */
    kubeboot_csr_spec client = spec(KUBEBOOT_PROFILE_CLIENT, "node-1", k1, NULL, KUBEBOOT_FORMAT_PEM);
    memset(csr, 0, sizeof csr);
    CHECK_RC(kubeboot_csr_write(&client, csr, 100, &n), SHORT);
    CHECK(n > 100 && n <= KUBEBOOT_CSR_MAX_LEN && all_zero(csr, sizeof csr));
    CHECK_RC(kubeboot_csr_write(&client, NULL, 0, &n), SHORT);
    CHECK_RC(kubeboot_csr_write(&client, csr, n, &n), OK);
    CHECK(memcmp(csr, "-----BEGIN CERTIFICATE REQUEST-----\n", 36) == 0);
    size_t client_pem_len = n;
    int v = openssl_verify(csr, n);
    CHECK(v != 0); /* 1 verified, -1 openssl unavailable */
    kubeboot_csr_spec s = client;
    s.format = KUBEBOOT_FORMAT_DER;
    CHECK_RC(kubeboot_csr_write(&s, csr2, sizeof csr2, &n2), OK);
    CHECK(n2 > 100 && csr2[0] == 0x30);
    s.format = 7;
    CHECK_RC(kubeboot_csr_write(&s, csr2, sizeof csr2, &n2), KUBEBOOT_RESULT_INVALID_PARAMETER);
    s = client, s.profile = 9;
    CHECK_RC(kubeboot_csr_write(&s, csr2, sizeof csr2, &n2), KUBEBOOT_RESULT_INVALID_PARAMETER);
    s = spec(KUBEBOOT_PROFILE_CLIENT, "-bad-", k1, NULL, KUBEBOOT_FORMAT_PEM);
    CHECK_RC(kubeboot_csr_write(&s, csr2, sizeof csr2, &n2), KUBEBOOT_RESULT_INVALID_NODE_NAME);
    s = spec(KUBEBOOT_PROFILE_CLIENT, "\xff", k1, NULL, KUBEBOOT_FORMAT_PEM);
    CHECK_RC(kubeboot_csr_write(&s, csr2, sizeof csr2, &n2), KUBEBOOT_RESULT_INVALID_UTF8);
    s = client, s.node_name = NULL;
    CHECK_RC(kubeboot_csr_write(&s, csr2, sizeof csr2, &n2), NULLP);
    CHECK_RC(kubeboot_csr_write(NULL, csr2, sizeof csr2, &n2), NULLP);
    CHECK_RC(kubeboot_csr_write(&client, NULL, 5000, &n2), NULLP);
    CHECK_RC(kubeboot_csr_write(&client, csr2, sizeof csr2, NULL), NULLP);
    /* Exactly one of key and signer. */
    s = spec(KUBEBOOT_PROFILE_CLIENT, "node-1", NULL, NULL, KUBEBOOT_FORMAT_PEM);
    CHECK_RC(kubeboot_csr_write(&s, csr2, sizeof csr2, &n2), KUBEBOOT_RESULT_INVALID_PARAMETER);

    /* Policy check of our own client CSR. */
    kubeboot_str client_usages[2] = {{S("digital signature")}, {S("client auth")}};
    kubeboot_str serving_usages[2] = {{S("digital signature")}, {S("server auth")}};
    kubeboot_str bogus_usages[2] = {{S("digital signature")}, {S("teleport")}};
    const char client_signer[] = "kubernetes.io/kube-apiserver-client-kubelet";
    const char serving_signer[] = "kubernetes.io/kubelet-serving";
    CHECK_RC(kubeboot_csr_check(csr, client_pem_len, S(client_signer), client_usages, 2, 0), OK);
    CHECK_RC(kubeboot_csr_check(csr, client_pem_len, S(client_signer), client_usages, 2, 3600), OK);
    CHECK_RC(kubeboot_csr_check(csr, client_pem_len, S(client_signer), client_usages, 2, 599),
             KUBEBOOT_RESULT_POLICY_EXPIRATION_TOO_SHORT);
    CHECK_RC(kubeboot_csr_check(csr, client_pem_len, S(client_signer), serving_usages, 2, 0),
             KUBEBOOT_RESULT_POLICY_CLIENT_USAGES);
    CHECK_RC(kubeboot_csr_check(csr, client_pem_len, S(client_signer), bogus_usages, 2, 0),
             KUBEBOOT_RESULT_POLICY_UNKNOWN_USAGE);
    CHECK_RC(kubeboot_csr_check(csr, client_pem_len, S(client_signer), NULL, 0, 0),
             KUBEBOOT_RESULT_POLICY_USAGES_REQUIRED);
    CHECK_RC(kubeboot_csr_check(csr, client_pem_len, S(serving_signer), serving_usages, 2, 0),
             KUBEBOOT_RESULT_POLICY_SAN_REQUIRED);
    CHECK_RC(kubeboot_csr_check(csr, client_pem_len, S("example.com/other"), client_usages, 2, 0),
             KUBEBOOT_RESULT_POLICY_SIGNER);
    CHECK_RC(kubeboot_csr_check((const uint8_t *)"garbage", 7, S(client_signer), client_usages, 2, 0),
             KUBEBOOT_RESULT_POLICY_NOT_CERTIFICATE_REQUEST);
    CHECK_RC(kubeboot_csr_check(csr, client_pem_len / 2, S(client_signer), client_usages, 2, 0),
             KUBEBOOT_RESULT_POLICY_NOT_CERTIFICATE_REQUEST);
    CHECK_RC(kubeboot_csr_check(NULL, 5, S(client_signer), client_usages, 2, 0), NULLP);
    CHECK_RC(kubeboot_csr_check(csr, client_pem_len, NULL, 5, client_usages, 2, 0), NULLP);
    CHECK_RC(kubeboot_csr_check(csr, client_pem_len, S(client_signer), NULL, 2, 0), NULLP);
    kubeboot_str null_usage[1] = {{NULL, 3}};
    CHECK_RC(kubeboot_csr_check(csr, client_pem_len, S(client_signer), null_usage, 1, 0), NULLP);
    /* Tampered signature byte → bad signature. */
    memcpy(csr2, csr, client_pem_len);
    csr2[client_pem_len - 40] = csr2[client_pem_len - 40] == 'A' ? 'B' : 'A';
    kubeboot_result rc = kubeboot_csr_check(csr2, client_pem_len, S(client_signer), client_usages, 2, 0);
    CHECK(rc == KUBEBOOT_RESULT_POLICY_BAD_SIGNATURE || rc == KUBEBOOT_RESULT_POLICY_NOT_CERTIFICATE_REQUEST);

    /* Serving CSR: DNS names, then IP addresses (at least one IP: the kubelet's rule). */
    kubeboot_str dns[2] = {{S("node-1.example.com")}, {S("node-1")}};
    kubeboot_str ips[2] = {{S("10.0.0.1")}, {S("fd00::1")}};
    kubeboot_str bad_ip[1] = {{S("10.0.0.256")}};
    kubeboot_str bad_dns[1] = {{S("-bad-.example.com")}};
    kubeboot_csr_spec serving = spec(KUBEBOOT_PROFILE_SERVING, "node-1", k1, NULL, KUBEBOOT_FORMAT_PEM);
    s = with_sans(serving, dns, 2, ips, 2);
    CHECK_RC(kubeboot_csr_write(&s, csr, sizeof csr, &n), OK);
    CHECK(openssl_verify(csr, n) != 0);
    CHECK_RC(kubeboot_csr_check(csr, n, S(serving_signer), serving_usages, 2, 0), OK);
    CHECK_RC(kubeboot_csr_check(csr, n, S(client_signer), client_usages, 2, 0),
             KUBEBOOT_RESULT_POLICY_DNS_SAN_NOT_ALLOWED);
    s = with_sans(serving, NULL, 0, ips, 1), s.format = KUBEBOOT_FORMAT_DER;
    CHECK_RC(kubeboot_csr_write(&s, csr, sizeof csr, &n), OK);
    CHECK(csr[0] == 0x30);
    CHECK_RC(kubeboot_csr_write(&serving, csr, sizeof csr, &n), KUBEBOOT_RESULT_POLICY_SAN_REQUIRED);
    s = with_sans(serving, NULL, 0, bad_ip, 1);
    CHECK_RC(kubeboot_csr_write(&s, csr, sizeof csr, &n), KUBEBOOT_RESULT_INVALID_IP_ADDRESS);
    s = with_sans(serving, bad_dns, 1, ips, 1);
    CHECK_RC(kubeboot_csr_write(&s, csr, sizeof csr, &n), KUBEBOOT_RESULT_INVALID_DNS_NAME);
    kubeboot_str many[KUBEBOOT_CSR_MAX_SANS + 1];
    for (int i = 0; i <= KUBEBOOT_CSR_MAX_SANS; i++) many[i] = (kubeboot_str){S("10.1.2.3")};
    s = with_sans(serving, NULL, 0, many, KUBEBOOT_CSR_MAX_SANS + 1);
    CHECK_RC(kubeboot_csr_write(&s, csr, sizeof csr, &n), KUBEBOOT_RESULT_TOO_MANY_SANS);
    s = with_sans(serving, NULL, 3, ips, 1);
    CHECK_RC(kubeboot_csr_write(&s, csr, sizeof csr, &n), NULLP);
    s = with_sans(serving, dns, 1, ips, 1);
    CHECK_RC(kubeboot_csr_write(&s, csr, 10, &n), SHORT);
    s.key = NULL;
    CHECK_RC(kubeboot_csr_write(&s, csr, sizeof csr, &n), KUBEBOOT_RESULT_INVALID_PARAMETER);

    /* Sign callback, backed by a second key (k2). */
    struct cb_state st = {k2, 0, 0};
    kubeboot_signer signer;
    memset(&signer, 0, sizeof signer);
    signer.sign = sign_cb;
    signer.userdata = &st;
    CHECK_RC(kubeboot_key_public_point(k2, signer.public_point), OK);
    kubeboot_csr_spec by_signer = spec(KUBEBOOT_PROFILE_CLIENT, "node-2", NULL, &signer, KUBEBOOT_FORMAT_PEM);
    CHECK_RC(kubeboot_csr_write(&by_signer, csr, 10, &n), SHORT);
    CHECK(st.calls == 0); /* a size query does not sign */
    CHECK_RC(kubeboot_csr_write(&by_signer, csr, sizeof csr, &n), OK);
    CHECK(st.calls == 1);
    CHECK(openssl_verify(csr, n) != 0);
    /* Same CSR as signing with k2 directly (deterministic ECDSA). */
    s = spec(KUBEBOOT_PROFILE_CLIENT, "node-2", k2, NULL, KUBEBOOT_FORMAT_PEM);
    CHECK_RC(kubeboot_csr_write(&s, csr2, sizeof csr2, &n2), OK);
    CHECK(n == n2 && memcmp(csr, csr2, n) == 0);
    CHECK_RC(kubeboot_csr_check(csr, n, S(client_signer), client_usages, 2, 0), OK);
    s.signer = &signer; /* both: refused, nothing signed */
    CHECK_RC(kubeboot_csr_write(&s, csr2, sizeof csr2, &n2), KUBEBOOT_RESULT_INVALID_PARAMETER);
    CHECK(st.calls == 1);
    s = with_sans(spec(KUBEBOOT_PROFILE_SERVING, "node-2", NULL, &signer, KUBEBOOT_FORMAT_DER), dns, 2, ips, 2);
    CHECK_RC(kubeboot_csr_write(&s, csr, sizeof csr, &n), OK);
    CHECK(st.calls == 2 && csr[0] == 0x30);
    s = with_sans(spec(KUBEBOOT_PROFILE_SERVING, "node-2", NULL, &signer, KUBEBOOT_FORMAT_PEM), dns, 1, ips, 1);
    CHECK_RC(kubeboot_csr_write(&s, csr, sizeof csr, &n), OK);
    CHECK_RC(kubeboot_csr_check(csr, n, S(serving_signer), serving_usages, 2, 0), OK);
    /* Failing callback, garbage signature, wrong key, bad point, no callback: nothing written. */
    memset(csr2, 0, sizeof csr2);
    st.mode = 1;
    CHECK_RC(kubeboot_csr_write(&by_signer, csr2, sizeof csr2, &n2), KUBEBOOT_RESULT_SIGNER_FAILED);
    st.mode = 2;
    by_signer.format = KUBEBOOT_FORMAT_DER;
    CHECK_RC(kubeboot_csr_write(&by_signer, csr2, sizeof csr2, &n2), KUBEBOOT_RESULT_SIGNER_FAILED);
    st.mode = 0;
    st.key = k1; /* signs with the wrong key */
    by_signer.format = KUBEBOOT_FORMAT_PEM;
    CHECK_RC(kubeboot_csr_write(&by_signer, csr2, sizeof csr2, &n2), KUBEBOOT_RESULT_SIGNER_FAILED);
    CHECK(all_zero(csr2, sizeof csr2));
    kubeboot_signer bad = signer;
    memset(bad.public_point, 0, sizeof bad.public_point);
    by_signer.signer = &bad;
    CHECK_RC(kubeboot_csr_write(&by_signer, csr2, sizeof csr2, &n2), KUBEBOOT_RESULT_MALFORMED_KEY);
    bad = signer;
    bad.sign = NULL;
    CHECK_RC(kubeboot_csr_write(&by_signer, csr2, sizeof csr2, &n2), NULLP);

    /* CSR object JSON. */
    char json[8192];
    CHECK_RC(kubeboot_csr_write(&client, csr, sizeof csr, &n), OK);
    size_t jn = 0;
    CHECK_RC(kubeboot_csr_object_json(csr, n, K1_NODE1_NAME, 52, KUBEBOOT_PROFILE_CLIENT, 0, json, 10, &jn), SHORT);
    size_t need = jn;
    CHECK_RC(kubeboot_csr_object_json(csr, n, K1_NODE1_NAME, 52, KUBEBOOT_PROFILE_CLIENT, 0, json, need, &jn), OK);
    CHECK(jn == need);
    CHECK(find_bytes(json, jn, "\"name\":\"node-csr-n8Gs_E-Z9L7aSxQqzzA00Csg_R1hDXOPVUFrdIQkVzo\"", 61) != NULL);
    CHECK(find_bytes(json, jn, "\"signerName\":\"kubernetes.io/kube-apiserver-client-kubelet\"", 58) != NULL);
    CHECK(find_bytes(json, jn, "\"usages\":[\"digital signature\",\"client auth\"]", 44) != NULL);
    CHECK(find_bytes(json, jn, "expirationSeconds", 17) == NULL);
    CHECK_RC(kubeboot_csr_object_json(csr, n, NULL, 0, KUBEBOOT_PROFILE_SERVING, 86400, json, sizeof json, &jn), OK);
    CHECK(find_bytes(json, jn, "\"generateName\":\"csr-\"", 21) != NULL);
    CHECK(find_bytes(json, jn, "kubernetes.io/kubelet-serving", 29) != NULL);
    CHECK(find_bytes(json, jn, "\"expirationSeconds\":86400}", 26) != NULL);
    CHECK_RC(kubeboot_csr_object_json(csr, n, NULL, 0, KUBEBOOT_PROFILE_CLIENT, 599, json, sizeof json, &jn),
             KUBEBOOT_RESULT_INVALID_EXPIRATION_SECONDS);
    CHECK_RC(kubeboot_csr_object_json(csr, n, NULL, 0, 9, 0, json, sizeof json, &jn), KUBEBOOT_RESULT_INVALID_PARAMETER);
    CHECK_RC(kubeboot_csr_object_json(NULL, n, NULL, 0, 0, 0, json, sizeof json, &jn), NULLP);
    /* NULL name with a length: an error, not generateName */
    CHECK_RC(kubeboot_csr_object_json(csr, n, NULL, 5, 0, 0, json, sizeof json, &jn), NULLP);
    CHECK_RC(kubeboot_csr_object_json(csr, n, NULL, 0, 0, 0, json, sizeof json, NULL), NULLP);
    CHECK_RC(kubeboot_csr_object_json(csr, n, "\xff", 1, 0, 0, json, sizeof json, &jn), KUBEBOOT_RESULT_INVALID_UTF8);

    kubeboot_key_free(k1);
    kubeboot_key_free(k2);
}

/* ---------------------------------------------------------------------------------------- */

/* The grammar of what users type: every front-end's flag values, and the one line for a refusal. */
static void test_grammar(void) {
    int64_t secs = -1;
    const struct {
        const char *text;
        int64_t secs;
    } good[] = {{"0", 0}, {"90s", 90}, {"10m", 600}, {"1h30m", 5400}, {"24h", 86400}, {"1m1s", 61}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK_RC(kubeboot_parse_duration(good[i].text, strlen(good[i].text), &secs), OK);
        CHECK(secs == good[i].secs);
    }
    const char *bad[] = {"", "5", "5x", "1.5h", "-1m", "h", "1h30", " 1m", "300ms", "99999999999999999999s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        secs = 7;
        CHECK_RC(kubeboot_parse_duration(bad[i], strlen(bad[i]), &secs), KUBEBOOT_RESULT_INVALID_DURATION);
        CHECK(secs == 7); /* nothing written */
    }
    CHECK_RC(kubeboot_parse_duration(NULL, 3, &secs), NULLP);
    CHECK_RC(kubeboot_parse_duration(S("1s"), NULL), NULLP);
    CHECK_RC(kubeboot_parse_duration("\xff", 1, &secs), KUBEBOOT_RESULT_INVALID_UTF8);

    char dev[256];
    size_t n = 0;
    static const char URI[] = "pkcs11:token=node?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=/p";
    CHECK_RC(kubeboot_parse_key_device(S("tpm:"), dev, sizeof dev, &n), OK);
    CHECK(eq(dev, n, "tpm"));
    CHECK_RC(kubeboot_parse_key_device(S(URI), dev, sizeof dev, &n), OK);
    CHECK(eq(dev, n, URI));
    memset(dev, 0, sizeof dev);
    CHECK_RC(kubeboot_parse_key_device(S(URI), dev, 10, &n), SHORT);
    CHECK(n == sizeof URI - 1 && all_zero(dev, sizeof dev));
    const char *bad_keys[] = {"key.pem", "tpm:/var/node.pem", "pkcs11:token=a;object=k?module-path=/m.so",
                              "pkcs11:token=a;pin-value=1234?module-path=/m.so", "pkcs11:token=a;colour=blue"};
    for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++)
        CHECK_RC(kubeboot_parse_key_device(bad_keys[i], strlen(bad_keys[i]), dev, sizeof dev, &n),
                 KUBEBOOT_RESULT_INVALID_KEY_REFERENCE);
    CHECK_RC(kubeboot_parse_key_device(S("tpm:"), dev, sizeof dev, NULL), NULLP);

    CHECK_RC(kubeboot_check_ip(S("10.0.0.7")), OK);
    CHECK_RC(kubeboot_check_ip(S("fd00::7")), OK);
    CHECK_RC(kubeboot_check_ip(S("10.0.0.256")), KUBEBOOT_RESULT_INVALID_IP_ADDRESS);
    CHECK_RC(kubeboot_check_ip(S("node-1")), KUBEBOOT_RESULT_INVALID_IP_ADDRESS);
    CHECK_RC(kubeboot_check_ip(NULL, 0), KUBEBOOT_RESULT_INVALID_IP_ADDRESS);
    CHECK_RC(kubeboot_check_ip(NULL, 3), NULLP);
    CHECK_RC(kubeboot_check_bind_address(S("127.0.0.1:9101")), OK);
    CHECK_RC(kubeboot_check_bind_address(S("[::1]:9101")), OK);
    CHECK_RC(kubeboot_check_bind_address(S("127.0.0.1")), KUBEBOOT_RESULT_INVALID_ADDRESS);
    CHECK_RC(kubeboot_check_bind_address(S("localhost:9101")), KUBEBOOT_RESULT_INVALID_ADDRESS);
    CHECK_RC(kubeboot_check_bind_address(S("1.2.3.4:99999")), KUBEBOOT_RESULT_INVALID_ADDRESS);
    CHECK_RC(kubeboot_check_bind_address(S("::1:9101")), KUBEBOOT_RESULT_INVALID_ADDRESS);

    /* The one line every front-end prints for a refused value. */
    char line[512];
    CHECK_RC(kubeboot_flag_refusal(S("--wait"), S("5x"), KUBEBOOT_RESULT_INVALID_DURATION, line, sizeof line, &n), OK);
    CHECK(eq(line, n, "--wait \"5x\": invalid-duration: not a duration (like 90s, 10m, 1h30m, 0)"));
    CHECK_RC(kubeboot_flag_refusal(S("--ip"), S("a\"b"), KUBEBOOT_RESULT_INVALID_IP_ADDRESS, line, sizeof line, &n), OK);
    CHECK(eq(line, n, "--ip \"a\\\"b\": invalid-ip-address: not an IP address (like 10.0.0.7 or fd00::7)"));
    size_t need = n;
    CHECK_RC(kubeboot_flag_refusal(S("--ip"), S("a\"b"), KUBEBOOT_RESULT_INVALID_IP_ADDRESS, line, 5, &n), SHORT);
    CHECK(n == need);
    CHECK_RC(kubeboot_flag_refusal(S("--key"), S("x"), 424242, line, sizeof line, &n), KUBEBOOT_RESULT_INVALID_PARAMETER);
    CHECK_RC(kubeboot_flag_refusal(NULL, 3, S("x"), KUBEBOOT_RESULT_INVALID_DURATION, line, sizeof line, &n), NULLP);
    CHECK_RC(kubeboot_flag_refusal(S("--wait"), S("x"), KUBEBOOT_RESULT_INVALID_DURATION, line, sizeof line, NULL),
             NULLP);
    CHECK(KUBEBOOT_MAX_RESPONSE == 1 << 20);
    CHECK(KUBEBOOT_RESULT_INVALID_DURATION == 900 && KUBEBOOT_RESULT_INVALID_ADDRESS == 901);
}

/* ---------------------------------------------------------------------------------------- */

static void test_verify(const unsigned char *k1_pem, size_t k1_len) {
    size_t ln = 0, cn = 0, n = 0;
    unsigned char *leaf = data("ec-leaf.crt", &ln);
    unsigned char *ca = data("ec-ca.crt", &cn);
    kubeboot_key *k1 = NULL;
    uint8_t spki[KUBEBOOT_KEY_SPKI_LEN];
    CHECK_RC(kubeboot_key_from_pem(k1_pem, k1_len, &k1), OK);
    CHECK_RC(kubeboot_key_public_spki_der(k1, spki, sizeof spki, &n), OK);
    const int64_t now = 1800000000; /* 2027 */
    kubeboot_verified v, zero;
    memset(&v, 0xAB, sizeof v);
    memcpy(&zero, &v, sizeof v);
    kubeboot_expected node1 = client_cert("node-1"), node2 = client_cert("node-2");
    kubeboot_expected serving = node1, bad_profile = node1;
    serving.profile = KUBEBOOT_PROFILE_SERVING;
    bad_profile.profile = 9;
#define VERIFY(cert, clen, x, sp, splen, t, outp) kubeboot_verify_issued(cert, clen, ca, cn, x, sp, splen, t, outp)
    CHECK_RC(VERIFY(leaf, ln, &node1, spki, sizeof spki, now, &v), OK);
    CHECK(v.not_before < now && v.not_after > now && v.ca_index == 0 && v.intermediates_used == 0);
    CHECK(eq(v.ca_subject, v.ca_subject_len, "CN=kubernetes-ec"));
    memcpy(&v, &zero, sizeof v);
    /* Named reasons; no output on failure. */
    CHECK_RC(VERIFY(leaf, ln, &node1, spki, sizeof spki, 2200000000, &v), KUBEBOOT_RESULT_VERIFY_EXPIRED);
    CHECK_RC(VERIFY(leaf, ln, &node1, spki, sizeof spki, 1000000000, &v), KUBEBOOT_RESULT_VERIFY_NOT_YET_VALID);
    CHECK_RC(VERIFY(leaf, ln, &node2, spki, sizeof spki, now, &v), KUBEBOOT_RESULT_VERIFY_SUBJECT_MISMATCH);
    uint8_t other[KUBEBOOT_KEY_SPKI_LEN];
    memcpy(other, spki, sizeof other);
    other[sizeof other - 1] ^= 1;
    CHECK_RC(VERIFY(leaf, ln, &node1, other, sizeof other, now, &v), KUBEBOOT_RESULT_VERIFY_KEY_MISMATCH);
    CHECK_RC(VERIFY((const uint8_t *)"garbage", 7, &node1, spki, sizeof spki, now, &v), KUBEBOOT_RESULT_VERIFY_MALFORMED);
    CHECK_RC(kubeboot_verify_issued(leaf, ln, leaf, ln, &node1, spki, sizeof spki, now, &v),
             KUBEBOOT_RESULT_VERIFY_UNTRUSTED);
    CHECK_RC(VERIFY(leaf, ln, &serving, spki, sizeof spki, now, &v), KUBEBOOT_RESULT_VERIFY_WRONG_USAGE);
    CHECK(memcmp(&v, &zero, sizeof v) == 0);
    CHECK(kubeboot_result_is_verify_error(KUBEBOOT_RESULT_VERIFY_UNTRUSTED));
    CHECK_RC(VERIFY(leaf, ln, &node1, spki, sizeof spki, now, NULL), NULLP);
    CHECK_RC(VERIFY(NULL, 5, &node1, spki, sizeof spki, now, &v), NULLP);
    CHECK_RC(VERIFY(leaf, ln, NULL, spki, sizeof spki, now, &v), NULLP);
    CHECK_RC(VERIFY(leaf, ln, &bad_profile, spki, sizeof spki, now, &v), KUBEBOOT_RESULT_INVALID_PARAMETER);
    kubeboot_str bad_ip = {"x", 1};
    serving.ip_addresses = &bad_ip;
    serving.ip_count = 1;
    CHECK_RC(VERIFY(leaf, ln, &serving, spki, sizeof spki, now, &v), KUBEBOOT_RESULT_INVALID_IP_ADDRESS);
#undef VERIFY

    /* The same in the caller's scratch (no heap): its size asked first; a short one is refused
       with the size and no output. */
    size_t need = 0, needed = 0;
    CHECK_RC(kubeboot_verify_scratch_len(leaf, ln, ca, cn, &need), OK);
    CHECK(need > 0 && need < ln + cn);
    uint8_t *scratch = malloc(need);
    memcpy(&v, &zero, sizeof v);
    CHECK_RC(kubeboot_verify_issued_scratch(leaf, ln, ca, cn, &node1, spki, sizeof spki, now, scratch, need - 1,
                                            &needed, &v),
             SHORT);
    CHECK(needed == need && memcmp(&v, &zero, sizeof v) == 0);
    CHECK_RC(kubeboot_verify_issued_scratch(leaf, ln, ca, cn, &node1, spki, sizeof spki, now, scratch, need, NULL, &v),
             OK);
    CHECK(v.not_before < now && v.not_after > now && eq(v.ca_subject, v.ca_subject_len, "CN=kubernetes-ec"));
    CHECK_RC(kubeboot_verify_issued_scratch(leaf, ln, ca, cn, &node1, spki, sizeof spki, 2200000000, scratch, need,
                                            NULL, &v),
             KUBEBOOT_RESULT_VERIFY_EXPIRED);
    CHECK_RC(kubeboot_verify_issued_scratch(leaf, ln, ca, cn, &node2, spki, sizeof spki, now, scratch, need, NULL, &v),
             KUBEBOOT_RESULT_VERIFY_SUBJECT_MISMATCH);
    CHECK_RC(kubeboot_verify_issued_scratch(leaf, ln, ca, cn, &node1, spki, sizeof spki, now, NULL, need, NULL, &v),
             NULLP);
    CHECK_RC(kubeboot_verify_scratch_len(NULL, 5, ca, cn, &need), NULLP);
    CHECK_RC(kubeboot_verify_scratch_len(leaf, ln, ca, cn, NULL), NULLP);
    free(scratch);

    /* Pins: kubeadm's vector. */
    size_t pn = 0;
    unsigned char *pin_crt = data("pin_test.crt", &pn);
    static const char VEC[] = "sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3";
    kubeboot_ca_pin pin, pins[2];
    CHECK_RC(kubeboot_ca_pin_parse(S(VEC), &pin), OK);
    CHECK(pin.sha256[0] == 0x34 && pin.sha256[31] == 0xb3);
    CHECK_RC(kubeboot_ca_pin_parse(S("sha256:0011"), &pin), KUBEBOOT_RESULT_INVALID_PIN);
    CHECK_RC(kubeboot_ca_pin_parse(S("\xff\xfe"), &pin), KUBEBOOT_RESULT_INVALID_PIN);
    CHECK_RC(kubeboot_ca_pin_parse(NULL, 3, &pin), NULLP);
    CHECK_RC(kubeboot_ca_pin_parse(S(VEC), NULL), NULLP);
    CHECK_RC(kubeboot_ca_pin_parse(S(VEC), &pins[1]), OK);
    memset(&pins[0], 0x11, sizeof pins[0]);
    CHECK_RC(kubeboot_ca_pin_check(pins, 2, pin_crt, pn), OK);
    CHECK_RC(kubeboot_ca_pin_check(pins, 1, pin_crt, pn), KUBEBOOT_RESULT_PIN_MISMATCH);
    CHECK_RC(kubeboot_ca_pin_check(NULL, 0, pin_crt, pn), KUBEBOOT_RESULT_PIN_MISMATCH);
    CHECK_RC(kubeboot_ca_pin_check(pins, 2, ca, cn), KUBEBOOT_RESULT_PIN_MISMATCH);
    CHECK_RC(kubeboot_ca_pin_check(pins, 2, (const uint8_t *)"junk", 4), KUBEBOOT_RESULT_MALFORMED);
    CHECK_RC(kubeboot_ca_pin_check(NULL, 2, pin_crt, pn), NULLP);
    CHECK_RC(kubeboot_ca_pin_check(pins, 1000, pin_crt, pn), KUBEBOOT_RESULT_INVALID_PARAMETER);
    char text[2 * 72];
    CHECK_RC(kubeboot_ca_pins_of_pem(pin_crt, pn, text, sizeof text, &n), OK);
    CHECK(n == 72 && memcmp(text, VEC, 71) == 0 && text[71] == '\n');
    CHECK_RC(kubeboot_ca_pins_of_pem(pin_crt, pn, text, 71, &n), SHORT);
    CHECK(n == 72);
    CHECK_RC(kubeboot_ca_pins_of_pem(pin_crt, pn, NULL, 0, &n), SHORT);
    CHECK_RC(kubeboot_ca_pins_of_pem(pin_crt, pn, text, sizeof text, NULL), NULLP);
    CHECK_RC(kubeboot_ca_pins_of_pem((const uint8_t *)"junk", 4, text, sizeof text, &n), KUBEBOOT_RESULT_MALFORMED);
    free(pin_crt);
    kubeboot_key_free(k1);
    free(leaf);
    free(ca);
}
/* ---------------------------------------------------------------------------------------- */

static void test_kubeconfig(void) {
    size_t n = 0;
    unsigned char *y = data("kubeconfig/file-ca.yaml", &n);
    kubeboot_kubeconfig *kc = NULL;
    kubeboot_kubeconfig_view v;
    CHECK_RC(kubeboot_kubeconfig_load(y, n, &kc), OK);
    CHECK_RC(kubeboot_kubeconfig_get(kc, &v), OK);
    CHECK(eq(v.server.data, v.server.len, "https://192.168.5.30:6443"));
    CHECK(eq(v.context_name.data, v.context_name.len, "bootstrap"));
    CHECK(eq(v.cluster_name.data, v.cluster_name.len, "bootstrap"));
    CHECK(eq(v.user_name.data, v.user_name.len, "kubelet-bootstrap"));
    CHECK(v.context_namespace.data == NULL && v.context_namespace.len == 0);
    CHECK(v.ca_source == KUBEBOOT_SOURCE_FILE && !v.ca_file_is_relative && v.ca_data.data == NULL);
    CHECK(eq(v.ca_file.data, v.ca_file.len, "/var/lib/kubernetes/ca.crt"));
    CHECK(eq(v.token.data, v.token.len, "07401b.f395accd246ae52d"));
    CHECK(v.client_cert_source == KUBEBOOT_SOURCE_NONE && v.client_key_source == KUBEBOOT_SOURCE_NONE);
    CHECK(!v.insecure_skip_tls_verify);
    kubeboot_kubeconfig_free(kc);
    free(y);

    y = data("kubeconfig/embedded-ca.yaml", &n);
    CHECK_RC(kubeboot_kubeconfig_load(y, n, &kc), OK);
    CHECK_RC(kubeboot_kubeconfig_get(kc, &v), OK);
    CHECK(v.ca_source == KUBEBOOT_SOURCE_DATA && v.ca_data.len > 100);
    CHECK(memcmp(v.ca_data.data, "-----BEGIN CERTIFICATE-----", 27) == 0);
    kubeboot_kubeconfig_free(kc);
    free(y);

    /* Relative paths, client cert/key files, escapes. */
    static const char REL[] = "apiVersion: v1\n"
                              "clusters:\n- cluster:\n    certificate-authority: pki/ca.crt\n"
                              "    server: \"https://10.0.0.1:6443\"\n  name: c\n"
                              "contexts:\n- context:\n    cluster: c\n    user: u\n    namespace: ns\n  name: x\n"
                              "current-context: x\nkind: Config\n"
                              "users:\n- name: u\n  user:\n    client-certificate: cur.pem\n"
                              "    client-key: /abs/cur.pem\n    tokenFile: tok\n";
    CHECK_RC(kubeboot_kubeconfig_load((const uint8_t *)REL, sizeof REL - 1, &kc), OK);
    CHECK_RC(kubeboot_kubeconfig_get(kc, &v), OK);
    CHECK(eq(v.server.data, v.server.len, "https://10.0.0.1:6443"));
    CHECK(v.ca_source == KUBEBOOT_SOURCE_FILE && v.ca_file_is_relative && eq(v.ca_file.data, v.ca_file.len, "pki/ca.crt"));
    CHECK(v.client_cert_source == KUBEBOOT_SOURCE_FILE && v.client_cert_file_is_relative);
    CHECK(v.client_key_source == KUBEBOOT_SOURCE_FILE && !v.client_key_file_is_relative);
    CHECK(eq(v.token_file.data, v.token_file.len, "tok") && v.token_file_is_relative && v.token.data == NULL);
    CHECK(eq(v.context_namespace.data, v.context_namespace.len, "ns"));
    kubeboot_kubeconfig_free(kc);

    /* Garbage, missing current-context, bad base64; NULLs. */
    kc = (kubeboot_kubeconfig *)&n;
    CHECK_RC(kubeboot_kubeconfig_load((const uint8_t *)"\x01\x02: [", 5, &kc), KUBEBOOT_RESULT_MALFORMED);
    CHECK_RC(kubeboot_kubeconfig_load((const uint8_t *)S("apiVersion: v1\nkind: Config\n"), &kc), KUBEBOOT_RESULT_MALFORMED);
    static const char B64[] = "clusters:\n- cluster:\n    certificate-authority-data: '!!notbase64'\n    server: https://a\n"
                              "  name: c\ncontexts:\n- context:\n    cluster: c\n  name: x\ncurrent-context: x\n";
    CHECK_RC(kubeboot_kubeconfig_load((const uint8_t *)B64, sizeof B64 - 1, &kc), KUBEBOOT_RESULT_MALFORMED);
    CHECK(kc == (kubeboot_kubeconfig *)&n);
    CHECK_RC(kubeboot_kubeconfig_load(NULL, 5, &kc), NULLP);
    CHECK_RC(kubeboot_kubeconfig_load((const uint8_t *)REL, 5, NULL), NULLP);
    CHECK_RC(kubeboot_kubeconfig_get(NULL, &v), NULLP);
    kubeboot_kubeconfig_free(NULL);

    /* The node kubeconfig writer; the output reads back. */
    char out[4096];
    CHECK_RC(kubeboot_node_kubeconfig_write(S("https://127.0.0.1:6443"), S("/etc/k/ca.crt"), NULL, 0, false,
                                            S("/var/lib/kubelet/pki"), out, sizeof out, &n),
             OK);
    CHECK(find_bytes(out, n, "certificate-authority: /etc/k/ca.crt\n", 37) != NULL);
    CHECK(find_bytes(out, n, "client-key: /var/lib/kubelet/pki/kubelet-client-current.pem\n", 60) != NULL);
    CHECK(find_bytes(out, n, "current-context: default-context\n", 33) != NULL);
    CHECK_RC(kubeboot_kubeconfig_load((const uint8_t *)out, n, &kc), OK);
    CHECK_RC(kubeboot_kubeconfig_get(kc, &v), OK);
    CHECK(eq(v.server.data, v.server.len, "https://127.0.0.1:6443"));
    CHECK(eq(v.client_cert_file.data, v.client_cert_file.len, "/var/lib/kubelet/pki/kubelet-client-current.pem"));
    kubeboot_kubeconfig_free(kc);
    size_t need = n;
    CHECK_RC(kubeboot_node_kubeconfig_write(S("https://127.0.0.1:6443"), S("/etc/k/ca.crt"), NULL, 0, false,
                                            S("/var/lib/kubelet/pki"), out, need - 1, &n),
             SHORT);
    CHECK(n == need);
    static const char PEM[] = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    CHECK_RC(kubeboot_node_kubeconfig_write(S("https://h"), NULL, 0, (const uint8_t *)PEM, sizeof PEM - 1, true,
                                            S("pki"), out, sizeof out, &n),
             OK);
    CHECK(find_bytes(out, n, "certificate-authority-data: ", 28) != NULL);
    CHECK(find_bytes(out, n, "insecure-skip-tls-verify: true", 30) != NULL);
    CHECK_RC(kubeboot_node_kubeconfig_write(NULL, 0, NULL, 0, NULL, 0, false, S("pki"), out, sizeof out, &n),
             KUBEBOOT_RESULT_INVALID_PARAMETER);
    CHECK_RC(kubeboot_node_kubeconfig_write(S("https://h"), NULL, 0, NULL, 0, false, S("pki"), out, sizeof out, NULL),
             NULLP);
    CHECK_RC(kubeboot_node_kubeconfig_write(S("https://h"), NULL, 0, NULL, 0, false, S("\xff"), out, sizeof out, &n),
             KUBEBOOT_RESULT_INVALID_UTF8);
}

/* ---------------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s <k1.pem> [<k1.der>]\n", argv[0]);
        return 2;
    }
    size_t pem_len = 0, der_len = 0;
    unsigned char *pem = read_file(argv[1], &pem_len);
    unsigned char *der = argc > 2 ? read_file(argv[2], &der_len) : NULL;
    if (!pem || pem_len == 0) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        free(pem);
        free(der);
        return 2;
    }
    test_results();
    test_tokens();
    test_keys(pem, pem_len, der, der_len);
    test_csr(pem, pem_len);
    test_grammar();
    test_verify(pem, pem_len);
    test_kubeconfig();
    test_capacities();
    test_agent();
    test_agent_device();
    free(pem);
    free(der);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
