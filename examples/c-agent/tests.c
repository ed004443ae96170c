/*
 * C tests of libkubeboot: every exported function, with NULLs, zero and short buffers, garbage
 * input, _free(NULL), the sign callback and known vectors.
 *
 * Usage: kubeboot-c-tests <k1.pem> [<k1.der>]
 */
#define _POSIX_C_SOURCE 200809L
#include <kubeboot.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int passed, failed;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (cond) {                                                                    \
            passed++;                                                                  \
        } else {                                                                       \
            failed++;                                                                  \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);            \
        }                                                                              \
    } while (0)

#define CHECK_RC(expr, want)                                                           \
    do {                                                                               \
        kubeboot_result rc_ = (expr);                                                  \
        if (rc_ == (kubeboot_result)(want)) {                                          \
            passed++;                                                                  \
        } else {                                                                       \
            failed++;                                                                  \
            fprintf(stderr, "FAIL %s:%d: %s = %u, want %u (%s)\n", __FILE__, __LINE__, \
                    #expr, (unsigned)rc_, (unsigned)(want), #want);                    \
        }                                                                              \
    } while (0)

#define S(lit) (lit), (sizeof(lit) - 1)
#define OK KUBEBOOT_RESULT_OK
#define NULLP KUBEBOOT_RESULT_NULL_PARAMETER
#define SHORT KUBEBOOT_RESULT_INSUFFICIENT_SIZE

static const char K1_NODE1_NAME[] = "node-csr-n8Gs_E-Z9L7aSxQqzzA00Csg_R1hDXOPVUFrdIQkVzo";

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = malloc(65536);
    size_t n = buf ? fread(buf, 1, 65536, f) : 0;
    fclose(f);
    *len = n;
    return buf;
}

static int all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

/* Portable memmem. */
static const void *find_bytes(const void *hay, size_t hay_len, const void *needle, size_t needle_len) {
    const unsigned char *h = hay;
    if (needle_len == 0) return hay;
    for (size_t i = 0; i + needle_len <= hay_len; i++)
        if (memcmp(h + i, needle, needle_len) == 0) return h + i;
    return NULL;
}

static int eq(const void *got, size_t got_len, const char *want) {
    return got_len == strlen(want) && memcmp(got, want, got_len) == 0;
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

    CHECK_RC(kubeboot_result_name(KUBEBOOT_RESULT_VERIFY_EXPIRED, buf, sizeof buf, &n), OK);
    CHECK(eq(buf, n, "expired"));
    CHECK_RC(kubeboot_result_name(KUBEBOOT_RESULT_VERIFY_NOT_YET_VALID, buf, sizeof buf, &n), OK);
    CHECK(eq(buf, n, "not-yet-valid"));
    CHECK_RC(kubeboot_result_name(KUBEBOOT_RESULT_INVALID_TOKEN, buf, sizeof buf, &n), OK);
    CHECK(eq(buf, n, "invalid-token"));
    CHECK_RC(kubeboot_result_name(7777, buf, sizeof buf, &n), OK);
    CHECK(eq(buf, n, "unknown"));
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

/* Sign callback: userdata is a kubeboot_key; counts calls. */
struct cb_state {
    const kubeboot_key *key;
    int calls;
    int mode; /* 0 sign, 1 fail, 2 zero signature */
};

static uint32_t sign_cb(void *userdata, const uint8_t *msg, size_t msg_len, uint8_t *sig_rs) {
    struct cb_state *st = userdata;
    st->calls++;
    if (st->mode == 1) return KUBEBOOT_RESULT_SIGNER_FAILED;
    if (st->mode == 2) {
        memset(sig_rs, 0, 64);
        return KUBEBOOT_RESULT_OK;
    }
    return kubeboot_key_sign(st->key, msg, msg_len, sig_rs);
}

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

    /* Client CSR, PEM and DER. */
    memset(csr, 0, sizeof csr);
    CHECK_RC(kubeboot_csr_client(k1, S("node-1"), KUBEBOOT_FORMAT_PEM, csr, 100, &n), SHORT);
    CHECK(n > 100 && n <= KUBEBOOT_CSR_MAX_LEN && all_zero(csr, sizeof csr));
    CHECK_RC(kubeboot_csr_client(k1, S("node-1"), KUBEBOOT_FORMAT_PEM, NULL, 0, &n), SHORT);
    CHECK_RC(kubeboot_csr_client(k1, S("node-1"), KUBEBOOT_FORMAT_PEM, csr, n, &n), OK);
    CHECK(memcmp(csr, "-----BEGIN CERTIFICATE REQUEST-----\n", 36) == 0);
    size_t client_pem_len = n;
    int v = openssl_verify(csr, n);
    CHECK(v != 0); /* 1 verified, -1 openssl unavailable */
    CHECK_RC(kubeboot_csr_client(k1, S("node-1"), KUBEBOOT_FORMAT_DER, csr2, sizeof csr2, &n2), OK);
    CHECK(n2 > 100 && csr2[0] == 0x30);
    CHECK_RC(kubeboot_csr_client(k1, S("node-1"), 7, csr2, sizeof csr2, &n2), KUBEBOOT_RESULT_INVALID_PARAMETER);
    CHECK_RC(kubeboot_csr_client(k1, S("-bad-"), KUBEBOOT_FORMAT_PEM, csr2, sizeof csr2, &n2), KUBEBOOT_RESULT_INVALID_NODE_NAME);
    CHECK_RC(kubeboot_csr_client(k1, "\xff", 1, KUBEBOOT_FORMAT_PEM, csr2, sizeof csr2, &n2), KUBEBOOT_RESULT_INVALID_UTF8);
    CHECK_RC(kubeboot_csr_client(NULL, S("node-1"), KUBEBOOT_FORMAT_PEM, csr2, sizeof csr2, &n2), NULLP);
    CHECK_RC(kubeboot_csr_client(k1, S("node-1"), KUBEBOOT_FORMAT_PEM, NULL, 5000, &n2), NULLP);
    CHECK_RC(kubeboot_csr_client(k1, S("node-1"), KUBEBOOT_FORMAT_PEM, csr2, sizeof csr2, NULL), NULLP);

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

    /* Serving CSR. */
    kubeboot_str dns[2] = {{S("node-1.example.com")}, {S("node-1")}};
    kubeboot_str ips[2] = {{S("10.0.0.1")}, {S("fd00::1")}};
    kubeboot_str bad_ip[1] = {{S("10.0.0.256")}};
    kubeboot_str bad_dns[1] = {{S("-bad-.example.com")}};
    CHECK_RC(kubeboot_csr_serving(k1, S("node-1"), dns, 2, ips, 2, KUBEBOOT_FORMAT_PEM, csr, sizeof csr, &n), OK);
    CHECK(openssl_verify(csr, n) != 0);
    CHECK_RC(kubeboot_csr_check(csr, n, S(serving_signer), serving_usages, 2, 0), OK);
    CHECK_RC(kubeboot_csr_check(csr, n, S(client_signer), client_usages, 2, 0),
             KUBEBOOT_RESULT_POLICY_DNS_SAN_NOT_ALLOWED);
    CHECK_RC(kubeboot_csr_serving(k1, S("node-1"), NULL, 0, ips, 1, KUBEBOOT_FORMAT_DER, csr, sizeof csr, &n), OK);
    CHECK_RC(kubeboot_csr_serving(k1, S("node-1"), NULL, 0, NULL, 0, KUBEBOOT_FORMAT_PEM, csr, sizeof csr, &n),
             KUBEBOOT_RESULT_POLICY_SAN_REQUIRED);
    CHECK_RC(kubeboot_csr_serving(k1, S("node-1"), NULL, 0, bad_ip, 1, KUBEBOOT_FORMAT_PEM, csr, sizeof csr, &n),
             KUBEBOOT_RESULT_INVALID_IP_ADDRESS);
    CHECK_RC(kubeboot_csr_serving(k1, S("node-1"), bad_dns, 1, NULL, 0, KUBEBOOT_FORMAT_PEM, csr, sizeof csr, &n),
             KUBEBOOT_RESULT_INVALID_DNS_NAME);
    kubeboot_str many[KUBEBOOT_CSR_MAX_SANS + 1];
    for (int i = 0; i <= KUBEBOOT_CSR_MAX_SANS; i++) many[i] = (kubeboot_str){S("10.1.2.3")};
    CHECK_RC(kubeboot_csr_serving(k1, S("node-1"), NULL, 0, many, KUBEBOOT_CSR_MAX_SANS + 1,
                                  KUBEBOOT_FORMAT_PEM, csr, sizeof csr, &n),
             KUBEBOOT_RESULT_TOO_MANY_SANS);
    CHECK_RC(kubeboot_csr_serving(k1, S("node-1"), NULL, 3, ips, 1, KUBEBOOT_FORMAT_PEM, csr, sizeof csr, &n), NULLP);
    CHECK_RC(kubeboot_csr_serving(NULL, S("node-1"), dns, 1, NULL, 0, KUBEBOOT_FORMAT_PEM, csr, sizeof csr, &n), NULLP);
    CHECK_RC(kubeboot_csr_serving(k1, S("node-1"), dns, 1, NULL, 0, KUBEBOOT_FORMAT_PEM, csr, 10, &n), SHORT);

    /* Sign callback, backed by a second key (k2). */
    struct cb_state st = {k2, 0, 0};
    kubeboot_signer signer;
    memset(&signer, 0, sizeof signer);
    signer.sign = sign_cb;
    signer.userdata = &st;
    CHECK_RC(kubeboot_key_public_point(k2, signer.public_point), OK);
    CHECK_RC(kubeboot_csr_client_with_signer(&signer, S("node-2"), KUBEBOOT_FORMAT_PEM, csr, 10, &n), SHORT);
    CHECK(st.calls == 0); /* size query does not sign */
    CHECK_RC(kubeboot_csr_client_with_signer(&signer, S("node-2"), KUBEBOOT_FORMAT_PEM, csr, sizeof csr, &n), OK);
    CHECK(st.calls == 1);
    CHECK(openssl_verify(csr, n) != 0);
    /* Same CSR as signing with k2 directly (deterministic ECDSA). */
    CHECK_RC(kubeboot_csr_client(k2, S("node-2"), KUBEBOOT_FORMAT_PEM, csr2, sizeof csr2, &n2), OK);
    CHECK(n == n2 && memcmp(csr, csr2, n) == 0);
    CHECK_RC(kubeboot_csr_check(csr, n, S(client_signer), client_usages, 2, 0), OK);
    CHECK_RC(kubeboot_csr_serving_with_signer(&signer, S("node-2"), dns, 2, ips, 2, KUBEBOOT_FORMAT_DER,
                                              csr, sizeof csr, &n),
             OK);
    CHECK(st.calls == 2 && csr[0] == 0x30);
    CHECK_RC(kubeboot_csr_serving_with_signer(&signer, S("node-2"), dns, 1, NULL, 0, KUBEBOOT_FORMAT_PEM,
                                              csr, sizeof csr, &n),
             OK);
    CHECK_RC(kubeboot_csr_check(csr, n, S(serving_signer), serving_usages, 2, 0), OK);
    CHECK_RC(kubeboot_csr_serving_with_signer(NULL, S("node-2"), dns, 1, NULL, 0, KUBEBOOT_FORMAT_PEM,
                                              csr, sizeof csr, &n),
             NULLP);
    /* Failing callback, garbage signature, wrong key, bad point, no callback. */
    memset(csr2, 0, sizeof csr2);
    st.mode = 1;
    CHECK_RC(kubeboot_csr_client_with_signer(&signer, S("node-2"), KUBEBOOT_FORMAT_PEM, csr2, sizeof csr2, &n2),
             KUBEBOOT_RESULT_SIGNER_FAILED);
    st.mode = 2;
    CHECK_RC(kubeboot_csr_client_with_signer(&signer, S("node-2"), KUBEBOOT_FORMAT_DER, csr2, sizeof csr2, &n2),
             KUBEBOOT_RESULT_SIGNER_FAILED);
    st.mode = 0;
    st.key = k1; /* signs with the wrong key */
    CHECK_RC(kubeboot_csr_client_with_signer(&signer, S("node-2"), KUBEBOOT_FORMAT_PEM, csr2, sizeof csr2, &n2),
             KUBEBOOT_RESULT_SIGNER_FAILED);
    CHECK(all_zero(csr2, sizeof csr2));
    kubeboot_signer bad = signer;
    memset(bad.public_point, 0, sizeof bad.public_point);
    CHECK_RC(kubeboot_csr_client_with_signer(&bad, S("node-2"), KUBEBOOT_FORMAT_PEM, csr2, sizeof csr2, &n2),
             KUBEBOOT_RESULT_MALFORMED_KEY);
    bad = signer;
    bad.sign = NULL;
    CHECK_RC(kubeboot_csr_client_with_signer(&bad, S("node-2"), KUBEBOOT_FORMAT_PEM, csr2, sizeof csr2, &n2), NULLP);

    /* CSR object JSON. */
    char json[8192];
    CHECK_RC(kubeboot_csr_client(k1, S("node-1"), KUBEBOOT_FORMAT_PEM, csr, sizeof csr, &n), OK);
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

static void test_rotation(void) {
    const int64_t H = 3600, M = 60, t = 1785000000;
    const int64_t nb = t - 5 * M, na = t + 8760 * H - 5 * M;
    CHECK(kubeboot_rotation_deadline(nb, na, 0) == nb + 6132 * H);
    CHECK(kubeboot_rotation_deadline(nb, na, 1u << 31) == nb + 7008 * H);
    CHECK(kubeboot_rotation_deadline(nb, na, UINT32_MAX) == nb + 7884 * H - 1);
    CHECK(kubeboot_rotation_deadline(100, 50, 7) == 50);
    CHECK(kubeboot_rotation_deadline(INT64_MIN, INT64_MAX, UINT32_MAX) < INT64_MAX);
    CHECK(kubeboot_needs_rotation(100, 100));
    CHECK(!kubeboot_needs_rotation(100, 99));
    CHECK(kubeboot_rotation_due(false, 0, 0, 0, 0));
    CHECK(!kubeboot_rotation_due(true, 0, 1000, 0, 699));
    CHECK(kubeboot_rotation_due(true, 0, 1000, 0, 700));
    CHECK(kubeboot_rotation_due(true, 0, 1000, UINT32_MAX, 1000));
    CHECK(kubeboot_backoff_delay_ms(0, 0) == KUBEBOOT_BACKOFF_INITIAL_MS);
    CHECK(kubeboot_backoff_delay_ms(3, 0) == 16000);
    CHECK(kubeboot_backoff_delay_ms(3, UINT32_MAX) < 17600 && kubeboot_backoff_delay_ms(3, UINT32_MAX) >= 17599);
    CHECK(kubeboot_backoff_delay_ms(4, 123) == KUBEBOOT_POLL_INTERVAL_MS);
    CHECK(kubeboot_backoff_delay_ms(UINT32_MAX, UINT32_MAX) == 32000);
}

/* ---------------------------------------------------------------------------------------- */
/* Data files under core/tests/data (KUBEBOOT_DATA, set by the Makefile). */

static const char *data_dir(void) {
    const char *d = getenv("KUBEBOOT_DATA");
    return d && *d ? d : "../../core/tests/data";
}

static unsigned char *data(const char *name, size_t *len) {
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

/* 2026-12-02T10:50:40Z, when the recorded run happened (the issued cert is valid then). */
static const int64_t REC_NOW = 1796208640;
static const char REC_TOKEN[] = "hi3rc6.cpoi3m254kzpt12t";
static const char REC_APPROVED[] = "kubeboot-rec-approved-105026";

/* What a client certificate for `node` must be. */
static kubeboot_expected client_cert(const char *node) {
    kubeboot_expected x;
    memset(&x, 0, sizeof x);
    x.node_name = node;
    x.node_name_len = strlen(node);
    x.profile = KUBEBOOT_PROFILE_CLIENT;
    return x;
}

static kubeboot_engine_config rec_config(const char *node, const kubeboot_token *t, const unsigned char *ca,
                                         size_t ca_len) {
    kubeboot_engine_config c;
    memset(&c, 0, sizeof c);
    c.expected = client_cert(node);
    c.auth = KUBEBOOT_AUTH_TOKEN;
    c.token = t;
    c.naming = KUBEBOOT_NAMING_NODE_CSR;
    c.ca_pem = ca;
    c.ca_pem_len = ca_len;
    c.watch = true;
    return c;
}

static int bytes_eq(const void *p, size_t n, const char *want) { return p && eq(p, n, want); }

/* Drive one recorded run: create (201) -> watch stream fed in `chunk`-byte pieces. Returns the
   final action (DONE or FAILED). */
static kubeboot_action rec_run(kubeboot_engine *e, const char *created, const char *watch, size_t chunk) {
    kubeboot_action a;
    size_t n = 0, wn = 0;
    CHECK_RC(kubeboot_engine_poll(e, REC_NOW, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_SEND && a.request_kind == KUBEBOOT_REQUEST_CREATE);
    CHECK(a.method && strcmp(a.method, "POST") == 0);
    CHECK(bytes_eq(a.path, a.path_len, "/apis/certificates.k8s.io/v1/certificatesigningrequests"));
    CHECK(bytes_eq(a.authorization, a.authorization_len, "Bearer hi3rc6.cpoi3m254kzpt12t"));
    CHECK(a.content_type && strcmp(a.content_type, "application/json") == 0);
    CHECK(a.accept && strcmp(a.accept, "application/json") == 0);
    CHECK(a.body && a.body_len > 100 && find_bytes(a.body, a.body_len, "\"node-csr-", 10) != NULL);
    CHECK(find_bytes(a.body, a.body_len, "kube-apiserver-client-kubelet", 29) != NULL);
    /* Outstanding request: AWAIT until the deadline (one hour by default). */
    CHECK_RC(kubeboot_engine_poll(e, REC_NOW, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_AWAIT && a.until == REC_NOW + 3600);
    CHECK(kubeboot_engine_deadline(e) == REC_NOW + 3600);
    CHECK(kubeboot_engine_request_outstanding(e));
    unsigned char *body = data(created, &n);
    CHECK_RC(kubeboot_engine_on_response(e, REC_NOW, 201, body, n), OK);
    free(body);
    CHECK_RC(kubeboot_engine_poll(e, REC_NOW, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_SEND && a.request_kind == KUBEBOOT_REQUEST_WATCH);
    CHECK(a.method && strcmp(a.method, "GET") == 0 && a.body == NULL && a.body_len == 0 && a.content_type == NULL);
    CHECK(a.path_len > 60 && find_bytes(a.path, a.path_len, "&watch=true&timeoutSeconds=300", 30) != NULL);
    unsigned char *w = data(watch, &wn);
    for (size_t off = 0; w && off < wn; off += chunk) {
        size_t len = wn - off < chunk ? wn - off : chunk;
        bool keep = true;
        CHECK_RC(kubeboot_engine_on_stream_data(e, REC_NOW + 1, w + off, len, &keep), OK);
        if (!keep) break; /* the watch is over (done or failed) */
    }
    free(w);
    CHECK(!kubeboot_engine_request_outstanding(e)); /* the stream can be dropped now */
    CHECK_RC(kubeboot_engine_poll(e, REC_NOW + 1, &a), OK);
    return a;
}

static void test_engine(void) {
    size_t kn = 0, cn = 0, n = 0;
    char buf[1024];
    unsigned char *kp = data("recorded/approved.key.pem", &kn);
    unsigned char *ca = data("recorded/client-ca.pem", &cn);
    kubeboot_key *key = NULL;
    kubeboot_token *tok = NULL;
    CHECK_RC(kubeboot_key_from_pem(kp, kn, &key), OK);
    CHECK_RC(kubeboot_token_parse(S(REC_TOKEN), &tok), OK);
    kubeboot_engine_config cfg = rec_config("rec-1", tok, ca, cn);
    kubeboot_engine *e = NULL;

    /* NULLs and bad configurations; *out untouched on failure. */
    kubeboot_engine *sentinel = (kubeboot_engine *)&n;
    e = sentinel;
    CHECK_RC(kubeboot_engine_new(NULL, key, REC_NOW, 1, &e), NULLP);
    CHECK_RC(kubeboot_engine_new(&cfg, NULL, REC_NOW, 1, &e), NULLP);
    CHECK_RC(kubeboot_engine_new(&cfg, key, REC_NOW, 1, NULL), NULLP);
    kubeboot_engine_config bad = cfg;
    bad.token = NULL;
    CHECK_RC(kubeboot_engine_new(&bad, key, REC_NOW, 1, &e), NULLP);
    bad = cfg;
    bad.expected.profile = 7;
    CHECK_RC(kubeboot_engine_new(&bad, key, REC_NOW, 1, &e), KUBEBOOT_RESULT_INVALID_PARAMETER);
    bad = cfg;
    bad.auth = 7;
    CHECK_RC(kubeboot_engine_new(&bad, key, REC_NOW, 1, &e), KUBEBOOT_RESULT_INVALID_PARAMETER);
    bad = cfg;
    bad.naming = 7;
    CHECK_RC(kubeboot_engine_new(&bad, key, REC_NOW, 1, &e), KUBEBOOT_RESULT_INVALID_PARAMETER);
    bad = cfg;
    bad.ca_pem_len = 0;
    CHECK_RC(kubeboot_engine_new(&bad, key, REC_NOW, 1, &e), KUBEBOOT_RESULT_INVALID_PARAMETER);
    bad = cfg;
    bad.expected.node_name = "Not_A_Node";
    bad.expected.node_name_len = 10;
    CHECK_RC(kubeboot_engine_new(&bad, key, REC_NOW, 1, &e), KUBEBOOT_RESULT_INVALID_NODE_NAME);
    bad = cfg;
    bad.expected.node_name = "\xff";
    bad.expected.node_name_len = 1;
    CHECK_RC(kubeboot_engine_new(&bad, key, REC_NOW, 1, &e), KUBEBOOT_RESULT_INVALID_UTF8);
    bad = cfg;
    bad.expiration_seconds = 599;
    CHECK_RC(kubeboot_engine_new(&bad, key, REC_NOW, 1, &e), KUBEBOOT_RESULT_INVALID_EXPIRATION_SECONDS);
    bad = cfg;
    bad.expected.profile = KUBEBOOT_PROFILE_SERVING; /* no SANs */
    CHECK_RC(kubeboot_engine_new(&bad, key, REC_NOW, 1, &e), KUBEBOOT_RESULT_POLICY_SAN_REQUIRED);
    kubeboot_str bad_ip = {"300.1.1.1", 9};
    bad.expected.ip_addresses = &bad_ip;
    bad.expected.ip_count = 1;
    CHECK_RC(kubeboot_engine_new(&bad, key, REC_NOW, 1, &e), KUBEBOOT_RESULT_INVALID_IP_ADDRESS);
    CHECK(e == sentinel);
    e = NULL;

    /* The recorded happy path, in several chunkings (1 byte, 7, 100, whole). Inputs may be freed
       after _new: the engine keeps copies. */
    size_t chunks[] = {1, 7, 100, 1u << 20};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        kubeboot_key *k2 = NULL;
        kubeboot_token *t2 = NULL;
        CHECK_RC(kubeboot_key_from_pem(kp, kn, &k2), OK);
        CHECK_RC(kubeboot_token_parse(S(REC_TOKEN), &t2), OK);
        kubeboot_engine_config c2 = rec_config("rec-1", t2, ca, cn);
        CHECK_RC(kubeboot_engine_new(&c2, k2, REC_NOW, 42, &e), OK);
        kubeboot_key_free(k2);
        kubeboot_token_free(t2);
        CHECK_RC(kubeboot_engine_csr_name(e, buf, sizeof buf, &n), OK);
        CHECK(n == 52 && memcmp(buf, "node-csr-", 9) == 0);
        kubeboot_action a = rec_run(e, "recorded/csr-create-201.json", "recorded/watch-approved.json", chunks[i]);
        CHECK(a.kind == KUBEBOOT_ACTION_DONE);
        CHECK(a.result == OK && a.http_status == 0);
        CHECK(a.cert_pem && a.cert_pem_len > 100 && memcmp(a.cert_pem, "-----BEGIN CERTIFICATE-----", 27) == 0);
        CHECK(bytes_eq(a.csr_name, a.csr_name_len, REC_APPROVED));
        int64_t life = a.not_after - a.not_before;
        CHECK(life > 3000 && a.rotation_deadline >= a.not_before + life * 7 / 10 &&
              a.rotation_deadline <= a.not_before + life * 9 / 10);
        /* The issued certificate passes the stand-alone validation too. */
        uint8_t spki[KUBEBOOT_KEY_SPKI_LEN];
        kubeboot_key *k3 = NULL;
        CHECK_RC(kubeboot_key_from_pem(kp, kn, &k3), OK);
        CHECK_RC(kubeboot_key_public_spki_der(k3, spki, sizeof spki, &n), OK);
        kubeboot_key_free(k3);
        kubeboot_verified v;
        kubeboot_expected x = client_cert("rec-1");
        CHECK_RC(kubeboot_verify_issued(a.cert_pem, a.cert_pem_len, ca, cn, &x, spki, sizeof spki, REC_NOW + 1, &v),
                 OK);
        CHECK(v.not_before == a.not_before && v.not_after == a.not_after);
        CHECK(eq(v.ca_subject, v.ca_subject_len, "CN=kubeboot-e2e-client-ca") && v.ca_index == 0);
        CHECK_RC(kubeboot_engine_csr_name(e, buf, sizeof buf, &n), OK);
        CHECK(eq(buf, n, REC_APPROVED));
        /* Done stays done; further input is ignored (one error channel: poll). */
        CHECK_RC(kubeboot_engine_poll(e, REC_NOW + 2, &a), OK);
        CHECK(a.kind == KUBEBOOT_ACTION_DONE);
        CHECK_RC(kubeboot_engine_on_response(e, REC_NOW, 200, (const uint8_t *)"{}", 2), OK);
        CHECK_RC(kubeboot_engine_poll(e, REC_NOW + 2, &a), OK);
        CHECK(a.kind == KUBEBOOT_ACTION_DONE);
        CHECK_RC(kubeboot_engine_failure_message(e, buf, sizeof buf, &n), OK);
        CHECK(n == 0);
        kubeboot_engine_free(e);
        e = NULL;
    }

    /* Denied and failed: FAILED with the server's reason. */
    const char *cases[][4] = {
        {"recorded/denied.key.pem", "rec-2", "recorded/csr-create-201-pending.json", "recorded/watch-denied.json"},
        {"recorded/failed.key.pem", "rec-3", "recorded/csr-create-201-to-fail.json", "recorded/watch-failed.json"},
    };
    for (int i = 0; i < 2; i++) {
        size_t dn = 0;
        unsigned char *dk = data(cases[i][0], &dn);
        kubeboot_key *k2 = NULL;
        CHECK_RC(kubeboot_key_from_pem(dk, dn, &k2), OK);
        free(dk);
        kubeboot_engine_config c2 = rec_config(cases[i][1], tok, ca, cn);
        CHECK_RC(kubeboot_engine_new(&c2, k2, REC_NOW, 7, &e), OK);
        kubeboot_key_free(k2);
        kubeboot_action a = rec_run(e, cases[i][2], cases[i][3], 64);
        CHECK(a.kind == KUBEBOOT_ACTION_FAILED);
        CHECK(a.result == (i == 0 ? KUBEBOOT_RESULT_CSR_DENIED : KUBEBOOT_RESULT_CSR_FAILED));
        CHECK(a.http_status == 200);
        CHECK_RC(kubeboot_engine_failure_message(e, NULL, 0, &n), n == 0 ? OK : SHORT);
        size_t need = n;
        CHECK(need > 0);
        CHECK_RC(kubeboot_engine_failure_message(e, buf, need - 1, &n), SHORT);
        CHECK_RC(kubeboot_engine_failure_message(e, buf, sizeof buf, &n), OK);
        CHECK(n == need);
        if (i == 1) CHECK(n > 25 && memcmp(buf, "SignerValidationFailure: ", 25) == 0);
        CHECK(find_bytes(buf, n, "cpoi3m254kzpt12t", 16) == NULL); /* never the token secret */
        kubeboot_engine_free(e);
        e = NULL;
    }

    /* 401 / 403 / 422 from the create; 503 and transport errors back off (WAIT). */
    const struct {
        const char *file;
        uint16_t status;
        uint32_t want;
        const char *needle;
    } st[] = {
        {"recorded/csr-create-401-wrong-secret.json", 401, KUBEBOOT_RESULT_UNAUTHORIZED, "Unauthorized"},
        {"recorded/csr-create-403-no-binding.json", 403, KUBEBOOT_RESULT_FORBIDDEN, "cannot create resource"},
        {"recorded/csr-create-422-invalid.json", 422, KUBEBOOT_RESULT_HTTP_STATUS, "Invalid"},
    };
    for (size_t i = 0; i < sizeof st / sizeof st[0]; i++) {
        CHECK_RC(kubeboot_engine_new(&cfg, key, REC_NOW, 3, &e), OK);
        kubeboot_action a;
        CHECK_RC(kubeboot_engine_poll(e, REC_NOW, &a), OK);
        unsigned char *b = data(st[i].file, &n);
        CHECK_RC(kubeboot_engine_on_response(e, REC_NOW, st[i].status, b, n), OK);
        free(b);
        CHECK_RC(kubeboot_engine_poll(e, REC_NOW, &a), OK);
        CHECK(a.kind == KUBEBOOT_ACTION_FAILED && a.result == (kubeboot_result)st[i].want && a.http_status == st[i].status);
        CHECK_RC(kubeboot_engine_failure_message(e, buf, sizeof buf, &n), OK);
        CHECK(find_bytes(buf, n, st[i].needle, strlen(st[i].needle)) != NULL);
        kubeboot_engine_free(e);
        e = NULL;
    }
    CHECK_RC(kubeboot_engine_new(&cfg, key, REC_NOW, 3, &e), OK);
    kubeboot_action a;
    CHECK_RC(kubeboot_engine_poll(e, REC_NOW, &a), OK);
    CHECK_RC(kubeboot_engine_on_response(e, REC_NOW, 503, NULL, 0), OK);
    CHECK_RC(kubeboot_engine_poll(e, REC_NOW, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_WAIT && a.until > REC_NOW && a.until <= REC_NOW + 3);
    CHECK_RC(kubeboot_engine_poll(e, a.until, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_SEND && a.request_kind == KUBEBOOT_REQUEST_CREATE);
    CHECK_RC(kubeboot_engine_on_transport_error(e, REC_NOW + 3), OK);
    CHECK_RC(kubeboot_engine_poll(e, REC_NOW + 3, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_WAIT && a.until > REC_NOW + 3);
    /* Pushback: a 429 with Retry-After waits as asked (21 to 31 s), not the backoff's 8 s. */
    CHECK_RC(kubeboot_engine_poll(e, a.until, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_SEND);
    CHECK_RC(kubeboot_engine_on_response_with_retry_after(e, REC_NOW + 10, 429, "20", 2, NULL, 0), OK);
    CHECK_RC(kubeboot_engine_poll(e, REC_NOW + 10, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_WAIT && a.until >= REC_NOW + 31 && a.until <= REC_NOW + 41);
    CHECK_RC(kubeboot_engine_on_response_with_retry_after(NULL, 0, 429, "1", 1, NULL, 0), NULLP);
    CHECK_RC(kubeboot_engine_on_response_with_retry_after(e, 0, 429, NULL, 1, NULL, 0), NULLP);
    CHECK_RC(kubeboot_engine_on_response_with_retry_after(e, 0, 429, NULL, 0, NULL, 1), NULLP);
    /* Garbage: a 201 that is not a CSR object. */
    CHECK_RC(kubeboot_engine_poll(e, REC_NOW + 100, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_SEND);
    CHECK_RC(kubeboot_engine_on_response(e, REC_NOW + 100, 201, (const uint8_t *)"\x01garbage{", 9), OK);
    CHECK_RC(kubeboot_engine_poll(e, REC_NOW + 100, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_FAILED && a.result == KUBEBOOT_RESULT_MALFORMED_RESPONSE);
    /* The deadline: a fresh engine past its wait fails with TIMEOUT. */
    kubeboot_engine_free(e);
    CHECK_RC(kubeboot_engine_new(&cfg, key, REC_NOW, 3, &e), OK);
    CHECK_RC(kubeboot_engine_poll(e, REC_NOW + 3600, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_FAILED && a.result == KUBEBOOT_RESULT_TIMEOUT);
    /* NULL handles. */
    CHECK_RC(kubeboot_engine_poll(NULL, 0, &a), NULLP);
    CHECK_RC(kubeboot_engine_poll(e, 0, NULL), NULLP);
    CHECK_RC(kubeboot_engine_on_response(NULL, 0, 200, NULL, 0), NULLP);
    CHECK_RC(kubeboot_engine_on_response(e, 0, 200, NULL, 5), NULLP);
    bool keep = true;
    CHECK_RC(kubeboot_engine_on_stream_data(NULL, 0, NULL, 0, &keep), NULLP);
    CHECK_RC(kubeboot_engine_on_stream_data(e, 0, NULL, 0, NULL), NULLP);
    CHECK_RC(kubeboot_engine_on_stream_end(NULL, 0), NULLP);
    CHECK_RC(kubeboot_engine_on_transport_error(NULL, 0), NULLP);
    CHECK_RC(kubeboot_engine_failure_message(NULL, buf, sizeof buf, &n), NULLP);
    CHECK_RC(kubeboot_engine_failure_message(e, buf, sizeof buf, NULL), NULLP);
    CHECK_RC(kubeboot_engine_csr_name(NULL, buf, sizeof buf, &n), NULLP);
    CHECK(kubeboot_engine_deadline(NULL) == 0);
    CHECK(!kubeboot_engine_request_outstanding(NULL));
    kubeboot_engine_free(e);
    kubeboot_engine_free(NULL);

    /* Rotation mode: generateName, client-certificate auth (no Authorization), poll mode. */
    cfg.auth = KUBEBOOT_AUTH_CLIENT_CERTIFICATE;
    cfg.token = NULL;
    cfg.naming = KUBEBOOT_NAMING_GENERATE;
    cfg.watch = false;
    CHECK_RC(kubeboot_engine_new(&cfg, key, REC_NOW, 3, &e), OK);
    CHECK(kubeboot_engine_deadline(e) == REC_NOW + 900);
    CHECK_RC(kubeboot_engine_csr_name(e, buf, sizeof buf, &n), OK);
    CHECK(n == 0);
    CHECK_RC(kubeboot_engine_poll(e, REC_NOW, &a), OK);
    CHECK(a.kind == KUBEBOOT_ACTION_SEND && a.authorization == NULL && a.authorization_len == 0);
    CHECK(find_bytes(a.body, a.body_len, "\"generateName\":\"csr-\"", 21) != NULL);
    kubeboot_engine_free(e);

    /* Serving profile with SANs. */
    kubeboot_str dns[] = {{"node-1.example", 14}};
    kubeboot_str ips[] = {{"10.0.0.1", 8}, {"fd00::1", 7}};
    cfg.expected.profile = KUBEBOOT_PROFILE_SERVING;
    cfg.expected.dns_names = dns;
    cfg.expected.dns_count = 1;
    cfg.expected.ip_addresses = ips;
    cfg.expected.ip_count = 2;
    cfg.expiration_seconds = 3600;
    CHECK_RC(kubeboot_engine_new(&cfg, key, REC_NOW, 3, &e), OK);
    CHECK_RC(kubeboot_engine_poll(e, REC_NOW, &a), OK);
    CHECK(find_bytes(a.body, a.body_len, "kubernetes.io/kubelet-serving", 29) != NULL);
    CHECK(find_bytes(a.body, a.body_len, "\"expirationSeconds\":3600", 24) != NULL);
    kubeboot_engine_free(e);

    kubeboot_token_free(tok);
    kubeboot_key_free(key);
    free(kp);
    free(ca);
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

static void test_store(const unsigned char *k1_pem, size_t k1_len) {
    char dir[] = "/tmp/kubeboot-c-store.XXXXXX";
    if (!mkdtemp(dir)) {
        failed++;
        return;
    }
    char certdir[256];
    snprintf(certdir, sizeof certdir, "%s/pki", dir);
    size_t ln = 0, n = 0;
    unsigned char *leaf = data("ec-leaf.crt", &ln);
    kubeboot_store *st = NULL;
    char buf[8192];

    CHECK_RC(kubeboot_store_open(S("bad/prefix"), certdir, strlen(certdir), &st), KUBEBOOT_RESULT_STORE_INVALID_PREFIX);
    CHECK(st == NULL);
    CHECK_RC(kubeboot_store_open(S("kubelet-client"), NULL, 3, &st), NULLP);
    CHECK_RC(kubeboot_store_open(S("kubelet-client"), certdir, strlen(certdir), NULL), NULLP);
    CHECK_RC(kubeboot_store_open(S("kubelet-client"), certdir, strlen(certdir), &st), OK);

    /* Empty store: no pair; the bootstrap key is generated into the key cache and reused. */
    CHECK_RC(kubeboot_store_current(st, buf, sizeof buf, &n), KUBEBOOT_RESULT_STORE_NO_CERT_KEY_FILES);
    CHECK_RC(kubeboot_store_last_error(st, buf, sizeof buf, &n), OK);
    CHECK(n > 0 && find_bytes(buf, n, "no cert/key files", 17) != NULL);
    kubeboot_key *b1 = NULL, *b2 = NULL;
    CHECK_RC(kubeboot_store_bootstrap_key(st, &b1), OK);
    CHECK_RC(kubeboot_store_bootstrap_key(st, &b2), OK);
    uint8_t p1[65], p2[65];
    CHECK_RC(kubeboot_key_public_point(b1, p1), OK);
    CHECK_RC(kubeboot_key_public_point(b2, p2), OK);
    CHECK(memcmp(p1, p2, 65) == 0);
    char cache[300];
    snprintf(cache, sizeof cache, "%s/kubelet-client.key.tmp", certdir);
    CHECK(access(cache, F_OK) == 0);
    kubeboot_key_free(b1);
    kubeboot_key_free(b2);

    /* Update: bad inputs change nothing; a good pair becomes current. */
    CHECK_RC(kubeboot_store_update(st, 1800000000, 3600, leaf, ln, (const uint8_t *)"nokey", 5),
             KUBEBOOT_RESULT_STORE_MALFORMED_KEY);
    CHECK_RC(kubeboot_store_update(st, 1800000000, 3600, (const uint8_t *)"x", 1, k1_pem, k1_len),
             KUBEBOOT_RESULT_STORE_NO_CERTIFICATES);
    size_t dn = 0;
    unsigned char *other = data("recorded/approved.key.pem", &dn);
    CHECK_RC(kubeboot_store_update(st, 1800000000, 3600, leaf, ln, other, dn), KUBEBOOT_RESULT_STORE_KEY_MISMATCH);
    free(other);
    CHECK_RC(kubeboot_store_update(st, INT64_MAX, 3600, leaf, ln, k1_pem, k1_len), KUBEBOOT_RESULT_STORE_INVALID_TIMESTAMP);
    CHECK_RC(kubeboot_store_current(st, buf, sizeof buf, &n), KUBEBOOT_RESULT_STORE_NO_CERT_KEY_FILES);
    CHECK_RC(kubeboot_store_update(st, 1800000000, 3600, leaf, ln, k1_pem, k1_len), OK);
    char data_file[300];
    /* 1800000000 = 2027-01-15T08:00:00Z; +1 h local */
    snprintf(data_file, sizeof data_file, "%s/kubelet-client-2027-01-15-09-00-00.pem", certdir);
    CHECK(access(data_file, F_OK) == 0);
    CHECK_RC(kubeboot_store_current(st, NULL, 0, &n), SHORT);
    size_t need = n;
    CHECK_RC(kubeboot_store_current(st, buf, sizeof buf, &n), OK);
    CHECK(n == need && memcmp(buf, "-----BEGIN CERTIFICATE-----", 27) == 0);
    CHECK(find_bytes(buf, n, "PRIVATE KEY-----", 16) != NULL);
    /* The combined PEM gives back the key. */
    kubeboot_key *ck = NULL;
    CHECK_RC(kubeboot_key_from_pem((const uint8_t *)buf, n, &ck), OK);
    kubeboot_key_free(ck);
    CHECK_RC(kubeboot_store_current_path(st, buf, sizeof buf, &n), OK);
    char want[300];
    snprintf(want, sizeof want, "%s/kubelet-client-current.pem", certdir);
    CHECK(eq(buf, n, want));
    /* Now the bootstrap key is the current pair's (K1), not the cache. */
    CHECK_RC(kubeboot_store_bootstrap_key(st, &b1), OK);
    kubeboot_key *k1 = NULL;
    CHECK_RC(kubeboot_key_from_pem(k1_pem, k1_len, &k1), OK);
    CHECK_RC(kubeboot_key_public_point(b1, p1), OK);
    CHECK_RC(kubeboot_key_public_point(k1, p2), OK);
    CHECK(memcmp(p1, p2, 65) == 0);
    kubeboot_key_free(b1);
    kubeboot_key_free(k1);
    CHECK_RC(kubeboot_store_remove_key_cache(st), OK);
    CHECK(access(cache, F_OK) != 0);
    CHECK_RC(kubeboot_store_remove_key_cache(st), OK);
    CHECK_RC(kubeboot_store_current(NULL, buf, sizeof buf, &n), NULLP);
    CHECK_RC(kubeboot_store_update(NULL, 0, 0, leaf, ln, k1_pem, k1_len), NULLP);
    CHECK_RC(kubeboot_store_bootstrap_key(st, NULL), NULLP);
    CHECK_RC(kubeboot_store_remove_key_cache(NULL), NULLP);
    CHECK_RC(kubeboot_store_last_error(NULL, buf, sizeof buf, &n), NULLP);
    kubeboot_store_free(st);
    kubeboot_store_free(NULL);

    /* Result names of the new ranges. */
    CHECK_RC(kubeboot_result_name(KUBEBOOT_RESULT_STORE_KEY_MISMATCH, buf, sizeof buf, &n), OK);
    CHECK(eq(buf, n, "store-key-mismatch"));
    CHECK_RC(kubeboot_result_name(KUBEBOOT_RESULT_CSR_DENIED, buf, sizeof buf, &n), OK);
    CHECK(eq(buf, n, "csr-denied"));
    CHECK(KUBEBOOT_RESULT_UNAUTHORIZED == 700 && KUBEBOOT_RESULT_INVALID_STATE == 711 && KUBEBOOT_RESULT_STORE_IO == 10);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    free(leaf);
}


/* ---------------------------------------------------------------------------------------- */
/* The agent: a bootstrap driven end to end through the ABI with the recorded apiserver's
   answers, files through libkubeboot's own store in a temporary directory. */

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

static bool mkdir_p(const char *dir, const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return mkdir(p, 0700) == 0;
}

static kubeboot_agent_config agent_config(const char *dir, const char *node, bool with_bootstrap) {
    kubeboot_agent_config c;
    memset(&c, 0, sizeof c);
    c.front_end = "c";
    c.front_end_len = 1;
    c.working_dir = dir;
    c.working_dir_len = strlen(dir);
    c.node_name = node;
    c.node_name_len = strlen(node);
    c.kubeconfig = "kubelet.conf";
    c.kubeconfig_len = 12;
    if (with_bootstrap) {
        c.bootstrap_kubeconfig = "bootstrap.conf";
        c.bootstrap_kubeconfig_len = 14;
    }
    c.cert_dir = "pki";
    c.cert_dir_len = 3;
    c.ca_bundle = "client-ca.pem";
    c.ca_bundle_len = 13;
    c.mode = KUBEBOOT_MODE_ONCE;
    c.seed = 42;
    return c;
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
static void sim_key(kubeboot_agent *agent, int64_t now, const kubeboot_agent_action *a, struct sim_token *t) {
    uint8_t point[KUBEBOOT_P256_POINT_LEN];
    CHECK_RC(kubeboot_key_public_point(t->key, point), OK);
    if (t->fail) {
        CHECK_RC(kubeboot_agent_on_key_error(agent, now, S("pkcs11 token=sim: C_Login: CKR_PIN_INCORRECT")), OK);
        return;
    }
    CHECK(a->key_holder == KUBEBOOT_KEY_HOLDER_PKCS11);
    switch (a->key_op) {
    case KUBEBOOT_KEY_OP_GENERATE: {
        t->generated++;
        CHECK(bytes_eq(a->key_device, a->key_device_len, DEV));
        CHECK(a->key_label_len > 15 && memcmp(a->key_label, "kubelet-client-", 15) == 0);
        uint8_t ref[KUBEBOOT_KEY_REF_MAX_LEN];
        size_t n = 0, need = 0;
        const uint8_t id[] = {0xde, 0xad, 0x01};
        CHECK_RC(kubeboot_pkcs11_key_reference(a->key_device, a->key_device_len, a->key_label, a->key_label_len,
                                               id, sizeof id, ref, 10, &need), SHORT);
        CHECK(need > 10 && need <= sizeof ref);
        CHECK_RC(kubeboot_pkcs11_key_reference(a->key_device, a->key_device_len, a->key_label, a->key_label_len,
                                               id, sizeof id, ref, sizeof ref, &n), OK);
        CHECK(n > 40 && memcmp(ref, "-----BEGIN PKCS#11 PROVIDER URI-----\n", 37) == 0);
        /* A point of the wrong length, or an answer to another operation: refused, unanswered. */
        CHECK_RC(kubeboot_agent_on_key_generated(agent, now, ref, n, point, 64), KUBEBOOT_RESULT_INVALID_PARAMETER);
        CHECK_RC(kubeboot_agent_on_key_public(agent, now, point, sizeof point), KUBEBOOT_RESULT_INVALID_STATE);
        CHECK_RC(kubeboot_agent_on_key_destroyed(agent, now), KUBEBOOT_RESULT_INVALID_STATE);
        CHECK_RC(kubeboot_agent_on_key_generated(agent, now, ref, n, point, sizeof point), OK);
        break;
    }
    case KUBEBOOT_KEY_OP_SIGN: {
        t->signed_++;
        CHECK(a->data_len > 100 && a->key_ref_len > 40);
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
    case KUBEBOOT_KEY_OP_PUBLIC: {
        t->publics++;
        /* The reference names the key the GENERATE made: its URI, its attributes decoded. */
        char uri[KUBEBOOT_PKCS11_URI_MAX_LEN];
        size_t un = 0, vn = 0;
        uint8_t v[64];
        bool found = false;
        CHECK_RC(kubeboot_key_reference_uri(a->key_ref, a->key_ref_len, uri, sizeof uri, &un), OK);
        CHECK(find_bytes(uri, un, ";id=%de%ad%01;type=private?module-path=", 39) != NULL);
        CHECK_RC(kubeboot_pkcs11_uri_attribute(uri, un, S("module-path"), v, sizeof v, &vn, &found), OK);
        CHECK(found && bytes_eq((const char *)v, vn, "/opt/sim hsm.so"));
        CHECK_RC(kubeboot_pkcs11_uri_attribute(uri, un, S("id"), v, sizeof v, &vn, &found), OK);
        CHECK(found && vn == 3 && v[0] == 0xde && v[2] == 0x01);
        CHECK_RC(kubeboot_pkcs11_uri_attribute(uri, un, S("serial"), v, sizeof v, &vn, &found), OK);
        CHECK(found && bytes_eq((const char *)v, vn, "0042"));
        CHECK_RC(kubeboot_pkcs11_uri_attribute(uri, un, S("model"), v, sizeof v, &vn, &found), OK);
        CHECK(!found && vn == 0);
        CHECK_RC(kubeboot_agent_on_key_public(agent, now, point, sizeof point), OK);
        break;
    }
    case KUBEBOOT_KEY_OP_DESTROY:
        t->destroyed++;
        CHECK_RC(kubeboot_agent_on_key_destroyed(agent, now), OK);
        break;
    default:
        CHECK(!"unknown key operation");
    }
}

/* Drive `agent` at `now`, answering HTTP from the recording (the first create is pushed back
   with 429 and Retry-After: 1, as API Priority and Fairness does) and KEY actions from `t` (NULL:
   none expected). Returns the final action. */
static kubeboot_agent_action agent_run(kubeboot_agent *agent, int64_t now, int *requests, struct sim_token *t) {
    kubeboot_agent_action a;
    char msg[256];
    size_t n = 0;
    bool pushed_back = false, said_so = false;
    for (int i = 0; i < 200; i++) {
        CHECK_RC(kubeboot_agent_poll(agent, now, &a), OK);
        switch (a.kind) {
        case KUBEBOOT_AGENT_READ:
        case KUBEBOOT_AGENT_FILE:
            CHECK_RC(kubeboot_agent_perform_file_action(agent, now, msg, sizeof msg, &n), OK);
            break;
        case KUBEBOOT_AGENT_ENTROPY:
            CHECK(t == NULL); /* a device agent asks for no entropy */
            CHECK_RC(kubeboot_agent_perform_entropy(agent), OK);
            break;
        case KUBEBOOT_AGENT_KEY:
            CHECK(t != NULL);
            if (t) sim_key(agent, now, &a, t);
            break;
        case KUBEBOOT_AGENT_HTTP: {
            (*requests)++;
            CHECK(a.user_agent_len > 12 && memcmp(a.user_agent, "kubeboot-c/", 11) == 0);
            CHECK(a.ca_pem && a.ca_pem_len > 100 && !a.insecure && a.client_cert_pem == NULL);
            if (a.request_kind == KUBEBOOT_AGENT_REQUEST_HEALTHZ) {
                CHECK(a.authorization == NULL);
                CHECK_RC(kubeboot_agent_on_http_response(agent, now, 200, (const uint8_t *)"ok", 2), OK);
            } else if (a.request_kind == KUBEBOOT_AGENT_REQUEST_CREATE) {
                CHECK(bytes_eq(a.authorization, a.authorization_len, "Bearer hi3rc6.cpoi3m254kzpt12t"));
                CHECK(strcmp(a.method, "POST") == 0 && a.data_len > 100);
                if (!pushed_back) {
                    pushed_back = true;
                    const char *apf = "Too many requests, please try again later.\n";
                    CHECK_RC(kubeboot_agent_on_http_response_with_retry_after(agent, now, 429, "1", 1,
                                                                              (const uint8_t *)apf, strlen(apf)),
                             OK);
                    break;
                }
                size_t bn = 0;
                unsigned char *b = data("recorded/csr-create-201.json", &bn);
                CHECK_RC(kubeboot_agent_on_http_response(agent, now, 201, b, bn), OK);
                free(b);
            } else if (a.request_kind == KUBEBOOT_AGENT_REQUEST_WATCH) {
                size_t wn = 0;
                unsigned char *w = data("recorded/watch-approved.json", &wn);
                bool keep = true;
                for (size_t off = 0; w && keep && off < wn; off += 10) {
                    size_t len = wn - off < 10 ? wn - off : 10;
                    CHECK_RC(kubeboot_agent_on_stream_data(agent, now, w + off, len, &keep), OK);
                }
                CHECK(!keep); /* the certificate arrived: stop reading */
                free(w);
            } else {
                CHECK_RC(kubeboot_agent_on_transport_error(agent, now, "unexpected", 10), OK);
            }
            break;
        }
        case KUBEBOOT_AGENT_SLEEP:
            CHECK(a.until >= now && a.until <= now + 3); /* the server's 1 s (+1: whole seconds) */
            now = a.until;
            break;
        case KUBEBOOT_AGENT_EVENT:
            CHECK(a.line_len > 16 && memcmp(a.line, "agent=c step=", 13) == 0);
            if (find_bytes(a.line, a.line_len, "step=retry", 10)) {
                const char *want = "reason=server-asked retry_after=1";
                CHECK(find_bytes(a.line, a.line_len, want, strlen(want)) != NULL);
                said_so = true;
            }
            CHECK(find_bytes(a.line, a.line_len, "cpoi3m254kzpt12t", 16) == NULL); /* no secret */
            break;
        default:
            if (a.kind == KUBEBOOT_AGENT_FAILED && getenv("KUBEBOOT_TEST_VERBOSE"))
                fprintf(stderr, "%.*s\n", (int)a.line_len, a.line);
            CHECK(said_so == pushed_back);
            return a;
        }
    }
    CHECK(!"the agent did not finish");
    return a;
}

/* A node's directory for the recorded bootstrap: the CAs and the bootstrap kubeconfig. */
static char *agent_dir(char *tmpl) {
    char *dir = mkdtemp(tmpl);
    CHECK(dir != NULL);
    if (!dir) return NULL;
    size_t n = 0;
    unsigned char *ca = data("recorded/client-ca.pem", &n);
    write_file(dir, "client-ca.pem", ca, n);
    free(ca);
    unsigned char *sca = data("recorded/serving-ca.pem", &n);
    write_file(dir, "serving-ca.pem", sca, n);
    free(sca);
    const char *bk = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n"
                     "    certificate-authority: serving-ca.pem\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n"
                     "current-context: c\nusers:\n- name: u\n  user:\n    token: hi3rc6.cpoi3m254kzpt12t\n";
    write_file(dir, "bootstrap.conf", bk, strlen(bk));
    return dir;
}

static void test_agent(void) {
    char tmpl[] = "/tmp/kubeboot-c-agent-XXXXXX";
    char *dir = agent_dir(tmpl);
    if (!dir) return;
    size_t n = 0;

    /* Bad configurations, *out untouched. */
    kubeboot_agent *agent = (kubeboot_agent *)&n;
    kubeboot_agent_config c = agent_config(dir, "rec-1", true);
    CHECK_RC(kubeboot_agent_new(NULL, &agent), NULLP);
    CHECK_RC(kubeboot_agent_new(&c, NULL), NULLP);
    kubeboot_agent_config bad = c;
    bad.working_dir = "relative";
    bad.working_dir_len = 8;
    CHECK_RC(kubeboot_agent_new(&bad, &agent), KUBEBOOT_RESULT_INVALID_CONFIG);
    bad = c;
    bad.mode = 9;
    CHECK_RC(kubeboot_agent_new(&bad, &agent), KUBEBOOT_RESULT_INVALID_CONFIG);
    bad = c;
    bad.log_format = 7;
    CHECK_RC(kubeboot_agent_new(&bad, &agent), KUBEBOOT_RESULT_INVALID_CONFIG);
    bad = c;
    bad.node_name = "Bad_Name";
    bad.node_name_len = 8;
    CHECK_RC(kubeboot_agent_new(&bad, &agent), KUBEBOOT_RESULT_INVALID_NODE_NAME);
    CHECK(agent == (kubeboot_agent *)&n);

    /* Without a bootstrap kubeconfig: the typed reason, nothing written. */
    int requests = 0;
    kubeboot_agent_config nb = agent_config(dir, "rec-1", false);
    CHECK_RC(kubeboot_agent_new(&nb, &agent), OK);
    kubeboot_agent_action a = agent_run(agent, REC_NOW, &requests, NULL);
    CHECK(a.kind == KUBEBOOT_AGENT_FAILED && a.result == KUBEBOOT_RESULT_STORE_NOT_FOUND);
    CHECK(find_bytes(a.detail, a.detail_len, "no bootstrap kubeconfig", 23) != NULL);
    CHECK(requests == 0 && !exists(dir, "pki") && !exists(dir, "kubelet.conf"));
    kubeboot_agent_free(agent);

    /* The recorded bootstrap: the key cache holds the recorded key, so the recorded approval
       validates for it. */
    CHECK(mkdir_p(dir, "pki"));
    size_t kn = 0;
    unsigned char *kp = data("recorded/approved.key.pem", &kn);
    write_file(dir, "pki/kubelet-client.key.tmp", kp, kn);
    free(kp);
    CHECK_RC(kubeboot_agent_new(&c, &agent), OK);
    a = agent_run(agent, REC_NOW, &requests, NULL);
    CHECK(a.kind == KUBEBOOT_AGENT_DONE);
    CHECK(a.client_not_after > REC_NOW && a.client_rotation_deadline > REC_NOW && !a.has_serving);
    CHECK(requests == 4); /* healthz, create (429, Retry-After: 1), create, watch */
    CHECK(exists(dir, "pki/kubelet-client-current.pem") && exists(dir, "kubelet.conf"));
    CHECK(!exists(dir, "pki/kubelet-client.key.tmp"));
    kubeboot_agent_free(agent);

    /* Again: the credentials are valid, nothing is sent. */
    requests = 0;
    CHECK_RC(kubeboot_agent_new(&c, &agent), OK);
    a = agent_run(agent, REC_NOW + 60, &requests, NULL);
    CHECK(a.kind == KUBEBOOT_AGENT_DONE && requests == 0);
    /* The metrics, as data (copied out, rendered later: a server thread's way): the valid
       certificate's TTL at the time asked, no renewal error, no serving certificate (+Inf); a
       short buffer gets the size, NULLs are refused. */
    kubeboot_metrics m;
    memset(&m, 0, sizeof m);
    CHECK_RC(kubeboot_agent_metrics(agent, &m), OK);
    CHECK(m.has_client && m.client_not_after == a.client_not_after && !m.has_serving);
    CHECK(m.client_renew_errors == 0 && m.serving_rotation_count == 0 && m.serving_rotation_buckets[10] == 0);
    char text[KUBEBOOT_METRICS_TEXT_CAP];
    size_t tn = 0, need = 0;
    CHECK_RC(kubeboot_metrics_text(&m, a.client_not_after - 100, text, sizeof text, &tn), OK);
    CHECK(find_bytes(text, tn, "\nkubelet_certificate_manager_client_ttl_seconds 100\n", 52) != NULL);
    CHECK(find_bytes(text, tn, "\nkubelet_certificate_manager_server_ttl_seconds +Inf\n", 53) != NULL);
    CHECK(find_bytes(text, tn, "\nkubelet_certificate_manager_client_expiration_renew_errors 0\n", 62) != NULL);
    CHECK_RC(kubeboot_metrics_text(&m, REC_NOW, text, 10, &need), KUBEBOOT_RESULT_INSUFFICIENT_SIZE);
    CHECK(need > 10 && need <= sizeof text);
    m.serving_rotation_buckets[0] = 2, m.serving_rotation_buckets[3] = 1, m.serving_rotation_count = 3;
    CHECK_RC(kubeboot_metrics_text(&m, REC_NOW, text, sizeof text, &tn), OK);
    CHECK(find_bytes(text, tn, "_bucket{le=\"60\"} 2\n", 19) != NULL);
    CHECK(find_bytes(text, tn, "_bucket{le=\"86400\"} 3\n", 22) != NULL);
    CHECK_RC(kubeboot_agent_metrics(NULL, &m), NULLP);
    CHECK_RC(kubeboot_agent_metrics(agent, NULL), NULLP);
    CHECK_RC(kubeboot_metrics_text(NULL, REC_NOW, text, sizeof text, &tn), NULLP);
    CHECK_RC(kubeboot_metrics_text(&m, REC_NOW, text, sizeof text, NULL), NULLP);
    /* Done, not sleeping: a wake changes nothing. */
    bool woken = true;
    CHECK_RC(kubeboot_agent_wake(agent, &woken), OK);
    CHECK(!woken);
    CHECK_RC(kubeboot_agent_wake(NULL, &woken), NULLP);
    CHECK_RC(kubeboot_agent_wake(agent, NULL), NULLP);
    CHECK_RC(kubeboot_metrics_check_textfile("node.prom", 9), OK);
    CHECK_RC(kubeboot_metrics_check_textfile("node.txt", 8), KUBEBOOT_RESULT_INVALID_CONFIG);
    /* Answers out of turn are ignored; NULLs refused. */
    CHECK_RC(kubeboot_agent_on_http_response(agent, REC_NOW, 200, NULL, 0), OK);
    CHECK_RC(kubeboot_agent_on_http_response_with_retry_after(agent, REC_NOW, 429, "1", 1, NULL, 0), OK);
    CHECK_RC(kubeboot_agent_on_http_response_with_retry_after(NULL, REC_NOW, 429, "1", 1, NULL, 0), NULLP);
    CHECK_RC(kubeboot_agent_on_http_response_with_retry_after(agent, REC_NOW, 429, NULL, 1, NULL, 0), NULLP);
    CHECK_RC(kubeboot_agent_on_read(agent, REC_NOW, 0, NULL, 0), OK);
    CHECK_RC(kubeboot_agent_perform_file_action(agent, REC_NOW, NULL, 0, &n), KUBEBOOT_RESULT_INVALID_STATE);
    CHECK_RC(kubeboot_agent_perform_entropy(agent), KUBEBOOT_RESULT_INVALID_STATE);
    CHECK_RC(kubeboot_agent_poll(agent, REC_NOW, NULL), NULLP);
    CHECK_RC(kubeboot_agent_poll(NULL, REC_NOW, &a), NULLP);
    bool keep;
    CHECK_RC(kubeboot_agent_on_stream_data(agent, REC_NOW, NULL, 0, NULL), NULLP);
    CHECK_RC(kubeboot_agent_on_stream_data(NULL, REC_NOW, NULL, 0, &keep), NULLP);
    CHECK_RC(kubeboot_agent_on_transport_error(agent, REC_NOW, NULL, 3), NULLP);
    kubeboot_agent_free(agent);
    kubeboot_agent_free(NULL);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
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

static void test_agent_device(void) {
    char tmpl[] = "/tmp/kubeboot-c-device-XXXXXX";
    char *dir = agent_dir(tmpl);
    if (!dir) return;
    size_t n = 0;
    unsigned char *b = data("recorded/approved.key.pem", &n);
    kubeboot_key *key = NULL;
    CHECK_RC(kubeboot_key_from_pem(b, n, &key), OK);
    free(b);
    struct sim_token t = {key, 0, 0, 0, 0, 0};

    /* Bad device names and a device with a serving certificate: refused at start. */
    kubeboot_agent *agent = NULL;
    kubeboot_agent_config c = agent_config(dir, "rec-1", true);
    kubeboot_agent_config bad = c;
    bad.key_device = "pkcs11:token=sim;colour=blue?module-path=/m.so";
    bad.key_device_len = strlen(bad.key_device);
    CHECK_RC(kubeboot_agent_new(&bad, &agent), KUBEBOOT_RESULT_INVALID_KEY_REFERENCE);
    bad.key_device = "pkcs11:token=sim;object=k?module-path=/m.so"; /* a device names no object */
    bad.key_device_len = strlen(bad.key_device);
    CHECK_RC(kubeboot_agent_new(&bad, &agent), KUBEBOOT_RESULT_INVALID_KEY_REFERENCE);
    CHECK(agent == NULL);

    /* The token fails: the typed reason with the device's words, nothing written. */
    int requests = 0;
    c.key_device = DEV;
    c.key_device_len = strlen(DEV);
    t.fail = 1;
    CHECK_RC(kubeboot_agent_new(&c, &agent), OK);
    kubeboot_agent_action a = agent_run(agent, REC_NOW, &requests, &t);
    CHECK(a.kind == KUBEBOOT_AGENT_FAILED && a.result == KUBEBOOT_RESULT_KEY_DEVICE);
    CHECK(find_bytes(a.detail, a.detail_len, "CKR_PIN_INCORRECT", 17) != NULL);
    CHECK(requests == 0 && !exists(dir, "pki") && !exists(dir, "kubelet.conf"));
    CHECK_RC(kubeboot_agent_on_key_error(agent, REC_NOW, NULL, 0), KUBEBOOT_RESULT_INVALID_STATE);
    kubeboot_agent_free(agent);

    /* Bootstrap: the key made in the token, the CSR signed there, the reference stored. */
    t.fail = 0;
    CHECK_RC(kubeboot_agent_new(&c, &agent), OK);
    a = agent_run(agent, REC_NOW, &requests, &t);
    CHECK(a.kind == KUBEBOOT_AGENT_DONE);
    CHECK(t.generated == 1 && t.signed_ == 1 && t.destroyed == 0 && requests == 4); /* the first create pushed back */
    CHECK(file_has(dir, "pki/kubelet-client-current.pem", "-----BEGIN PKCS#11 PROVIDER URI-----"));
    CHECK(!file_has(dir, "pki/kubelet-client-current.pem", "PRIVATE KEY-----"));
    CHECK(!exists(dir, "pki/kubelet-client.key.tmp"));
    kubeboot_agent_free(agent);

    /* Again: the token tells the key's point, the credentials are valid, nothing is sent. */
    requests = 0;
    CHECK_RC(kubeboot_agent_new(&c, &agent), OK);
    a = agent_run(agent, REC_NOW + 60, &requests, &t);
    CHECK(a.kind == KUBEBOOT_AGENT_DONE && requests == 0 && t.publics > 0 && t.generated == 1);
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
                                           &on, &found), KUBEBOOT_RESULT_INVALID_KEY_REFERENCE);
    CHECK_RC(kubeboot_pkcs11_uri_attribute(S("pkcs11:token=a"), S("colour"), (uint8_t *)out, sizeof out, &on, &found),
             KUBEBOOT_RESULT_INVALID_PARAMETER);
    CHECK_RC(kubeboot_pkcs11_uri_attribute(S("pkcs11:token=a"), S("token"), (uint8_t *)out, sizeof out, &on, NULL),
             NULLP);
    CHECK_RC(kubeboot_agent_on_key_public(NULL, REC_NOW, (const uint8_t *)out, 65), NULLP);
    CHECK_RC(kubeboot_agent_sign_with(NULL, REC_NOW, NULL), NULLP);
    kubeboot_key_free(key);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

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
    test_rotation();
    test_engine();
    test_verify(pem, pem_len);
    test_kubeconfig();
    test_store(pem, pem_len);
    test_agent();
    test_agent_device();
    free(pem);
    free(der);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
