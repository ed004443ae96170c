/*
 * clockshift OFFSET_FILE PROGRAM [ARGS...]: run PROGRAM with its wall clock (CLOCK_REALTIME,
 * CLOCK_REALTIME_COARSE, gettimeofday, time) shifted by the number of seconds OFFSET_FILE holds
 * ("+7200", "-86400", "0"; a missing or empty file is 0), read again whenever the file changes:
 * a clock stepped forward or back at run time, for one process, the machine's clock untouched.
 * Monotonic clocks are left alone (a real clock step leaves them alone too).
 *
 * Why not libfaketime (LD_PRELOAD): it replaces the C library's time functions, and a Go program
 * does not call them: the Go runtime reads the clock through the vDSO itself (runtime walltime →
 * __vdso_clock_gettime), so a preloaded library never sees the Go agent's time.Now(). This tool
 * works below any language runtime:
 *
 *  1. the child installs a seccomp filter that hands the wall-clock system calls to this process
 *     (SECCOMP_RET_USER_NOTIF, Linux >= 5.0) and lets every other call through;
 *  2. it execs PROGRAM under ptrace only until the exec stop: there the vDSO's wall-clock entry
 *     points (clock_gettime, gettimeofday, time) are overwritten with "mov eax, NR; syscall; ret",
 *     so the program's clock reads become those system calls (ptrace writes to the vDSO as a
 *     debugger's breakpoint does: a private copy for this process); then it detaches, so
 *     SIGSTOP/SIGCONT/SIGKILL reach the program as usual;
 *  3. this process answers each wall-clock call with its own clock plus the offset, written into
 *     the caller's memory (process_vm_writev), and forwards SIGTERM/SIGINT/SIGHUP. It exits as
 *     the program did (the same status, or killed by the same signal).
 *
 * x86_64 Linux only; run as root (or with the ptrace and seccomp rights). Test tooling of
 * e2e/soak and e2e/run's clock scenarios: build with `cc -O2 -o clockshift clockshift.c`.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "clockshift: x86_64 only"
#endif

static const char *offset_file;
static long long offset;
static struct timespec offset_mtime;
static off_t offset_size = -1;

static void die(const char *what) {
    fprintf(stderr, "clockshift: %s: %s\n", what, strerror(errno));
    exit(125);
}

/* The offset in seconds, read again when the file's mtime or size changed. */
static long long current_offset(void) {
    struct stat st;
    if (stat(offset_file, &st) != 0) {
        offset = 0, offset_size = -1;
        return offset;
    }
    if (st.st_size == offset_size && st.st_mtim.tv_sec == offset_mtime.tv_sec &&
        st.st_mtim.tv_nsec == offset_mtime.tv_nsec)
        return offset;
    FILE *f = fopen(offset_file, "r");
    char buf[64] = {0};
    if (f) {
        if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
        fclose(f);
    }
    char *end = NULL;
    long long v = strtoll(buf, &end, 10);
    offset = end == buf ? 0 : v;
    offset_size = st.st_size, offset_mtime = st.st_mtim;
    return offset;
}

/* ---- the child: filter, trace me, exec ------------------------------------------------ */

static int install_filter(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_gettimeofday, 6, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_time, 5, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clock_gettime, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CLOCK_REALTIME, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CLOCK_REALTIME_COARSE, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("PR_SET_NO_NEW_PRIVS");
    int fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (fd < 0) die("seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)");
    return fd;
}

static void send_fd(int sock, int fd) {
    char dummy = 'x', cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec io = {.iov_base = &dummy, .iov_len = 1};
    struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS, c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (sendmsg(sock, &m, 0) != 1) die("sendmsg");
}

static int recv_fd(int sock) {
    char dummy, cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec io = {.iov_base = &dummy, .iov_len = 1};
    struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    if (recvmsg(sock, &m, 0) != 1) return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_type != SCM_RIGHTS) return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

/* ---- the vDSO's wall-clock entry points ------------------------------------------------- */

struct patch {
    uint64_t offset; /* from the vDSO's base */
    long nr;         /* the system call the stub makes */
};

/* The wall-clock functions of this process's vDSO (the program's is the same kernel image,
   mapped elsewhere): their offsets from the base, from the section headers' .dynsym. */
static int vdso_patches(struct patch *out, int max) {
    const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    if (!base) return errno = ENOENT, -1;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shoff == 0) return errno = ENOEXEC, -1;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
    uint64_t load = 0;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) load = ph[i].p_vaddr;
    int n = 0;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || !sh[i].sh_entsize) continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(base + sh[i].sh_offset);
        const char *str = (const char *)(base + sh[sh[i].sh_link].sh_offset);
        size_t count = sh[i].sh_size / sh[i].sh_entsize;
        for (size_t k = 0; k < count && n < max; k++) {
            if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || !sym[k].st_value) continue;
            const char *name = str + sym[k].st_name;
            if (!strncmp(name, "__vdso_", 7)) name += 7;
            long nr = !strcmp(name, "clock_gettime") ? __NR_clock_gettime
                      : !strcmp(name, "gettimeofday") ? __NR_gettimeofday
                      : !strcmp(name, "time")         ? __NR_time
                                                      : -1;
            if (nr >= 0) out[n++] = (struct patch){sym[k].st_value - load, nr};
        }
    }
    return n ? n : (errno = ENOENT, -1);
}

static uint64_t vdso_base_of(pid_t pid) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    uint64_t base = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "[vdso]")) {
            base = strtoull(line, NULL, 16);
            break;
        }
    fclose(f);
    return base;
}

/* At the program's exec stop: every wall-clock vDSO function becomes "mov eax, NR; syscall;
   ret" (8 bytes: one ptrace word), so that the filter sees the call. */
static void patch_vdso(pid_t pid) {
    struct patch p[16];
    int n = vdso_patches(p, 16);
    if (n < 0) die("reading the vDSO's symbols");
    uint64_t base = vdso_base_of(pid);
    if (!base) {
        errno = ENOENT;
        die("finding the program's vDSO");
    }
    for (int i = 0; i < n; i++) {
        unsigned char stub[8] = {0xb8, (unsigned char)p[i].nr, (unsigned char)(p[i].nr >> 8), 0, 0, 0x0f, 0x05, 0xc3};
        long word;
        memcpy(&word, stub, sizeof word);
        if (ptrace(PTRACE_POKEDATA, pid, (void *)(base + p[i].offset), (void *)word) != 0)
            die("PTRACE_POKEDATA on the vDSO");
    }
}

/* ---- answering the calls ------------------------------------------------------------------ */

static int put(pid_t pid, uint64_t addr, const void *data, size_t len) {
    struct iovec local = {.iov_base = (void *)data, .iov_len = len};
    struct iovec remote = {.iov_base = (void *)addr, .iov_len = len};
    return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static void answer(int lfd, struct seccomp_notif *req, struct seccomp_notif_resp *resp) {
    struct timespec now;
    long clock = req->data.nr == __NR_clock_gettime ? (long)(int)req->data.args[0] : CLOCK_REALTIME;
    clock_gettime((clockid_t)clock, &now);
    now.tv_sec += current_offset();
    memset(resp, 0, sizeof *resp);
    resp->id = req->id;
    /* The thread may be gone and its id reused: only write while the call is still pending. */
    if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) != 0) return;
    int bad = 0;
    switch (req->data.nr) {
    case __NR_clock_gettime:
        bad = put(req->pid, req->data.args[1], &now, sizeof now);
        break;
    case __NR_gettimeofday: {
        struct timeval tv = {.tv_sec = now.tv_sec, .tv_usec = now.tv_nsec / 1000};
        struct timezone tz = {0, 0};
        if (req->data.args[0]) bad |= put(req->pid, req->data.args[0], &tv, sizeof tv);
        if (req->data.args[1]) bad |= put(req->pid, req->data.args[1], &tz, sizeof tz);
        break;
    }
    case __NR_time:
        if (req->data.args[0]) bad = put(req->pid, req->data.args[0], &now.tv_sec, sizeof now.tv_sec);
        resp->val = now.tv_sec;
        break;
    }
    if (bad) resp->val = 0, resp->error = -EFAULT;
    if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, resp) != 0 && errno != ENOENT) die("SECCOMP_IOCTL_NOTIF_SEND");
}

static volatile sig_atomic_t forward;
static void on_signal(int sig) { forward = sig; }

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: clockshift OFFSET_FILE PROGRAM [ARGS...]\n");
        return 2;
    }
    offset_file = argv[1];
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0) die("socketpair");
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        close(sp[0]);
        int lfd = install_filter();
        send_fd(sp[1], lfd);
        close(lfd);
        close(sp[1]);
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0) die("PTRACE_TRACEME");
        execvp(argv[2], argv + 2);
        fprintf(stderr, "clockshift: %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    close(sp[1]);
    int lfd = recv_fd(sp[0]);
    close(sp[0]);
    int st;
    if (waitpid(pid, &st, 0) != pid) die("waitpid");
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (!WIFSTOPPED(st)) return 125;
    patch_vdso(pid);
    if (ptrace(PTRACE_DETACH, pid, 0, 0) != 0) die("PTRACE_DETACH");

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    struct seccomp_notif_sizes sizes;
    if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0) die("SECCOMP_GET_NOTIF_SIZES");
    struct seccomp_notif *req = calloc(1, sizes.seccomp_notif > sizeof *req ? sizes.seccomp_notif : sizeof *req);
    struct seccomp_notif_resp *resp =
        calloc(1, sizes.seccomp_notif_resp > sizeof *resp ? sizes.seccomp_notif_resp : sizeof *resp);
    if (!req || !resp) die("calloc");
    for (;;) {
        if (forward) {
            kill(pid, forward);
            forward = 0;
        }
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid && (WIFEXITED(st) || WIFSIGNALED(st))) break;
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        int r = poll(&p, 1, 200);
        if (r <= 0 || !(p.revents & POLLIN)) continue;
        memset(req, 0, sizes.seccomp_notif);
        if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, req) != 0) continue; /* EINTR, ENOENT: gone */
        answer(lfd, req, resp);
    }
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    signal(WTERMSIG(st), SIG_DFL);
    kill(getpid(), WTERMSIG(st));
    return 128 + WTERMSIG(st);
}
