/* The replay backend: a recorded trace (our CSV or likwid-perfctr -t timeline text) played
 * back one interval per read, so that traces from real hardware can drive the estimator. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backends.h"
#include "pctl/sample_io.h"
#include "pctl/textfmt.h"

static int replay_probe(const struct sensor_config *cfg, struct sensor_probe *out)
{
        struct sample_io_reader *r;
        struct sample_io_error bad;
        int e;

        *out = (struct sensor_probe){0};
        snprintf(out->mem_reason, sizeof(out->mem_reason), "replay: what the trace recorded");
        if (!cfg || !cfg->source) {
                out->err = -EINVAL;
                snprintf(out->reason, sizeof(out->reason),
                         "replay: needs a recorded trace (--source FILE)");
                return 0;
        }
        e = sample_io_open(cfg->source, &r, &bad);
        if (e < 0) {
                out->err = e;
                if (e == -EBADMSG)
                        snprintf(out->reason, sizeof(out->reason), "replay: %.90s:%u: %.140s",
                                 cfg->source, bad.line, bad.what);
                else
                        snprintf(out->reason, sizeof(out->reason), "replay: %.150s: %s",
                                 cfg->source, strerror(-e));
                return 0;
        }
        out->available = true;
        out->mem_traffic = sample_io_has_mem_traffic(r);
        snprintf(out->mem_reason, sizeof(out->mem_reason), "replay: %s",
                 out->mem_traffic ? "the trace's mem_bytes per package"
                                  : "not measured (the trace has no mem_bytes)");
        snprintf(
            out->reason, sizeof(out->reason),
            "replay: %.120s: %s trace, %u interval%s, %u CPU%s, %u line%s skipped%s", cfg->source,
            sample_io_source(r) == SAMPLE_IO_SRC_PCTL     ? "pctl"
            : sample_io_source(r) == SAMPLE_IO_SRC_LIKWID ? "likwid"
                                                          : "perf stat",
            sample_io_n_intervals(r), plural_s(sample_io_n_intervals(r)), sample_io_n_cpus(r),
            plural_s(sample_io_n_cpus(r)), sample_io_n_skipped(r), plural_s(sample_io_n_skipped(r)),
            sample_io_has_mem_traffic(r) ? ", memory traffic per package" : "");
        sample_io_close(r);
        return 0;
}

static int replay_open(struct sensor *s, const struct sensor_config *cfg)
{
        struct sample_io_reader *r;
        int e;

        if (!cfg->source)
                return -EINVAL;
        e = sample_io_open(cfg->source, &r, NULL);
        if (e < 0)
                return e;
        s->priv = r;
        s->n_cpus = sample_io_n_cpus(r);
        s->n_packages = sample_io_n_packages(r);
        s->metrics = sample_io_metrics(r);
        s->has_energy = sample_io_has_energy(r);
        s->has_mem_traffic = sample_io_has_mem_traffic(r);
        return 0;
}

static int replay_set_targets(struct sensor *s, const struct sensor_target *targets, unsigned n)
{
        (void)targets;
        /* A trace holds the targets it was recorded with, by index. */
        return n <= sample_io_n_targets(s->priv) ? 0 : -EOPNOTSUPP;
}

static int replay_read(struct sensor *s, struct sensor_sample *out)
{
        return sample_io_read(s->priv, out);
}

static void replay_close(struct sensor *s)
{
        sample_io_close(s->priv);
        s->priv = NULL;
}

const struct sensor_ops sensor_replay_ops = {
    .name = "replay",
    .description = "a recorded trace: pctl sample CSV or likwid-perfctr -t timeline text",
    .probe = replay_probe,
    .open = replay_open,
    .set_targets = replay_set_targets,
    .read = replay_read,
    .close = replay_close,
};
