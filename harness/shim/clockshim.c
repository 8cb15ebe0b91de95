/*
 * storeproof clock shim: an LD_PRELOAD library that gives a redis-server the
 * harness's idea of wall-clock time.
 *
 * The harness keeps an int64 of nanoseconds since the Unix epoch at offset 0
 * of a file whose path is in STOREPROOF_CLOCK_FILE. This library maps that
 * file read-only and shared (so the harness's writes are seen at once, no
 * syscall per read) and answers CLOCK_REALTIME, CLOCK_REALTIME_COARSE,
 * gettimeofday() and time() from it. Every other clock (above all
 * CLOCK_MONOTONIC, which Redis 7 uses for its event loop timers) goes straight
 * to the kernel, so the server's timers keep running while wall-clock time is
 * frozen.
 *
 * Why not libfaketime: libfaketime 0.9.10 hangs redis-server 7.0 at start-up.
 * Why syscall() instead of dlsym(RTLD_NEXT, ...): dlsym may itself ask for
 * the time or allocate, which can recurse into us; the raw syscall cannot.
 *
 * If the variable is missing or the file cannot be mapped, every call falls
 * back to the real clock: a server started without the harness behaves
 * normally.
 *
 * Valkey (8 and 9, built with USE_PROCESSOR_CLOCK) reads the CPU's time stamp
 * counter (rdtsc, no call we can answer) for its monotonic clock when
 * /proc/cpuinfo lists `constant_tsc`, and then its ustime()/mstime() call
 * gettimeofday() at most once per millisecond of TSC time, adding the TSC
 * delta in between: a move of the virtual clock is missed by every command
 * within that millisecond, and a frozen clock still creeps. So while the
 * virtual clock is on, /proc/cpuinfo opened through fopen() has that one flag
 * removed, and such a server falls back to clock_gettime(CLOCK_MONOTONIC)
 * (its own message: "'constant_tsc' flag not present"), after which its
 * ustime() calls gettimeofday() every time. Redis 6.2 and 7.0 read neither.
 * STOREPROOF_CLOCK_KEEP_TSC=1 keeps the flag (for the test that proves the
 * clock probe refuses such a server).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define CLOCK_FILE_ENV "STOREPROOF_CLOCK_FILE"
#define NS_PER_SEC INT64_C(1000000000)

/* Not yet looked at. */
#define WORD_UNSET ((const int64_t *)0)
/* Looked at and unusable: use the real clock from now on. */
#define WORD_NONE ((const int64_t *)1)

/* The mapped clock word; read and written only with __atomic builtins. */
static const int64_t *clock_word_ptr = WORD_UNSET;

static const int64_t *map_clock_file(void)
{
    const char *path = getenv(CLOCK_FILE_ENV);
    if (path == NULL || path[0] == '\0')
        return WORD_NONE;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return WORD_NONE;
    struct stat st;
    /* A file shorter than 8 bytes would SIGBUS on the first read. */
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(int64_t)) {
        close(fd);
        return WORD_NONE;
    }
    void *p = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return WORD_NONE;
    return (const int64_t *)p;
}

/*
 * The clock word, or NULL when the real clock must be used. Mapping happens
 * once, lazily, on the first call from any thread. Two threads racing here
 * may both map the file; one wins the compare-and-swap and the other unmaps
 * its copy. No locks, so this is safe to call from any context Redis calls
 * the clock from (including right after fork()).
 */
static const int64_t *clock_word(void)
{
    const int64_t *w = __atomic_load_n(&clock_word_ptr, __ATOMIC_ACQUIRE);
    if (w == WORD_UNSET) {
        const int64_t *fresh = map_clock_file();
        const int64_t *expected = WORD_UNSET;
        if (__atomic_compare_exchange_n(&clock_word_ptr, &expected, fresh, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            w = fresh;
        } else {
            if (fresh != WORD_NONE)
                munmap((void *)fresh, sizeof(int64_t));
            w = expected;
        }
    }
    return w == WORD_NONE ? NULL : w;
}

/* Virtual nanoseconds since the epoch; 0 when the real clock must be used. */
static int virtual_now(int64_t *ns)
{
    const int64_t *w = clock_word();
    if (w == NULL)
        return 0;
    /* The harness writes the word with an atomic 8-byte store. */
    *ns = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    return 1;
}

/* Floor division, so instants before the epoch also split correctly. */
static void split_ns(int64_t ns, int64_t *sec, int64_t *sub)
{
    int64_t s = ns / NS_PER_SEC;
    int64_t r = ns % NS_PER_SEC;
    if (r < 0) {
        s -= 1;
        r += NS_PER_SEC;
    }
    *sec = s;
    *sub = r;
}

static int real_clock_gettime(clockid_t clk, struct timespec *ts)
{
    return (int)syscall(SYS_clock_gettime, clk, ts);
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    int64_t ns;
    if ((clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE) && virtual_now(&ns)) {
        /* glibc declares ts nonnull, so no NULL check (gcc would drop it). */
        int64_t sec, sub;
        split_ns(ns, &sec, &sub);
        ts->tv_sec = (time_t)sec;
        ts->tv_nsec = (long)sub;
        return 0;
    }
    return real_clock_gettime(clk, ts);
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    int64_t ns;
    if (!virtual_now(&ns)) {
        struct timespec ts;
        if (real_clock_gettime(CLOCK_REALTIME, &ts) != 0)
            return -1;
        ns = (int64_t)ts.tv_sec * NS_PER_SEC + (int64_t)ts.tv_nsec;
    }
    /* glibc declares tv nonnull, so no NULL check (gcc would drop it). */
    int64_t sec, sub;
    split_ns(ns, &sec, &sub);
    tv->tv_sec = (time_t)sec;
    tv->tv_usec = (suseconds_t)(sub / 1000);
    if (tz != NULL) {
        /* glibc reports UTC with no DST here too; nobody should use tz. */
        struct timezone *z = (struct timezone *)tz;
        z->tz_minuteswest = 0;
        z->tz_dsttime = 0;
    }
    return 0;
}

time_t time(time_t *out)
{
    int64_t ns;
    if (!virtual_now(&ns)) {
        struct timespec ts;
        if (real_clock_gettime(CLOCK_REALTIME, &ts) != 0)
            return (time_t)-1;
        ns = (int64_t)ts.tv_sec * NS_PER_SEC + (int64_t)ts.tv_nsec;
    }
    int64_t sec, sub;
    split_ns(ns, &sec, &sub);
    if (out != NULL)
        *out = (time_t)sec;
    return (time_t)sec;
}

/*
 * /proc/cpuinfo without `constant_tsc` (see the comment at the top).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#define KEEP_TSC_ENV "STOREPROOF_CLOCK_KEEP_TSC"
#define CPUINFO_PATH "/proc/cpuinfo"
#define TSC_FLAG " constant_tsc"

typedef FILE *(*fopen_fn)(const char *, const char *);

/* The next fopen/fopen64 in the lookup order (libc's), found once. */
static fopen_fn next_fopen(int is64)
{
    static fopen_fn cached[2];
    fopen_fn f = __atomic_load_n(&cached[is64], __ATOMIC_ACQUIRE);
    if (f == NULL) {
        f = (fopen_fn)dlsym(RTLD_NEXT, is64 ? "fopen64" : "fopen");
        __atomic_store_n(&cached[is64], f, __ATOMIC_RELEASE);
    }
    return f;
}

/* Whether this fopen must get the filtered /proc/cpuinfo. */
static int hide_tsc_for(const char *path, const char *mode)
{
    if (path == NULL || mode == NULL || strcmp(path, CPUINFO_PATH) != 0 || mode[0] != 'r' ||
        strchr(mode, '+') != NULL)
        return 0;
    const char *keep = getenv(KEEP_TSC_ENV);
    if (keep != NULL && keep[0] == '1')
        return 0;
    return clock_word() != NULL;
}

/*
 * /proc/cpuinfo with every " constant_tsc" token removed, as a read-only
 * stream over an anonymous memory file; NULL (errno set) on failure, and the
 * caller then opens the real file.
 */
static FILE *cpuinfo_without_tsc(void)
{
    int in = open(CPUINFO_PATH, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (buf == NULL) {
            close(in);
            errno = ENOMEM;
            return NULL;
        }
        if (len == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (bigger == NULL) {
                free(buf);
                buf = NULL;
                continue;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read(in, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            close(in);
            errno = e;
            return NULL;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(in);
    /* Drop the token where a whole word matches (followed by a space, a line
     * end or the end), in place: the text only gets shorter. */
    size_t flag_len = strlen(TSC_FLAG), out = 0;
    for (size_t i = 0; i < len;) {
        if (i + flag_len <= len && memcmp(buf + i, TSC_FLAG, flag_len) == 0 &&
            (i + flag_len == len || buf[i + flag_len] == ' ' || buf[i + flag_len] == '\n')) {
            i += flag_len;
            continue;
        }
        buf[out++] = buf[i++];
    }
    int fd = (int)syscall(SYS_memfd_create, "storeproof-cpuinfo", 1U /* MFD_CLOEXEC */);
    if (fd < 0) {
        int e = errno;
        free(buf);
        errno = e;
        return NULL;
    }
    size_t done = 0;
    while (done < out) {
        ssize_t w = write(fd, buf + done, out - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            free(buf);
            close(fd);
            errno = e;
            return NULL;
        }
        done += (size_t)w;
    }
    free(buf);
    if (lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "r");
    if (f == NULL)
        close(fd);
    return f;
}

static FILE *open_file(int is64, const char *path, const char *mode)
{
    if (hide_tsc_for(path, mode)) {
        FILE *f = cpuinfo_without_tsc();
        if (f != NULL)
            return f;
    }
    fopen_fn real = next_fopen(is64);
    if (real == NULL) {
        errno = ENOSYS;
        return NULL;
    }
    return real(path, mode);
}

FILE *fopen(const char *restrict path, const char *restrict mode)
{
    return open_file(0, path, mode);
}

FILE *fopen64(const char *restrict path, const char *restrict mode)
{
    return open_file(1, path, mode);
}

/*
 * fsync tracking, for simulated power loss. When STOREPROOF_FSYNC_LOG names a
 * file, every successful fsync()/fdatasync() appends "<size> <path>\n" to it:
 * the size the file had when the sync began, so every byte up to there is on
 * the disk. The harness later cuts each append-only file back to its last
 * synced size — what a power cut would have left — after a SIGKILL (which
 * alone loses nothing the kernel already has).
 */
#define FSYNC_LOG_ENV "STOREPROOF_FSYNC_LOG"

static void record_sync(int fd, off_t size)
{
    const char *log = getenv(FSYNC_LOG_ENV);
    if (log == NULL || log[0] == '\0')
        return;
    char link[64];
    char path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return;
    path[n] = '\0';
    char line[4200];
    int len = snprintf(line, sizeof line, "%lld %s\n", (long long)size, path);
    if (len <= 0 || len >= (int)sizeof line)
        return;
    int lfd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (lfd < 0)
        return;
    /* One short O_APPEND write: lines from different threads do not mix. */
    ssize_t w = write(lfd, line, (size_t)len);
    (void)w;
    close(lfd);
}

static off_t size_of(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_size : -1;
}

int fsync(int fd)
{
    off_t size = size_of(fd);
    int r = (int)syscall(SYS_fsync, fd);
    if (r == 0 && size >= 0)
        record_sync(fd, size);
    return r;
}

int fdatasync(int fd)
{
    off_t size = size_of(fd);
    int r = (int)syscall(SYS_fdatasync, fd);
    if (r == 0 && size >= 0)
        record_sync(fd, size);
    return r;
}
