/* A power model declared by the operator (pctl.conf [power], or a file given to
 * `pctl model table --power`): static_w, and core_w per busy core at the top frequency. */
#pragma once

#include "pctl/model.h"

struct power_decl {
        double static_w;
        double core_w;
        double idle_w;     /* optional: W of a held core that is idle; default core_w */
        unsigned freq_khz; /* optional (key freq_mhz): the frequency core_w holds at */
        unsigned seen;     /* POWER_DECL_* bits */
};

enum {
        POWER_DECL_STATIC = 1u << 0,
        POWER_DECL_CORE = 1u << 1,
        POWER_DECL_IDLE = 1u << 2,
        POWER_DECL_FREQ = 1u << 3
};

/* One key=value of a [power] section. -ENOENT for an unknown key, -EINVAL/-ERANGE for a bad
 * value (not a number, negative, not finite); *d changes only on success. */
int power_decl_key(struct power_decl *d, const char *key, const char *value);
/* Builds the model; the point sits at freq_khz if declared, else at top_khz. -ENODATA when
 * static_w or core_w is missing. */
int power_decl_to_model(const struct power_decl *d, unsigned top_khz, struct model_power *out);
/* Reads the [power] section of an INI file. On error, err names file:line and the reason. */
int power_decl_load(const char *path, struct power_decl *d, char *err, size_t err_size);
