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
 * fsync tracking, for simulated power loss. When STOREPROOF_FSYNC_LOG names a
 * file, every successful fsync()/fdatasync() appends "<size> <path>\n" to it:
 * the size the file had when the sync began, so every byte up to there is on
 * the disk. The harness later cuts each append-only file back to its last
 * synced size — what a power cut would have left — after a SIGKILL (which
 * alone loses nothing the kernel already has).
 */
#include <stdio.h>
#include <string.h>

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
