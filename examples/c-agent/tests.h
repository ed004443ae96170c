/* What the C tests of libkubeboot share (tests.c: the protocol's pieces; tests_agent.c: the
   agent). */
#ifndef KUBEBOOT_C_TESTS_H
#define KUBEBOOT_C_TESTS_H

#include <kubeboot.h>

#include <stdbool.h>
#include <stdio.h>

extern int passed, failed;

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

/* The whole file at path (malloc'd), or NULL. */
unsigned char *read_file(const char *path, size_t *len);
/* A fixture under core/tests/data (KUBEBOOT_DATA): exits with one line when it is missing. */
unsigned char *data(const char *name, size_t *len);
int all_zero(const void *p, size_t n);
const void *find_bytes(const void *hay, size_t hay_len, const void *needle, size_t needle_len);
/* (got, got_len) is exactly the string want. */
int eq(const void *got, size_t got_len, const char *want);
/* The borrowed text s is exactly want. */
int str_is(kubeboot_str s, const char *want);
/* s holds needle. */
int str_has(kubeboot_str s, const char *needle);

/* A kubeboot_sign_callback: userdata is a struct cb_state, whose key signs (mode 0), which
   fails (1) or answers a zero signature (2); counts its calls. */
struct cb_state {
    const kubeboot_key *key;
    int calls;
    int mode;
};
uint32_t sign_cb(void *userdata, const uint8_t *msg, size_t msg_len, uint8_t *sig_rs);

void test_capacities(void);
void test_agent(void);
void test_agent_device(void);

#endif
