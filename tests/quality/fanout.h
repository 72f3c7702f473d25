/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The quality benches' fan-out: rows computed in forked workers, sent back through a pipe. */
#ifndef PCTL_TESTS_FANOUT_H
#define PCTL_TESTS_FANOUT_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs run(row i, dir) for every i < n in `jobs` forked workers, worker w taking every jobs-th
 * row from w, and copies each computed row back into rows[i] (row_size bytes each), marking
 * received[i]. A row travels with its index in one write shorter than PIPE_BUF, so workers'
 * writes do not interleave. A worker that dies leaves its remaining rows unreceived, for the
 * caller to report. Returns 0, or -1 when no pipe or no fork could be had (perror'd as name). */
static inline int fanout_rows(const char *name, void *rows, size_t row_size, unsigned n,
                              unsigned jobs, void (*run)(void *row, const char *dir),
                              const char *dir, bool *received)
{
        unsigned char msg[PIPE_BUF];
        size_t msg_size = sizeof(unsigned) + row_size;
        int fds[2];

        if (msg_size > sizeof(msg) || pipe(fds) < 0) {
                fprintf(stderr, "%s: %s\n", name,
                        msg_size > sizeof(msg) ? "a row does not fit one pipe write"
                                               : strerror(errno));
                return -1;
        }
        for (unsigned wk = 0; wk < jobs; wk++) {
                pid_t pid = fork();

                if (pid < 0) {
                        perror(name);
                        close(fds[0]);
                        close(fds[1]);
                        while (wait(NULL) > 0)
                                ;
                        return -1;
                }
                if (pid == 0) {
                        close(fds[0]);
                        for (unsigned i = wk; i < n; i += jobs) {
                                unsigned char *row = (unsigned char *)rows + i * row_size;

                                run(row, dir);
                                memcpy(msg, &i, sizeof(i));
                                memcpy(msg + sizeof(i), row, row_size);
                                if (write(fds[1], msg, msg_size) != (ssize_t)msg_size)
                                        _exit(1);
                        }
                        _exit(0);
                }
        }
        close(fds[1]);
        for (unsigned got = 0; got < n; got++) {
                unsigned i;

                if (read(fds[0], msg, msg_size) != (ssize_t)msg_size)
                        break;
                memcpy(&i, msg, sizeof(i));
                if (i >= n || received[i])
                        break;
                memcpy((unsigned char *)rows + i * row_size, msg + sizeof(i), row_size);
                received[i] = true;
        }
        close(fds[0]);
        while (wait(NULL) > 0)
                ;
        return 0;
}

#endif
