/*
 * A QEMU TCG plugin (API version 1, QEMU 7.2) that counts the guest instructions executed per
 * translation block and writes them, at exit, as "<guest address hex> <instructions> <block
 * length>" lines (instructions / length = the block's executions) to
 * the file named by its `out=` argument. examples/firmware/profile/attribute maps the addresses to
 * the image's functions and crates.
 *
 *   qemu-system-arm ... -plugin .../insn-profile.so,out=FILE
 *
 * The plugin API is declared here (the functions Debian's qemu-system-arm exports), so no QEMU
 * source tree is needed to build it: cc -shared -fPIC -O2 -o insn-profile.so insn-profile.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
                                              void *ptr, uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* One counter per translation (a block translated again gets another; the script sums them).
 * The array is allocated once and never moves: QEMU holds pointers to the counters. */
struct block {
    uint64_t vaddr;
    uint64_t insns;
    uint64_t n_insns;
};

#define MAX_BLOCKS (1u << 20)
static struct block *blocks;
static size_t used, dropped;
static char out_path[4096];

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    if (used == MAX_BLOCKS) {
        dropped++;
        return;
    }
    struct block *b = &blocks[used++];
    b->vaddr = qemu_plugin_tb_vaddr(tb);
    b->insns = 0;
    b->n_insns = qemu_plugin_tb_n_insns(tb);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->insns,
                                             b->n_insns);
}

static void on_qemu_exit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    FILE *f = fopen(out_path, "w");
    if (!f) {
        return;
    }
    /* Translations past MAX_BLOCKS were not counted: say so (the script refuses the file). */
    fprintf(f, "# blocks=%zu dropped=%zu\n", used, dropped);
    for (size_t i = 0; i < used; i++) {
        if (blocks[i].insns) {
            fprintf(f, "%llx %llu %llu\n", (unsigned long long)blocks[i].vaddr,
                    (unsigned long long)blocks[i].insns, (unsigned long long)blocks[i].n_insns);
        }
    }
    fclose(f);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
                                                               const qemu_info_t *info, int argc,
                                                               char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            snprintf(out_path, sizeof out_path, "%s", argv[i] + 4);
        }
    }
    if (!out_path[0]) {
        fprintf(stderr, "insn-profile: needs out=FILE\n");
        return -1;
    }
    blocks = calloc(MAX_BLOCKS, sizeof *blocks);
    if (!blocks) {
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
    return 0;
}
