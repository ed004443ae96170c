/*
 * The C agent's device I/O for node keys in a PKCS#11 token (the agent's KEY actions and the TLS
 * client key). Every decision — when a key is made, used or destroyed, what its reference is —
 * is libkubeboot's agent; this file only talks to the token:
 *
 *   - KEY actions: the token's module (the URI's module-path; p11-kit-client.so reaches a token
 *     that `p11-kit server` serves from another process) through its PKCS#11 function list:
 *     C_GenerateKeyPair (CKM_EC_KEY_PAIR_GEN, P-256, the private key CKA_SENSITIVE and not
 *     CKA_EXTRACTABLE), CKA_EC_POINT, C_Sign (CKM_ECDSA over the SHA-256 digest) behind a
 *     kubeboot_sign_callback (kubeboot_agent_sign_with), C_DestroyObject. The user PIN comes from
 *     the URI's pin-source file, never from the command line.
 *   - TLS: libcurl with OpenSSL's pkcs11 engine (libp11, libengine-pkcs11-openssl):
 *     CURLOPT_SSLENGINE "pkcs11", CURLOPT_SSLKEYTYPE "ENG", CURLOPT_SSLKEY the key's URI; the
 *     engine signs the handshake in the token. The engine is loaded and given the module and the
 *     PIN here (not through an OpenSSL configuration file).
 */
#define _GNU_SOURCE
#define OPENSSL_SUPPRESS_DEPRECATED /* the ENGINE API: libcurl 7.88 has no provider key type */
#include "device.h"

#include <dlfcn.h>
#include <openssl/crypto.h>
#include <openssl/engine.h>
#include <openssl/sha.h>
#include <p11-kit/pkcs11.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* P-256's OID, DER (CKA_EC_PARAMS). */
static const unsigned char P256_PARAMS[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};

struct token {
    CK_FUNCTION_LIST *f;
    CK_SESSION_HANDLE s;
    char name[160]; /* "pkcs11 token=<label>" for messages */
};

/* One attribute of a pkcs11: URI, decoded and NUL-terminated ("" when absent). */
static bool uri_attr(const char *uri, size_t uri_len, const char *name, char *out, size_t cap, size_t *len) {
    size_t n = 0;
    bool found = false;
    if (kubeboot_pkcs11_uri_attribute(uri, uri_len, name, strlen(name), (uint8_t *)out, cap - 1, &n, &found) !=
        KUBEBOOT_RESULT_OK)
        return false;
    out[n] = 0;
    if (len) *len = n;
    return true;
}

static bool fail(char *err, size_t cap, const char *fmt, const char *a, unsigned long rv) {
    snprintf(err, cap, fmt, a, rv);
    return false;
}

/* Read the PIN file (trailing newline dropped) into pin. */
static bool read_pin(const char *source, char *pin, size_t cap) {
    const char *path = strncmp(source, "file:", 5) == 0 ? source + 5 : source;
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t n = fread(pin, 1, cap - 1, f);
    fclose(f);
    while (n && (pin[n - 1] == '\n' || pin[n - 1] == '\r')) n--;
    pin[n] = 0;
    return true;
}

/* Space-padded token info field equals want. */
static bool padded_eq(const unsigned char *field, size_t width, const char *want) {
    size_t n = strlen(want);
    if (n > width || memcmp(field, want, n) != 0) return false;
    for (size_t i = n; i < width; i++)
        if (field[i] != ' ') return false;
    return true;
}

/* Load the module, find the token, open a read-write session and log in. */
static bool token_open(const char *uri, size_t uri_len, struct token *t, char *err, size_t cap) {
    char module[1024], label[64], serial[64], model[64], manuf[64], slot_id[32], pin_src[1024];
    if (!uri_attr(uri, uri_len, "module-path", module, sizeof module, NULL) ||
        !uri_attr(uri, uri_len, "token", label, sizeof label, NULL) ||
        !uri_attr(uri, uri_len, "serial", serial, sizeof serial, NULL) ||
        !uri_attr(uri, uri_len, "model", model, sizeof model, NULL) ||
        !uri_attr(uri, uri_len, "manufacturer", manuf, sizeof manuf, NULL) ||
        !uri_attr(uri, uri_len, "slot-id", slot_id, sizeof slot_id, NULL) ||
        !uri_attr(uri, uri_len, "pin-source", pin_src, sizeof pin_src, NULL))
        return snprintf(err, cap, "pkcs11: the URI is not one kubeboot uses"), false;
    snprintf(t->name, sizeof t->name, "pkcs11 token=%.60s", label);
    if (!*module) return fail(err, cap, "%s: the URI names no module-path", t->name, 0);
    /* The module stays loaded for the process (the pkcs11 engine loads the same one). */
    void *lib = dlopen(module, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return snprintf(err, cap, "%s: module %s: %s", t->name, module, dlerror()), false;
    CK_C_GetFunctionList get = NULL;
    *(void **)&get = dlsym(lib, "C_GetFunctionList"); /* (ISO C has no function-pointer cast) */
    if (!get || get(&t->f) != CKR_OK)
        return snprintf(err, cap, "%s: module %s: no C_GetFunctionList", t->name, module), false;
    CK_C_INITIALIZE_ARGS args;
    memset(&args, 0, sizeof args);
    args.flags = CKF_OS_LOCKING_OK;
    CK_RV rv = t->f->C_Initialize(&args);
    if (rv != CKR_OK && rv != CKR_CRYPTOKI_ALREADY_INITIALIZED) return fail(err, cap, "%s: C_Initialize: 0x%lx", t->name, rv);
    CK_SLOT_ID slots[64];
    CK_ULONG count = 64;
    if ((rv = t->f->C_GetSlotList(CK_TRUE, slots, &count)) != CKR_OK)
        return fail(err, cap, "%s: C_GetSlotList: 0x%lx", t->name, rv);
    CK_SLOT_ID slot = 0;
    bool found = false;
    for (CK_ULONG i = 0; i < count && !found; i++) {
        CK_TOKEN_INFO info;
        if (*slot_id && strtoul(slot_id, NULL, 10) != slots[i]) continue;
        if (t->f->C_GetTokenInfo(slots[i], &info) != CKR_OK) continue;
        found = padded_eq(info.label, sizeof info.label, label) &&
                (!*serial || padded_eq(info.serialNumber, sizeof info.serialNumber, serial)) &&
                (!*model || padded_eq(info.model, sizeof info.model, model)) &&
                (!*manuf || padded_eq(info.manufacturerID, sizeof info.manufacturerID, manuf));
        if (found) slot = slots[i];
    }
    if (!found) return fail(err, cap, "%s: no such token", t->name, 0);
    if ((rv = t->f->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &t->s)) != CKR_OK)
        return fail(err, cap, "%s: C_OpenSession: 0x%lx", t->name, rv);
    if (*pin_src) {
        char pin[256];
        if (!read_pin(pin_src, pin, sizeof pin)) {
            t->f->C_CloseSession(t->s);
            return snprintf(err, cap, "%s: pin-source %s: cannot read it", t->name, pin_src), false;
        }
        rv = t->f->C_Login(t->s, CKU_USER, (CK_UTF8CHAR *)pin, strlen(pin));
        explicit_bzero(pin, sizeof pin);
        if (rv != CKR_OK && rv != CKR_USER_ALREADY_LOGGED_IN) {
            t->f->C_CloseSession(t->s);
            return fail(err, cap, "%s: C_Login: 0x%lx", t->name, rv);
        }
    }
    return true;
}

static void token_close(struct token *t) { t->f->C_CloseSession(t->s); }

/* The one object of class cls with the URI's object= and id= (0 with err set if none or more). */
static CK_OBJECT_HANDLE find(struct token *t, const char *uri, size_t uri_len, CK_OBJECT_CLASS cls, char *err,
                             size_t cap) {
    char label[256], id[256];
    size_t ln = 0, in = 0;
    if (!uri_attr(uri, uri_len, "object", label, sizeof label, &ln) || !uri_attr(uri, uri_len, "id", id, sizeof id, &in))
        return snprintf(err, cap, "%s: the key's URI is unreadable", t->name), 0;
    CK_ATTRIBUTE tmpl[] = {{CKA_CLASS, &cls, sizeof cls}, {CKA_LABEL, label, ln}, {CKA_ID, id, in}};
    CK_OBJECT_HANDLE h[2];
    CK_ULONG n = 0;
    CK_RV rv = t->f->C_FindObjectsInit(t->s, tmpl, in ? 3 : 2);
    if (rv == CKR_OK) rv = t->f->C_FindObjects(t->s, h, 2, &n);
    t->f->C_FindObjectsFinal(t->s);
    const char *what = cls == CKO_PRIVATE_KEY ? "private key" : "public key";
    if (rv != CKR_OK) return snprintf(err, cap, "%s: C_FindObjects: 0x%lx", t->name, rv), 0;
    if (n != 1) return snprintf(err, cap, "%s: %s %s object=%s", t->name, n ? "more than one" : "no", what, label), 0;
    return h[0];
}

/* CKA_EC_POINT as an uncompressed point: DER-wrapped (04 41 04...) or raw. */
static bool ec_point(struct token *t, CK_OBJECT_HANDLE pub, uint8_t point[65], char *err, size_t cap) {
    unsigned char raw[128];
    CK_ATTRIBUTE a = {CKA_EC_POINT, raw, sizeof raw};
    CK_RV rv = t->f->C_GetAttributeValue(t->s, pub, &a, 1);
    if (rv != CKR_OK) return fail(err, cap, "%s: C_GetAttributeValue: 0x%lx", t->name, rv);
    const unsigned char *p = raw;
    if (a.ulValueLen == 67 && raw[0] == 0x04 && raw[1] == 0x41) p += 2;
    else if (a.ulValueLen != 65) p = NULL;
    if (!p || p[0] != 0x04) return fail(err, cap, "%s: CKA_EC_POINT is not an uncompressed P-256 point", t->name, 0);
    memcpy(point, p, 65);
    return true;
}

/* ---- the KEY actions ---------------------------------------------------------------------- */

static bool generate(kubeboot_agent *agent, int64_t now, const kubeboot_key_action *a, char *err, size_t cap) {
    struct token t;
    if (!token_open(a->device.data, a->device.len, &t, err, cap)) return false;
    CK_BYTE id[16];
    CK_RV rv = t.f->C_GenerateRandom(t.s, id, sizeof id);
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_KEY_TYPE kt = CKK_EC;
    CK_OBJECT_CLASS pubc = CKO_PUBLIC_KEY, privc = CKO_PRIVATE_KEY;
    CK_ATTRIBUTE pub[] = {{CKA_CLASS, &pubc, sizeof pubc}, {CKA_KEY_TYPE, &kt, sizeof kt},
                          {CKA_TOKEN, &yes, 1}, {CKA_PRIVATE, &no, 1}, {CKA_VERIFY, &yes, 1},
                          {CKA_EC_PARAMS, (void *)P256_PARAMS, sizeof P256_PARAMS},
                          {CKA_LABEL, (void *)a->label.data, a->label.len}, {CKA_ID, id, sizeof id}};
    CK_ATTRIBUTE priv[] = {{CKA_CLASS, &privc, sizeof privc}, {CKA_KEY_TYPE, &kt, sizeof kt},
                           {CKA_TOKEN, &yes, 1}, {CKA_PRIVATE, &yes, 1}, {CKA_SIGN, &yes, 1},
                           {CKA_SENSITIVE, &yes, 1}, {CKA_EXTRACTABLE, &no, 1},
                           {CKA_LABEL, (void *)a->label.data, a->label.len}, {CKA_ID, id, sizeof id}};
    CK_MECHANISM mech = {CKM_EC_KEY_PAIR_GEN, NULL, 0};
    CK_OBJECT_HANDLE hpub = 0, hpriv = 0;
    if (rv == CKR_OK)
        rv = t.f->C_GenerateKeyPair(t.s, &mech, pub, sizeof pub / sizeof pub[0], priv, sizeof priv / sizeof priv[0],
                                    &hpub, &hpriv);
    uint8_t point[65], ref[KUBEBOOT_KEY_REF_MAX_LEN];
    size_t n = 0;
    bool ok = rv == CKR_OK ? ec_point(&t, hpub, point, err, cap) : fail(err, cap, "%s: C_GenerateKeyPair: 0x%lx", t.name, rv);
    if (ok && kubeboot_pkcs11_key_reference(a->device.data, a->device.len, a->label.data, a->label.len, id,
                                            sizeof id, ref, sizeof ref, &n) != KUBEBOOT_RESULT_OK)
        ok = fail(err, cap, "%s: the key's reference", t.name, 0);
    token_close(&t);
    return ok && kubeboot_agent_on_key_generated(agent, now, ref, n, point, sizeof point) == KUBEBOOT_RESULT_OK;
}

/* The URI of a reference, NUL-terminated. */
static bool ref_uri(const kubeboot_key_action *a, char *uri, size_t cap, size_t *len, char *err, size_t ecap) {
    if (kubeboot_key_reference_uri(a->key_ref.data, a->key_ref.len, uri, cap - 1, len) != KUBEBOOT_RESULT_OK)
        return snprintf(err, ecap, "pkcs11: the key reference is unreadable"), false;
    uri[*len] = 0;
    return true;
}

struct signing {
    struct token *t;
    CK_OBJECT_HANDLE key;
};

/* kubeboot_sign_callback: ECDSA P-256 in the token over the SHA-256 digest of msg. */
static uint32_t token_sign(void *userdata, const uint8_t *msg, size_t msg_len, uint8_t *sig_rs) {
    struct signing *s = userdata;
    unsigned char digest[32];
    SHA256(msg, msg_len, digest);
    CK_MECHANISM mech = {CKM_ECDSA, NULL, 0};
    CK_ULONG n = 64;
    CK_RV rv = s->t->f->C_SignInit(s->t->s, &mech, s->key);
    if (rv == CKR_OK) rv = s->t->f->C_Sign(s->t->s, digest, sizeof digest, sig_rs, &n);
    return rv == CKR_OK && n == 64 ? KUBEBOOT_RESULT_OK : KUBEBOOT_RESULT_KEY_DEVICE;
}

/* PUBLIC, SIGN, DESTROY: the key a reference names. */
static bool with_key(kubeboot_agent *agent, int64_t now, const kubeboot_key_action *a, char *err, size_t cap) {
    char uri[KUBEBOOT_PKCS11_URI_MAX_LEN + 1];
    size_t un = 0;
    struct token t;
    if (!ref_uri(a, uri, sizeof uri, &un, err, cap) || !token_open(uri, un, &t, err, cap)) return false;
    CK_OBJECT_HANDLE priv = find(&t, uri, un, CKO_PRIVATE_KEY, err, cap);
    CK_OBJECT_HANDLE pub = priv ? find(&t, uri, un, CKO_PUBLIC_KEY, err, cap) : 0;
    bool ok = priv && pub;
    if (a->op == KUBEBOOT_KEY_OP_KIND_DESTROY) {
        ok = true, err[0] = 0; /* what is already gone needs no destroying */
        for (int i = 0; i < 2 && ok; i++) {
            CK_OBJECT_HANDLE h = i ? pub : priv;
            CK_RV rv = h ? t.f->C_DestroyObject(t.s, h) : CKR_OK;
            if (rv != CKR_OK) ok = fail(err, cap, "%s: C_DestroyObject: 0x%lx", t.name, rv);
        }
        token_close(&t);
        return ok && kubeboot_agent_on_key_destroyed(agent, now) == KUBEBOOT_RESULT_OK;
    }
    uint8_t point[65];
    ok = ok && ec_point(&t, pub, point, err, cap);
    kubeboot_result r = KUBEBOOT_RESULT_INVALID_STATE;
    if (ok && a->op == KUBEBOOT_KEY_OP_KIND_PUBLIC) {
        r = kubeboot_agent_on_key_public(agent, now, point, sizeof point);
    } else if (ok && a->op == KUBEBOOT_KEY_OP_KIND_SIGN) {
        /* The C sign callback (a kubeboot_signer, as kubeboot_csr_write takes). */
        struct signing s = {&t, priv};
        kubeboot_signer signer;
        signer.sign = token_sign;
        signer.userdata = &s;
        memcpy(signer.public_point, point, sizeof point);
        r = kubeboot_agent_sign_with(agent, now, &signer);
    }
    token_close(&t);
    if (ok && r != KUBEBOOT_RESULT_OK) snprintf(err, cap, "%s: the agent refused the answer (%u)", t.name, (unsigned)r);
    return ok && r == KUBEBOOT_RESULT_OK;
}

void device_key_action(kubeboot_agent *agent, int64_t now, const kubeboot_key_action *a, const char *program) {
    char err[512] = "";
    bool ok;
    if (a->holder != KUBEBOOT_KEY_HOLDER_PKCS11)
        ok = false, snprintf(err, sizeof err, "tpm: the C agent has no TPM route (see its README)");
    else if (a->op == KUBEBOOT_KEY_OP_KIND_GENERATE)
        ok = generate(agent, now, a, err, sizeof err);
    else
        ok = with_key(agent, now, a, err, sizeof err);
    if (!ok) {
        if (!*err) snprintf(err, sizeof err, "pkcs11: the operation failed");
        fprintf(stderr, "%s: %s\n", program, err);
        kubeboot_agent_on_key_error(agent, now, err, strlen(err));
    }
}

/* ---- TLS: the pkcs11 engine -------------------------------------------------------------- */

/* The engine, loaded once and kept initialised (given the module and the PIN of the first key;
   a later key of another module or PIN is refused). */
static ENGINE *engine;
static char engine_module[1024];

bool device_tls_key(const uint8_t *ref, size_t ref_len, char *uri_out, size_t cap, char *err, size_t ecap) {
    size_t un = 0;
    char uri[KUBEBOOT_PKCS11_URI_MAX_LEN + 1], module[1024], pin_src[1024], pin[256] = "";
    if (kubeboot_key_reference_uri(ref, ref_len, uri, sizeof uri - 1, &un) != KUBEBOOT_RESULT_OK)
        return snprintf(err, ecap, "pkcs11: the client key's reference is unreadable"), false;
    uri[un] = 0;
    if (!uri_attr(uri, un, "module-path", module, sizeof module, NULL) ||
        !uri_attr(uri, un, "pin-source", pin_src, sizeof pin_src, NULL))
        return snprintf(err, ecap, "pkcs11: %s: unreadable", uri), false;
    if (!engine) {
        /* <OpenSSL's engines directory>/pkcs11.so ($OPENSSL_ENGINES, else the build's ENGINESDIR). */
        char so[600];
        const char *env = getenv("OPENSSL_ENGINES"), *v = OpenSSL_version(OPENSSL_ENGINES_DIR);
        const char *q = strchr(v, '"');
        if (env && *env) snprintf(so, sizeof so, "%.500s/pkcs11.so", env);
        else if (q) snprintf(so, sizeof so, "%.*s/pkcs11.so", (int)strcspn(q + 1, "\""), q + 1);
        else snprintf(so, sizeof so, "pkcs11");
        ENGINE_load_builtin_engines();
        ENGINE *e = ENGINE_by_id("dynamic");
        /* LIST_ADD: libcurl's ENGINE_by_id("pkcs11") finds this engine, with its module and PIN. */
        bool ok = e && ENGINE_ctrl_cmd_string(e, "SO_PATH", so, 0) &&
                  ENGINE_ctrl_cmd_string(e, "ID", "pkcs11", 0) && ENGINE_ctrl_cmd_string(e, "LIST_ADD", "1", 0) &&
                  ENGINE_ctrl_cmd_string(e, "LOAD", NULL, 0) && ENGINE_ctrl_cmd_string(e, "MODULE_PATH", module, 0);
        if (ok && *pin_src) {
            ok = read_pin(pin_src, pin, sizeof pin) && ENGINE_ctrl_cmd_string(e, "PIN", pin, 0);
            explicit_bzero(pin, sizeof pin);
        }
        if (!ok || !ENGINE_init(e)) {
            if (e) ENGINE_free(e);
            return snprintf(err, ecap, "pkcs11: OpenSSL's pkcs11 engine (libengine-pkcs11-openssl) with %s", module), false;
        }
        engine = e; /* (its structural and functional references are kept for the process) */
        snprintf(engine_module, sizeof engine_module, "%s", module);
    } else if (strcmp(engine_module, module) != 0) {
        return snprintf(err, ecap, "pkcs11: the engine already serves module %s", engine_module), false;
    }
    /* libp11 takes the URI's path part (token, object, id, type); the module and the PIN are the
       engine's. */
    size_t path = strcspn(uri, "?");
    if (path + 1 > cap) return snprintf(err, ecap, "pkcs11: URI too long"), false;
    memcpy(uri_out, uri, path);
    uri_out[path] = 0;
    return true;
}
