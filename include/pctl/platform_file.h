/* platform.ini: what `pctl calibrate` measured about a machine, read by pctld at start.
 *
 *   [platform]   backend, date (ISO 8601), hostname, cpu_model, n_cpus
 *   [estimator]  ipc1 (single-core IPC of pbench's kernel); ΔI of eq. 14 per interval:
 *                delta_i_alpha (α, instructions/s on the app's CPUs whatever their number),
 *                delta_i_rate (β, instructions per busy core-second), delta_i_fit_error (RMS
 *                of the fit over the mean ΔI); each absent when not measured
 *   [power]      static_w, core_w_<MHZ> and idle_w_<MHZ> per frequency, residual_w (RMS of
 *                the fit); the whole section absent when no energy was measured
 *   [validation] max_p_error, max_speedup_error_pct
 *
 * A figure that was not measured is absent from the file and unknown in the profile. */
#pragma once

#include <stddef.h>
#include <stdio.h>

#include "pctl/model.h"

#define PLATFORM_FILE_DEFAULT PCTL_LIBDIR_STATE "/platform.ini"

struct platform_profile {
        char backend[32];
        char date[40]; /* ISO 8601 */
        char hostname[256];
        char cpu_model[160];
        unsigned n_cpus;
        double ipc1;              /* 0 = unknown */
        double delta_i_rate;      /* β: instructions/s per busy core; NaN = unknown */
        double delta_i_alpha;     /* α: instructions/s on the app's CPUs; NaN = unknown */
        double delta_i_fit_error; /* RMS of the ΔI fit / mean ΔI; NaN = unknown */
        struct model_power power; /* n_points 0 = no power model */
        double power_residual_w;  /* RMS of the power fit; NaN without one */
        double max_p_error;       /* max |P̂ - P| over the programmed P; NaN = unknown */
        double max_speedup_error_pct;
};

/* Every figure unknown, every string empty. */
void platform_profile_init(struct platform_profile *p);

/* Reads path into *out (written only on success). -ENOENT (or -EACCES) when the file cannot
 * be opened; -EINVAL for a corrupt file, with err saying "file:line: reason". Unknown
 * sections and keys are errors: a file we do not understand is not half used. */
int platform_file_load(const char *path, struct platform_profile *out, char *err, size_t err_size);
/* The same from text; `name` stands for the file in messages. */
int platform_file_load_string(const char *text, const char *name, struct platform_profile *out,
                              char *err, size_t err_size);

/* Writes the INI text of p to f. -EIO on a write error. */
int platform_file_format(FILE *f, const struct platform_profile *p);
/* Writes path atomically: a temporary file in the same directory, fsync, rename. The
 * directory must exist. -errno on failure, and the old file is then untouched. */
int platform_file_write(const char *path, const struct platform_profile *p);

/* Fills the identity of this machine: hostname, cpu_model from /proc/cpuinfo (under the fs
 * root), n_cpus online, date now. Missing pieces stay empty. */
void platform_profile_identify(struct platform_profile *p);
