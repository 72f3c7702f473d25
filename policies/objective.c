#include "pctl/objective.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static const char *const objective_names[OBJECTIVE_COUNT] = {
    [OBJECTIVE_EDP] = "edp",         [OBJECTIVE_PPW] = "ppw",
    [OBJECTIVE_ENERGY] = "energy",   [OBJECTIVE_PERFORMANCE] = "performance",
    [OBJECTIVE_MONITOR] = "monitor",
};

const char *objective_to_string(enum objective_kind o)
{
        return (unsigned)o < OBJECTIVE_COUNT ? objective_names[o] : "?";
}

int objective_from_string(const char *s, enum objective_kind *out)
{
        for (unsigned i = 0; i < OBJECTIVE_COUNT; i++)
                if (s && strcmp(s, objective_names[i]) == 0) {
                        *out = (enum objective_kind)i;
                        return 0;
                }
        return -EINVAL;
}

bool objective_needs_power(enum objective_kind o)
{
        return o == OBJECTIVE_EDP || o == OBJECTIVE_PPW || o == OBJECTIVE_ENERGY;
}

enum objective_kind objective_effective(enum objective_kind o, bool power_known,
                                        const char **reason)
{
        if (objective_needs_power(o) && !power_known) {
                if (reason)
                        *reason = "power unknown (no RAPL, no calibrated or declared model): "
                                  "running for performance within the policy's bounds";
                return OBJECTIVE_PERFORMANCE;
        }
        if (reason)
                *reason = NULL;
        return o;
}

int objective_score_rate(enum objective_kind o, double power_w, double ips, double *score)
{
        double s;

        if (!(ips > 0) || !isfinite(ips))
                return -EDOM;
        if (objective_needs_power(o) && !(power_w >= 0 && isfinite(power_w)))
                return -EDOM;
        switch (o) {
        case OBJECTIVE_EDP:
                s = power_w / (ips * ips); /* eq. 13 per instruction: W*T^2 with T = 1/IPS */
                break;
        case OBJECTIVE_PPW:
                if (power_w == 0)
                        return -EDOM;
                s = -ips / power_w; /* eq. 11, negated so that lower is better */
                break;
        case OBJECTIVE_ENERGY:
                s = power_w / ips; /* eq. 12 */
                break;
        case OBJECTIVE_PERFORMANCE:
                s = 1.0 / ips;
                break;
        default:
                return -EDOM;
        }
        *score = s;
        return 0;
}

int objective_score_prediction(enum objective_kind o, const struct model_prediction *pr,
                               double *score)
{
        double t_s = pr->time_s, w = pr->power_w, s;

        if (!(t_s > 0) || !isfinite(t_s))
                return -EDOM;
        if (objective_needs_power(o) && !(w >= 0 && isfinite(w)))
                return -EDOM;
        switch (o) {
        case OBJECTIVE_EDP:
                s = w * t_s * t_s; /* eq. 13 */
                break;
        case OBJECTIVE_PPW:
                if (w == 0)
                        return -EDOM;
                s = -1.0 / (w * t_s); /* eq. 11 times I0: work per joule */
                break;
        case OBJECTIVE_ENERGY:
                s = w * t_s; /* eq. 12 times I0 */
                break;
        case OBJECTIVE_PERFORMANCE:
                s = t_s;
                break;
        default:
                return -EDOM;
        }
        *score = s;
        return 0;
}

bool objective_better(double score_a, double score_b, double hysteresis)
{
        if (isnan(score_a) || isnan(score_b) || !(hysteresis >= 0))
                return false;
        /* |a| so that it holds for the negative ppw scores too. */
        return score_b < score_a - hysteresis * fabs(score_a);
}

int objective_slowdown(double baseline_s, double time_s, double *slowdown)
{
        if (!(baseline_s > 0) || !isfinite(baseline_s) || !(time_s > 0) || !isfinite(time_s))
                return -EDOM;
        *slowdown = time_s / baseline_s - 1.0;
        return 0;
}

bool objective_slowdown_ok(double baseline_s, double time_s, double max_slowdown)
{
        double s;

        if (objective_slowdown(baseline_s, time_s, &s) < 0 || isnan(max_slowdown))
                return false;
        return s <= max_slowdown;
}
