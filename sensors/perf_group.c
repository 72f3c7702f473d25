/* perf_event groups: opened leader first, read with PERF_FORMAT_GROUP in one read(2). */
#include "pctl/perf_group.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "backends.h"
#include "pctl/util.h"

#define PERF_GROUP_FORMAT                                                                          \
        (PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING)

int perf_group_open(struct perf_group *g, const struct perf_event_attr *attrs, unsigned n,
                    pid_t pid, int cpu, unsigned long flags)
{
        memset(g, 0, sizeof(*g));
        if (n == 0 || n > PERF_GROUP_MAX)
                return -EINVAL;
        for (unsigned i = 0; i < n; i++) {
                struct perf_event_attr a = attrs[i];
                int fd;

                a.size = sizeof(a);
                a.read_format = PERF_GROUP_FORMAT;
                a.disabled = 0; /* counting starts at open */
                fd = sensor_perf_open(&a, pid, cpu, i == 0 ? -1 : g->fd[0],
                                      flags | PERF_FLAG_FD_CLOEXEC);
                if (fd < 0) {
                        if (i == 0)
                                return fd;
                        continue; /* this PMU does not have the event: leave it out */
                }
                g->fd[g->n] = fd;
                g->slot[g->n] = i;
                g->opened |= 1u << i;
                g->n++;
        }
        return 0;
}

int perf_group_read(const struct perf_group *g, struct perf_group_reading *out)
{
        /* nr, time_enabled, time_running, then one value per event in the order opened. */
        uint64_t buf[3 + PERF_GROUP_MAX];
        ssize_t want = (ssize_t)((3 + g->n) * sizeof(uint64_t)), got;

        if (g->n == 0)
                return -EBADF;
        got = read(g->fd[0], buf, sizeof(buf));
        if (got < 0)
                return -errno;
        if (got != want || buf[0] != g->n)
                return -EIO;
        memset(out, 0, sizeof(*out));
        out->enabled_ns = buf[1];
        out->running_ns = buf[2];
        for (unsigned k = 0; k < g->n; k++)
                out->value[g->slot[k]] = buf[3 + k];
        return 0;
}

void perf_group_close(struct perf_group *g)
{
        for (unsigned k = g->n; k-- > 0;)
                if (g->fd[k] >= 0)
                        close(g->fd[k]);
        memset(g, 0, sizeof(*g));
}

uint64_t perf_group_delta(const struct perf_group_reading *prev,
                          const struct perf_group_reading *now, unsigned i)
{
        return sensor_scale_multiplexed(now->value[i] - prev->value[i],
                                        now->enabled_ns - prev->enabled_ns,
                                        now->running_ns - prev->running_ns);
}

unsigned perf_freq_khz(uint64_t cycles, uint64_t ref_cycles, unsigned tsc_khz)
{
        double khz;

        if (cycles == 0 || ref_cycles == 0 || tsc_khz == 0)
                return 0;
        khz = (double)cycles / (double)ref_cycles * tsc_khz;
        return khz < 1 || khz > UINT32_MAX ? 0 : (unsigned)(khz + 0.5);
}

void perf_counts_freq(struct sensor_counts *c, unsigned tsc_khz)
{
        unsigned khz;

        if ((c->measured & (SENSOR_CYCLES | SENSOR_REF_CYCLES)) !=
            (SENSOR_CYCLES | SENSOR_REF_CYCLES))
                return;
        khz = perf_freq_khz(c->cycles, c->ref_cycles, tsc_khz);
        if (!khz)
                return;
        c->freq_khz = khz;
        c->measured |= SENSOR_FREQ;
}

#if defined(__x86_64__) || defined(__i386__)
static bool cpuinfo_has_flag(const char *flag)
{
        char line[8192];
        bool found = false;
        FILE *f = fopen("/proc/cpuinfo", "re");

        if (!f)
                return false;
        while (!found && fgets(line, sizeof(line), f)) {
                if (strncmp(line, "flags", 5))
                        continue;
                for (char *w = strtok(strchr(line, ':') ? strchr(line, ':') + 1 : line, " \n"); w;
                     w = strtok(NULL, " \n"))
                        if (!strcmp(w, flag))
                                found = true;
                break; /* the first CPU's flags stand for all */
        }
        fclose(f);
        return found;
}

static uint64_t raw_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int perf_tsc_khz(unsigned interval_ms, unsigned *out)
{
        uint64_t t0_ns, t1_ns, tsc0, tsc1;
        struct timespec pause = {.tv_sec = interval_ms / 1000,
                                 .tv_nsec = (long)(interval_ms % 1000) * 1000000};

        /* Without constant_tsc the TSC follows the clock and is no fixed reference. */
        if (!cpuinfo_has_flag("constant_tsc"))
                return -EOPNOTSUPP;
        t0_ns = raw_ns();
        tsc0 = __rdtsc();
        while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
                ;
        t1_ns = raw_ns();
        tsc1 = __rdtsc();
        if (t1_ns <= t0_ns || tsc1 <= tsc0)
                return -EIO;
        *out = (unsigned)((double)(tsc1 - tsc0) / (double)(t1_ns - t0_ns) * 1e6 + 0.5);
        return 0;
}
#else
int perf_tsc_khz(unsigned interval_ms, unsigned *out)
{
        (void)interval_ms;
        (void)out;
        return -EOPNOTSUPP; /* ref-cycles has no TSC to stand for here */
}
#endif

bool perf_stall_attr(unsigned attempt, bool intel, struct perf_event_attr *out)
{
        static const uint64_t intel_raw[] = {
            0x040004a3, /* CYCLE_ACTIVITY.STALLS_TOTAL: cmask 4 << 24 | umask 4 << 8 | 0xa3 */
            0x000001a2, /* RESOURCE_STALLS.ANY: umask 1 << 8 | 0xa2 */
        };

        *out = (struct perf_event_attr){.size = sizeof(*out)};
        if (attempt == 0) {
                out->type = PERF_TYPE_HARDWARE;
                out->config = PERF_COUNT_HW_STALLED_CYCLES_BACKEND;
                return true;
        }
        if (!intel || attempt - 1 >= sizeof(intel_raw) / sizeof(intel_raw[0]))
                return false;
        out->type = PERF_TYPE_RAW;
        out->config = intel_raw[attempt - 1];
        return true;
}

bool perf_cpu_is_intel(void)
{
        char line[256];
        bool intel = false;
        FILE *f = fopen("/proc/cpuinfo", "re");

        if (!f)
                return false;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "vendor_id", 9) == 0) {
                        intel = strstr(line, "GenuineIntel") != NULL;
                        break;
                }
        fclose(f);
        return intel;
}
