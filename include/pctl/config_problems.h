/* The problems found in a configuration, policy or any INI file a reader checks: each with
 * file:line and the reason, every one of them rather than the first. */
#pragma once

#include <stddef.h>
#include <stdio.h>

#define CONFIG_PATH_MAX 256

/* One problem found in a configuration or policy file. lineno 0: the file as a whole. */
struct config_problem {
        char file[CONFIG_PATH_MAX];
        int lineno;
        char what[320]; /* "[section] key: reason" */
};

struct config_problems {
        struct config_problem *v;
        size_t n, cap;
};

/* Appends one problem. -ENOMEM when it cannot (the list then ends with what it had). */
int config_problems_add(struct config_problems *p, const char *file, int lineno, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));
/* "file:line: what", one per line. */
void config_problems_print(const struct config_problems *p, FILE *f);
void config_problems_clear(struct config_problems *p);
/* Sorts the problems from index `from` by line, keeping the order of equal lines, and drops
 * exact duplicates (a line scan and inih may both report one syntax error). */
void config_problems_sort_from(struct config_problems *p, size_t from);
