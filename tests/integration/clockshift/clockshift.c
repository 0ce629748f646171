/*
 * A clock shift for pg_seqgen's test suite: preloaded into a whole PostgreSQL server
 * (LD_PRELOAD on pg_ctl start), it makes every process of that server see CLOCK_REALTIME,
 * CLOCK_REALTIME_COARSE, gettimeofday() and time() shifted by the number of milliseconds in
 * the file named by SEQGEN_CLOCK_FILE (re-read at most once per millisecond), so a test can
 * move the clock back and forth while the server runs. Monotonic clocks stay real.
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
static long long cached_ms;
static struct timespec read_at;

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
                buf[n] = 0;
                long long v = 0;
                int neg = 0, digits = 0;
                char *c = buf;
                while (*c == ' ' || *c == '\n') c++;
                if (*c == '-' || *c == '+') neg = (*c++ == '-');
                for (; *c >= '0' && *c <= '9'; c++, digits++) v = v * 10 + (*c - '0');
                if (digits) cached_ms = neg ? -v : v;
            }
        }
        read_at = now;
    }
    return cached_ms;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    int r = real_clock_gettime(id, ts);
    if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        long long ns = (long long) ts->tv_nsec + (offset_ms() % 1000) * 1000000LL;
        long long s = (long long) ts->tv_sec + offset_ms() / 1000;
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
