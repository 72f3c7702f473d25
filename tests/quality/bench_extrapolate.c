/* ESTIMA's extrapolation on measured scaling curves the project ships (tests/data/scaling/,
 * PARSEC on a Xeon server as the P3ARSEC paper plots them; each file says where it comes
 * from): fitted on the core counts up to a quarter of the largest, predicting the counts up
 * to twice that (the paper's "2 CPUs" columns) and up to the largest (4×). The figure is the
 * paper's: the maximum relative time error over the predicted counts, per app, then averaged;
 * Amdahl alone (T = s + p/n on the same points) is printed beside it. Measured: every
 * figure; nothing is extrapolated by the benchmark itself. Targets: the 2× average at or below
 * ESTIMA's published 17.7 % (Table 4, Xeon20 2 CPUs: one socket to two), and at or below
 * Amdahl's on the same curves (the tool chooses by held-out error where the kernels lose). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/extrapolate.h"

#define ESTIMA_PUBLISHED_AVG_2X 0.177

static int read_runs(const char *path, struct extrap_point *pts, unsigned *m)
{
        FILE *f = fopen(path, "re");
        char *text;
        long len;
        char err[512];
        int r;

        if (!f)
                return -errno;
        fseek(f, 0, SEEK_END);
        len = ftell(f);
        rewind(f);
        text = calloc(1, (size_t)len + 1);
        if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
                free(text);
                fclose(f);
                return -EIO;
        }
        fclose(f);
        r = extrap_runs_parse(text, path, pts, NULL, EXTRAP_MAX_POINTS, m, err, sizeof(err));
        free(text);
        if (r < 0)
                fprintf(stderr, "bench_extrapolate: %s\n", err);
        return r;
}

/* The largest relative time error over the points in (lo, hi]. */
static double max_error(const struct extrap_model *mod, const struct extrap_point *pts, unsigned m,
                        double lo, double hi)
{
        double worst = NAN;

        for (unsigned i = 0; i < m; i++) {
                struct extrap_prediction pr;
                double e;

                if (!(pts[i].cores > lo && pts[i].cores <= hi))
                        continue;
                extrap_predict(mod, pts[i].cores, &pr);
                e = pr.known ? fabs(pr.time_s - pts[i].time_s) / pts[i].time_s : INFINITY;
                worst = isnan(worst) ? e : fmax(worst, e);
        }
        return worst;
}

static int cmp_name(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
        const char *dir = SRC_DIR "/tests/data/scaling";
        char *names[64];
        unsigned n_names = 0, n_apps = 0, within_band = 0, predicted = 0;
        double sum_e2 = 0, sum_a2 = 0, sum_e4 = 0, sum_a4 = 0;
        struct dirent *de;
        DIR *d = opendir(dir);

        if (!d) {
                fprintf(stderr, "bench_extrapolate: %s: %m\n", dir);
                return 1;
        }
        while ((de = readdir(d)) && n_names < 64) {
                size_t len = strlen(de->d_name);

                if (len > 4 && strcmp(de->d_name + len - 4, ".txt") == 0)
                        names[n_names++] = strdup(de->d_name);
        }
        closedir(d);
        qsort(names, n_names, sizeof(names[0]), cmp_name);

        printf("%-14s %5s %7s %8s %8s %8s %8s\n", "app", "fit<=", "kernel", "estima2x", "amdahl2x",
               "estima4x", "amdahl4x");
        for (unsigned k = 0; k < n_names; k++) {
                struct extrap_point pts[EXTRAP_MAX_POINTS], fit[EXTRAP_MAX_POINTS];
                struct extrap_model est, amd;
                char path[4096];
                unsigned m, m_fit = 0;
                double top, e2, a2, e4, a4;

                snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
                if (read_runs(path, pts, &m) < 0)
                        return 1;
                top = pts[m - 1].cores / 4;
                for (unsigned i = 0; i < m && pts[i].cores <= top; i++)
                        fit[m_fit++] = pts[i];
                if (extrap_build(fit, m_fit, (unsigned)pts[m - 1].cores, &est) < 0 || !est.known ||
                    extrap_amdahl(fit, m_fit, &amd) < 0) {
                        fprintf(stderr, "bench_extrapolate: %s: no model from %u runs\n", path,
                                m_fit);
                        return 1;
                }
                e2 = max_error(&est, pts, m, top, 2 * top);
                a2 = max_error(&amd, pts, m, top, 2 * top);
                e4 = max_error(&est, pts, m, top, pts[m - 1].cores);
                a4 = max_error(&amd, pts, m, top, pts[m - 1].cores);
                for (unsigned i = 0; i < m; i++) {
                        struct extrap_prediction pr;

                        if (pts[i].cores <= top)
                                continue;
                        extrap_predict(&est, pts[i].cores, &pr);
                        predicted++;
                        within_band += pr.low_s <= pts[i].time_s && pts[i].time_s <= pr.high_s;
                }
                names[k][strlen(names[k]) - 4] = '\0';
                printf("%-14s %5.0f %7s %7.1f%% %7.1f%% %7.1f%% %7.1f%%\n", names[k], top,
                       extrap_kernel_name(est.main.kernel), 100 * e2, 100 * a2, 100 * e4, 100 * a4);
                printf("bench: extrapolate %s from <= %.0f cores: max error %.1f %% to %.0f cores "
                       "(Amdahl %.1f %%), %.1f %% to %.0f (Amdahl %.1f %%); measured\n",
                       names[k], top, 100 * e2, 2 * top, 100 * a2, 100 * e4, pts[m - 1].cores,
                       100 * a4);
                sum_e2 += e2;
                sum_a2 += a2;
                sum_e4 += e4;
                sum_a4 += a4;
                n_apps++;
                free(names[k]);
        }
        if (n_apps < 5) {
                fprintf(stderr, "bench_extrapolate: only %u apps in %s\n", n_apps, dir);
                return 1;
        }
        printf("bench: extrapolate average of the max errors over %u apps, 2x the fitted "
               "counts: ESTIMA %.1f %%, Amdahl %.1f %% (published ESTIMA average %.1f %%); "
               "measured\n",
               n_apps, 100 * sum_e2 / n_apps, 100 * sum_a2 / n_apps, 100 * ESTIMA_PUBLISHED_AVG_2X);
        printf("bench: extrapolate average of the max errors, 4x: ESTIMA %.1f %%, Amdahl %.1f %% "
               "(published ESTIMA average 17.7 %% at 4x on the Opteron); measured\n",
               100 * sum_e4 / n_apps, 100 * sum_a4 / n_apps);
        printf("bench: extrapolate band: %u of %u predicted measurements inside it (%.0f %%); "
               "measured\n",
               within_band, predicted, 100.0 * within_band / predicted);
        /* Where ESTIMA's kernels lose to Amdahl, the tool chooses by held-out error and
         * requires a residual of every fit (docs/extrapolation.md): it must do no worse. */
        if (sum_e2 > sum_a2 + 1e-9) {
                fprintf(stderr,
                        "bench_extrapolate: average 2x error %.1f %% above Amdahl's %.1f %%\n",
                        100 * sum_e2 / n_apps, 100 * sum_a2 / n_apps);
                return 1;
        }
        if (sum_e2 / n_apps > ESTIMA_PUBLISHED_AVG_2X) {
                fprintf(stderr,
                        "bench_extrapolate: average 2x error %.1f %% above ESTIMA's %.1f %%\n",
                        100 * sum_e2 / n_apps, 100 * ESTIMA_PUBLISHED_AVG_2X);
                return 1;
        }
        return 0;
}
