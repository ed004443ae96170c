/*
 * The C image's "flash": files, symlinks (their target as data) and directories in a table of
 * entries over one arena in RAM (a real device would keep it in flash). A write appends the new
 * bytes and then switches the entry, so a file is never half-written; a removal closes the gap
 * and wipes what it freed (keys are secrets).
 */
#include "flash.h"

#include <stdbool.h>

#define MAX_ENTRIES 16
#define ARENA 6144
#define MAX_NAME 64
#define MAX_LINKS 4

enum kind { FILE_, LINK, DIR_ };

struct entry {
    enum kind kind;
    char path[MAX_NAME];
    size_t path_len, start, len;
};

static struct entry entries[MAX_ENTRIES];
static size_t count, top, peak;
static uint8_t arena[ARENA];

#define NOT_FOUND KUBEBOOT_RESULT_STORE_NOT_FOUND
#define IO KUBEBOOT_RESULT_STORE_IO

static bool same(const char *a, size_t alen, const char *b, size_t blen)
{
    if (alen != blen) return false;
    for (size_t i = 0; i < alen; i++)
        if (a[i] != b[i]) return false;
    return true;
}

static void copy(uint8_t *dst, const uint8_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = src[i];
}

/* The entry at path, or -1. */
static int find(const char *path, size_t len)
{
    for (size_t i = 0; i < count; i++)
        if (same(entries[i].path, entries[i].path_len, path, len)) return (int)i;
    return -1;
}

/* The directory of an absolute path ("/a/b" -> "/a", "/a" -> "/"): its length. */
static size_t parent(const char *path, size_t len)
{
    while (len > 1 && path[len - 1] != '/') len--;
    return len > 1 ? len - 1 : 1;
}

static bool is_dir(const char *path, size_t len)
{
    int i = find(path, len);
    return (len == 1 && path[0] == '/') || (i >= 0 && entries[i].kind == DIR_);
}

/* Follow links from path to an entry that is not one, or -1. */
static int resolve(const char *path, size_t len)
{
    int i = find(path, len);
    for (int hops = 0; i >= 0 && entries[i].kind == LINK && hops < MAX_LINKS; hops++)
        i = find((const char *)arena + entries[i].start, entries[i].len);
    return i >= 0 && entries[i].kind != LINK ? i : -1;
}

/* Remove entry i: close the gap in the arena and wipe the freed bytes. */
static void drop(int i)
{
    struct entry e = entries[i];
    for (size_t j = e.start; j + e.len < top; j++) arena[j] = arena[j + e.len];
    for (size_t j = top - e.len; j < top; j++) arena[j] = 0;
    top -= e.len;
    entries[i] = entries[--count];
    for (size_t j = 0; j < count; j++)
        if (entries[j].start > e.start) entries[j].start -= e.len;
}

/* Create or replace path with data of kind; its directory must exist. */
static uint32_t put(const char *path, size_t path_len, enum kind kind, const uint8_t *data, size_t len)
{
    if (path_len >= MAX_NAME) return IO;
    if (!is_dir(path, parent(path, path_len))) return NOT_FOUND;
    int old = find(path, path_len);
    size_t freed = old >= 0 ? entries[old].len : 0;
    if (len > ARENA - top + freed || (old < 0 && count == MAX_ENTRIES)) return IO; /* no space */
    if (old >= 0) drop(old);
    copy(arena + top, data, len);
    struct entry *e = &entries[count++];
    e->kind = kind, e->start = top, e->len = len, e->path_len = path_len;
    copy((uint8_t *)e->path, (const uint8_t *)path, path_len);
    top += len;
    if (top > peak) peak = top;
    return 0;
}

uint32_t flash_write(const char *path, size_t path_len, const uint8_t *data, size_t len)
{
    int i = find(path, path_len);
    return i >= 0 && entries[i].kind == DIR_ ? IO : put(path, path_len, FILE_, data, len);
}

uint32_t flash_mkdir(const char *path, size_t len)
{
    if (is_dir(path, len)) return 0;
    if (find(path, len) >= 0) return IO;
    uint32_t r = flash_mkdir(path, parent(path, len));
    return r ? r : put(path, len, DIR_, 0, 0);
}

size_t flash_peak(void) { return peak; }

void flash_read(struct kubeboot_agent *agent, int64_t now, const struct kubeboot_read *r)
{
    int i = resolve(r->path.data, r->path.len);
    uint32_t result = i < 0 ? NOT_FOUND : entries[i].kind != FILE_ ? IO
                      : entries[i].len > r->max_len ? KUBEBOOT_RESULT_STORE_FILE_TOO_LARGE : 0;
    const uint8_t *data = result == 0 && entries[i].len ? arena + entries[i].start : 0;
    kubeboot_agent_on_read(agent, now, result, data, result == 0 ? entries[i].len : 0);
}

/* "<dir>/<prefix><suffix>" into buf: its length, or 0 when it does not fit. */
static size_t join(char *buf, struct kubeboot_str dir, struct kubeboot_str prefix, const char *suffix)
{
    size_t n = 0, s = 0;
    while (suffix[s]) s++;
    if (dir.len + 1 + prefix.len + s >= MAX_NAME) return 0;
    copy((uint8_t *)buf, (const uint8_t *)dir.data, dir.len), n = dir.len;
    buf[n++] = '/';
    copy((uint8_t *)buf + n, (const uint8_t *)prefix.data, prefix.len), n += prefix.len;
    copy((uint8_t *)buf + n, (const uint8_t *)suffix, s);
    return n + s;
}

/* An interrupted swap: the -updated.pem link becomes -current.pem when that one is missing. */
static uint32_t recover(const struct kubeboot_file_step *f)
{
    char current[MAX_NAME], updated[MAX_NAME];
    size_t cn = join(current, f->path, f->prefix, "-current.pem");
    size_t un = join(updated, f->path, f->prefix, "-updated.pem");
    if (!is_dir(f->path.data, f->path.len)) return NOT_FOUND;
    if (!cn || !un) return IO;
    int u = find(updated, un);
    if (u < 0) return 0;
    if (entries[u].kind != LINK) return KUBEBOOT_RESULT_STORE_UPDATED_NOT_SYMLINK;
    if (resolve(current, cn) < 0) {
        int c = find(current, cn);
        if (c >= 0) drop(c), u = find(updated, un);
        copy((uint8_t *)entries[u].path, (const uint8_t *)current, cn), entries[u].path_len = cn;
    }
    return 0;
}

/* The link updated -> target, renamed over current (each a symlink or missing). */
static uint32_t swap(const struct kubeboot_file_step *f)
{
    int c = find(f->path.data, f->path.len), u = find(f->updated.data, f->updated.len);
    if (c >= 0 && entries[c].kind != LINK) return KUBEBOOT_RESULT_STORE_CURRENT_NOT_SYMLINK;
    if (u >= 0 && entries[u].kind != LINK) return KUBEBOOT_RESULT_STORE_UPDATED_NOT_SYMLINK;
    uint32_t r = put(f->updated.data, f->updated.len, LINK, (const uint8_t *)f->target.data, f->target.len);
    if (r) return r;
    if ((c = find(f->path.data, f->path.len)) >= 0) drop(c);
    u = find(f->updated.data, f->updated.len);
    copy((uint8_t *)entries[u].path, (const uint8_t *)f->path.data, f->path.len);
    entries[u].path_len = f->path.len;
    return 0;
}

/* Whether name (len n) is <prefix>-YYYY-MM-DD-HH-MM-SS.pem, digits where the layout has them. */
static bool pair_name(const char *name, size_t n, kubeboot_str prefix)
{
    static const char layout[] = "dddd-dd-dd-dd-dd-dd.pem";
    size_t lay = sizeof layout - 1;
    if (n != prefix.len + 1 + lay || !same(name, prefix.len, prefix.data, prefix.len) || name[prefix.len] != '-')
        return false;
    for (size_t i = 0; i < lay; i++) {
        char c = name[prefix.len + 1 + i];
        if (layout[i] == 'd' ? c < '0' || c > '9' : c != layout[i]) return false;
    }
    return true;
}

/* PRUNE_PAIRS: every data file of the store directly in path, but target. */
static void prune(const struct kubeboot_file_step *f)
{
    size_t d = f->path.len;
    for (size_t i = 0; i < count;) {
        const char *p = entries[i].path;
        size_t n = entries[i].path_len;
        bool ours = entries[i].kind == FILE_ && n > d + 1 && same(p, d, f->path.data, d) && p[d] == '/' &&
                    parent(p, n) == d && pair_name(p + d + 1, n - d - 1, f->prefix) &&
                    !same(p, n, f->target.data, f->target.len);
        if (ours)
            drop((int)i);
        else
            i++;
    }
}

/* Whether nothing lives below the directory path. */
static bool empty_dir(const char *path, size_t len)
{
    for (size_t i = 0; i < count; i++)
        if (entries[i].path_len > len && same(entries[i].path, len, path, len) && entries[i].path[len] == '/')
            return false;
    return true;
}

void flash_step(struct kubeboot_agent *agent, int64_t now, const struct kubeboot_file_step *f)
{
    uint32_t r = IO;
    int i;
    switch (f->step) {
    case KUBEBOOT_FILE_STEP_KIND_RECOVER: r = recover(f); break;
    case KUBEBOOT_FILE_STEP_KIND_CREATE_DIR: r = flash_mkdir(f->path.data, f->path.len); break;
    case KUBEBOOT_FILE_STEP_KIND_WRITE_PAIR:
        r = flash_write(f->path.data, f->path.len, f->data.data, f->data.len);
        i = r ? -1 : find(f->path.data, f->path.len);
        for (size_t j = 0; i >= 0 && j < f->data.len && !r; j++)
            if (arena[entries[i].start + j] != f->data.data[j]) r = KUBEBOOT_RESULT_STORE_READ_BACK_MISMATCH;
        break;
    case KUBEBOOT_FILE_STEP_KIND_WRITE_KEY_CACHE:
    case KUBEBOOT_FILE_STEP_KIND_WRITE_KUBECONFIG:
    case KUBEBOOT_FILE_STEP_KIND_WRITE_BOOTSTRAP_KUBECONFIG:
    case KUBEBOOT_FILE_STEP_KIND_WRITE_CA:
        r = flash_write(f->path.data, f->path.len, f->data.data, f->data.len);
        break;
    case KUBEBOOT_FILE_STEP_KIND_SWAP_CURRENT: r = swap(f); break;
    case KUBEBOOT_FILE_STEP_KIND_REMOVE_KEY_CACHE:
        if ((i = find(f->path.data, f->path.len)) >= 0) drop(i);
        r = 0;
        break;
    case KUBEBOOT_FILE_STEP_KIND_PRUNE_PAIRS:
        prune(f);
        r = 0;
        break;
    case KUBEBOOT_FILE_STEP_KIND_REMOVE_DIR:
        if ((i = find(f->path.data, f->path.len)) >= 0 && empty_dir(f->path.data, f->path.len)) drop(i);
        r = 0;
        break;
    }
    kubeboot_agent_on_file_done(agent, now, r);
}
