/* The project's rules for the text it shows people (reports, summaries, errors): the house
 * rules for JSON are in jsonfmt.h. */
#pragma once

#include <math.h>

/* The "s" a noun takes after a count: none after one, as "1 core", "2 cores", "0 cores".
 * `count` is the figure as printed: a caller printing "%.0f" passes it rounded the same way
 * (textfmt_rounded), so that 0.6 reads "1 core" too. A figure printed with decimals ("1.5
 * cores", "1.0 cores") keeps the plural and needs no plural_s. */
static inline const char *plural_s(double count)
{
        return count == 1 ? "" : "s";
}

/* A figure as "%.0f" prints it: the count plural_s judges for such a line. */
static inline double textfmt_rounded(double v)
{
        return nearbyint(v);
}
