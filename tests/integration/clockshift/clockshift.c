/*
 * A clock shift for pg_seqgen's test suite: preloaded into a whole PostgreSQL server
 * (LD_PRELOAD on pg_ctl start), it makes every process of that server see CLOCK_REALTIME,
 * CLOCK_REALTIME_COARSE, gettimeofday() and time() shifted by the number of milliseconds in
 * the file named by SEQGEN_CLOCK_FILE (re-read at most once per millisecond), so a test can
 * move the clock back and forth while the server runs. Monotonic clocks stay real.
 *
 * The file holds "<offset>" or "<offset> <at> <previous>": the offset applies from the real
 * Unix time <at> (ms) on, <previous> before it. A test sets <at> a little ahead, so every
 * process (each re-reads the file once per millisecond) switches at the same instant of the
 * one real clock: processes that disagreed about the offset for up to a millisecond made the
 * generator see the clock step back and forward again with every ID in that millisecond.
 *
 * Why not libfaketime: on PostgreSQL 15 the postmaster starts background workers from a
 * signal handler that runs while it sleeps in select(); libfaketime marks a thread as "do not
 * fake" for the duration of the real select(), and the forked worker inherits that mark for
 * good. The allocation worker would keep the real clock while the backends see the fake one.
 *
 * Only async-signal-safe calls (open, read, close) are used: the postmaster reads the clock
 * inside its signal handlers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static char path[512];
static long long cached_ms, cached_prev_ms, cached_at_ms;
static struct timespec read_at;

static const char *parse(const char *c, long long *out, int *ok)
{
    long long v = 0;
    int neg = 0, digits = 0;
    while (*c == ' ' || *c == '\n') c++;
    if (*c == '-' || *c == '+') neg = (*c++ == '-');
    for (; *c >= '0' && *c <= '9'; c++, digits++) v = v * 10 + (*c - '0');
    *ok = digits > 0;
    if (*ok) *out = neg ? -v : v;
    return c;
}

__attribute__((constructor)) static void init(void)
{
    real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
    const char *p = getenv("SEQGEN_CLOCK_FILE");
    if (p && strlen(p) < sizeof(path))
        strcpy(path, p);
}

static long long offset_ms(void)
{
    struct timespec now;
    real_clock_gettime(CLOCK_MONOTONIC, &now);
    long long age_us = (now.tv_sec - read_at.tv_sec) * 1000000LL + (now.tv_nsec - read_at.tv_nsec) / 1000;
    if (path[0] && (read_at.tv_sec == 0 || age_us >= 1000 || age_us < 0)) {
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            char buf[64];
            ssize_t n = read(fd, buf, sizeof(buf) - 1);
            close(fd);
            if (n > 0) {
                long long v, at, prev;
                int ok, ok_at, ok_prev;
                buf[n] = 0;
                const char *c = parse(buf, &v, &ok);
                c = parse(c, &at, &ok_at);
                parse(c, &prev, &ok_prev);
                if (ok) {
                    cached_ms = v;
                    cached_at_ms = ok_at && ok_prev ? at : 0;
                    cached_prev_ms = ok_at && ok_prev ? prev : v;
                }
            }
        }
        read_at = now;
    }
    if (cached_at_ms != 0) {
        struct timespec real;
        real_clock_gettime(CLOCK_REALTIME, &real);
        if (real.tv_sec * 1000LL + real.tv_nsec / 1000000 < cached_at_ms)
            return cached_prev_ms;
    }
    return cached_ms;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    int r = real_clock_gettime(id, ts);
    if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        /* one offset per reading (read twice, a re-read between could mix two) */
        long long off = offset_ms();
        long long ns = (long long) ts->tv_nsec + (off % 1000) * 1000000LL;
        long long s = (long long) ts->tv_sec + off / 1000;
        while (ns < 0) { ns += 1000000000LL; s--; }
        while (ns >= 1000000000LL) { ns -= 1000000000LL; s++; }
        ts->tv_sec = s;
        ts->tv_nsec = ns;
    }
    return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    (void) tz;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *t)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
