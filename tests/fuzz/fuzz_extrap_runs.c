/* The runs file of `pctl extrapolate` (extrap_runs_parse), then the model built from what it
 * accepted: an error always says why, an accepted file always has at least three increasing
 * counts, and a prediction is known with a positive time or unknown with NaN. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "pctl/extrapolate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct extrap_point pts[64];
        unsigned lines[64], m = 0, to;
        char err[512] = "";
        struct extrap_model mod;
        char *text = fuzz_text(data, size);
        int r;

        if (!text)
                return 0;
        r = extrap_runs_parse(text, "runs", pts, lines, 64, &m, err, sizeof(err));
        free(text);
        if (r < 0) {
                if (!err[0] || (r != -EINVAL && r != -E2BIG))
                        abort();
                return 0;
        }
        if (m < 3)
                abort();
        for (unsigned i = 1; i < m; i++)
                if (!(pts[i].cores > pts[i - 1].cores) || lines[i] <= lines[i - 1])
                        abort();
        if (pts[m - 1].cores > 512)
                return 0; /* pctl extrapolate caps --to at 4096; keep each input quick */
        to = 2 * (unsigned)pts[m - 1].cores;
        if (extrap_build(pts, m, to, &mod) == 0 && mod.known) {
                struct extrap_prediction pr;

                extrap_predict(&mod, to, &pr);
                if (pr.known && !(pr.time_s > 0 && pr.low_s <= pr.time_s && pr.time_s <= pr.high_s))
                        abort();
                if (!pr.known && !isnan(pr.time_s))
                        abort();
        }
        return 0;
}
