/* A [power] section: the one dialect of a package power model, wherever it is written —
 * pctl.conf (declared by the operator), a file given to `pctl model table --power`, and
 * platform.ini (fitted by calibration). man/pctl.conf.5 documents it:
 *
 *   static_w            W of the package with every core idle (required)
 *   core_w              W per busy core at freq_mhz (or the top frequency)
 *   idle_w              W of a held, idle core (default core_w)
 *   freq_mhz            the frequency core_w holds at (default the top one)
 *   core_w_<MHZ>        W per busy core at that frequency, one point per frequency
 *   idle_w_<MHZ>        W of a held, idle core there (pairs with core_w_<MHZ>)
 *   residual_w          RMS error of the model, W (calibration writes it)
 *
 * A model has static_w and either core_w or core_w_<MHZ> points; the two forms do not mix.
 * A key given twice is an error. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "pctl/model.h"

/* One frequency of the core_w_<MHZ>/idle_w_<MHZ> form. */
struct power_decl_freq {
        unsigned mhz;
        double core_w, idle_w;
        int core_line, idle_line; /* 0: not given */
};

enum power_decl_key {
        POWER_DECL_KEY_STATIC,
        POWER_DECL_KEY_CORE,
        POWER_DECL_KEY_IDLE,
        POWER_DECL_KEY_FREQ,
        POWER_DECL_KEY_RESIDUAL,
        POWER_DECL_KEYS
};

struct power_decl {
        double static_w;
        double core_w;
        double idle_w;     /* optional: W of a held core that is idle; default core_w */
        unsigned freq_khz; /* optional (key freq_mhz): the frequency core_w holds at */
        double residual_w; /* optional */
        unsigned seen;     /* POWER_DECL_* bits */
        unsigned refused;  /* POWER_DECL_* bits of keys given a bad value: not also missing */
        int line[POWER_DECL_KEYS]; /* the line that set each key, 0: none given */
        unsigned n_freqs;
        struct power_decl_freq freqs[MODEL_MAX_FREQS];
};

enum {
        POWER_DECL_STATIC = 1u << POWER_DECL_KEY_STATIC,
        POWER_DECL_CORE = 1u << POWER_DECL_KEY_CORE,
        POWER_DECL_IDLE = 1u << POWER_DECL_KEY_IDLE,
        POWER_DECL_FREQ = 1u << POWER_DECL_KEY_FREQ,
        POWER_DECL_RESIDUAL = 1u << POWER_DECL_KEY_RESIDUAL,
};

/* One key = value of a [power] section at lineno (0: no line). On failure why holds the
 * reason (without the key) and only the key's refusal is recorded: -ENOENT for an unknown
 * key, -EINVAL/-ERANGE for a bad value, -EEXIST for a key given twice. */
int power_decl_set(struct power_decl *d, const char *key, const char *value, int lineno, char *why,
                   size_t why_size);
/* power_decl_set without a line or a reason, for callers that build a model in code. */
int power_decl_key(struct power_decl *d, const char *key, const char *value);
/* What only the whole section can tell: a missing static_w or core_w, a core_w_<MHZ> or
 * idle_w_<MHZ> without its pair, the two forms mixed. -ENODATA with the reason in why and *lineno
 * the line to name (0: the section as a whole); 0 when the section makes a model. Keys that were
 * refused are not reported again as missing (-ENODATA, why empty). */
int power_decl_check(const struct power_decl *d, int *lineno, char *why, size_t why_size);
/* Builds the model (declared true): a point per core_w_<MHZ>, or one point at freq_khz if
 * declared, else at top_khz. -ENODATA when power_decl_check refuses the section. */
int power_decl_to_model(const struct power_decl *d, unsigned top_khz, struct model_power *out);
/* The keys for documentation: name and a line of help; false past the last. */
bool power_decl_key_info(size_t i, const char **key, const char **doc);
/* Reads the [power] section of an INI file, ignoring the others (so pctl.conf and
 * platform.ini serve too). On error, err names file:line and the reason: -EINVAL for a bad
 * line, -ENODATA for a section that makes no model, -ENOENT/-EACCES. */
int power_decl_load(const char *path, struct power_decl *d, char *err, size_t err_size);

/* Whether two declarations give the same model (line numbers aside). */
bool power_decl_same(const struct power_decl *a, const struct power_decl *b);
