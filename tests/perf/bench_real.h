/* What the benchmarks of real costs share: managed processes (sleeping orphans started by the
 * benchmark, real processes with a /proc entry and a thread each, that die with it or when
 * killed), CPU time, and the cost of one real sensor read. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pctl/sensor.h"

/* The write end of the pipe the managed processes wait on: when the benchmark exits, however
 * it exits, they read end-of-file and go. */
static int bench_lifeline = -1;

/* Starts n processes that sleep until killed or until the benchmark is gone. They are
 * orphans (forked twice, so init adopts them) running cat: pctld never manages its own
 * descendants or executable, and neither may the benchmark's manager. Returns how many were
 * started. */
static inline unsigned bench_children_start(pid_t *pids, unsigned n)
{
        int life[2], back[2];
        unsigned started = 0;

        if (pipe2(life, O_CLOEXEC) < 0)
                return 0;
        bench_lifeline = life[1];
        fflush(NULL);
        for (; started < n; started++) {
                pid_t mid, pid = -1;

                if (pipe2(back, O_CLOEXEC) < 0)
                        break;
                mid = fork();
                if (mid < 0) {
                        close(back[0]);
                        close(back[1]);
                        break;
                }
                if (mid == 0) {
                        pid_t leaf = fork();

                        if (leaf == 0) {
                                int null = open("/dev/null", O_WRONLY);

                                /* cat: a program of its own (pctld refuses to manage its own
                                 * executable), reading the lifeline until end-of-file. */
                                if (dup2(life[0], 0) < 0 || null < 0 || dup2(null, 1) < 0)
                                        _exit(127);
                                execlp("cat", "cat", (char *)NULL);
                                _exit(127);
                        }
                        if (write(back[1], &leaf, sizeof(leaf)) != sizeof(leaf))
                                _exit(1);
                        _exit(0);
                }
                close(back[1]);
                if (read(back[0], &pid, sizeof(pid)) != sizeof(pid))
                        pid = -1;
                close(back[0]);
                waitpid(mid, NULL, 0);
                if (pid <= 0)
                        break;
                pids[started] = pid;
        }
        close(life[0]);
        return started;
}

/* Kills them and waits until each is gone (init reaps them, not us). */
static inline void bench_children_stop(const pid_t *pids, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                kill(pids[i], SIGKILL);
        for (unsigned i = 0; i < n; i++)
                for (unsigned k = 0; k < 1000 && kill(pids[i], 0) == 0; k++)
                        usleep(1000);
        if (bench_lifeline >= 0)
                close(bench_lifeline);
        bench_lifeline = -1;
}

/* CPU time of this process (all its threads), ns: what the daemon would spend. */
static inline uint64_t bench_cpu_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Mean CPU time of one sensor_read over `reads`, best of `rounds` (the machine is shared; CPU
 * time, user and kernel, is what the daemon's budget counts). 0 when a read fails. */
static inline double bench_sensor_read_us(struct sensor *sn, struct sensor_sample *s,
                                          unsigned reads, unsigned rounds)
{
        double best = 0;

        for (unsigned round = 0; round < rounds; round++) {
                uint64_t t0 = bench_cpu_ns();
                double us;

                for (unsigned k = 0; k < reads; k++)
                        if (sensor_read(sn, s) < 0)
                                return 0;
                us = (double)(bench_cpu_ns() - t0) / 1e3 / reads;
                if (round == 0 || us < best)
                        best = us;
        }
        return best;
}
