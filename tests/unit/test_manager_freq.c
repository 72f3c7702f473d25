/* pctld's manager and the frequency domains, on the model machine: a domain is given back as
 * soon as its last app leaves (not only when pctld stops), and a write that keeps failing is
 * retried with back-off and logged once, not at every decision. The failures come from a
 * model-machine actuator whose set_freq answers with a chosen errno. */
#define _GNU_SOURCE /* memfd_create */
#include "pctl_test.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pctl/manager.h"
#include "pctl/platform.h"
#include "pctl/policy.h"
#include "pctl/sim.h"
#include "pctl/util.h"

/* Two packages (two frequency domains) of 1200-2600 MHz; the app runs long enough. */
static const char scenario[] = "[machine]\npreset = xeon-e5-2630v2x2\n"
                               "[app crunch]\ninstructions = 1e14\np = 0.9\n";

static int fail_err;         /* what set_freq answers; 0: the model machine's answer */
static int fail_restore_err; /* the same for restore_freq */
static unsigned set_calls, restore_calls;
static struct actuator_ops failing_ops;

static int failing_set_freq(struct actuator *a, unsigned domain, unsigned freq_khz)
{
        set_calls++;
        if (fail_err)
                return fail_err;
        return sim_actuator_ops.set_freq(a, domain, freq_khz);
}

static int failing_restore_freq(struct actuator *a, unsigned domain)
{
        restore_calls++;
        if (fail_restore_err)
                return fail_restore_err;
        return sim_actuator_ops.restore_freq(a, domain);
}

struct rig {
        char scen[64];
        struct platform *pf;
        struct manager *m;
};

/* The manager on the model machine, its app (SIM_PID_BASE) adopted on 4 cores, at most
 * 1200 MHz: a frequency the machine does not start at, so that pctld changes it. */
static void rig_open(struct rig *r, bool failing)
{
        struct platform_options po = {.actuator = {.dvfs = true}};
        struct manager_options mo = {.delta_i_rate = NAN};
        struct policy pol = {.objective = OBJECTIVE_PERFORMANCE,
                             .min_cores = 4,
                             .max_cores = 4,
                             .min_freq_mhz = 1200,
                             .max_freq_mhz = 1200,
                             .max_slowdown = INFINITY,
                             .weight = 1};
        struct policy_set set = {.v = calloc(1, sizeof(pol)), .n = 1};
        char err[640], spec[96];

        assert_non_null(set.v);
        snprintf(pol.name, sizeof(pol.name), "slow");
        set.v[0] = pol;
        pctl_test_temp_file(r->scen, sizeof(r->scen), scenario);
        snprintf(spec, sizeof(spec), "sim:%s", r->scen);
        po.spec = spec;
        if (platform_open(&po, &r->pf, err, sizeof(err)) != 0)
                fail_msg("platform_open: %s", err);
        assert_true(r->pf->actuator->can_set_freq);
        if (failing) {
                failing_ops = *r->pf->actuator_ops;
                failing_ops.set_freq = failing_set_freq;
                failing_ops.restore_freq = failing_restore_freq;
                r->pf->actuator_ops = &failing_ops;
                /* As scaling_cur_freq often reads: a frequency between the table's steps. */
                for (unsigned d = 0; d < r->pf->actuator->n_domains; d++)
                        r->pf->actuator->domains[d].cur_khz = 2500000;
        }
        config_init(&mo.conf);
        mo.platform = r->pf;
        mo.dvfs = true;
        assert_int_equal(manager_new(&mo, &set, &r->m), 0);
        sim_step(r->pf->sim, 0);
        if (manager_adopt(r->m, SIM_PID_BASE, "slow", err, sizeof(err)) != 0)
                fail_msg("adopt: %s", err);
}

static void rig_close(struct rig *r)
{
        manager_free(r->m);
        platform_close(r->pf);
        unlink(r->scen);
}

/* Runs seconds of virtual time: ten samples a second, a decision each second. */
static void run(struct rig *r, unsigned seconds)
{
        for (unsigned t = 0; t < seconds * 10; t++) {
                platform_advance(r->pf, 100 * NSEC_PER_MSEC);
                manager_sample(r->m);
                if (t % 10 == 9)
                        manager_decide(r->m);
        }
}

static void domain_given_back_when_last_app_leaves(void **state)
{
        struct rig r;
        unsigned orig[2], lowered = 0;
        char err[256];

        fail_err = 0;
        rig_open(&r, false);
        for (unsigned d = 0; d < 2; d++)
                orig[d] = r.pf->actuator->domains[d].cur_khz;
        assert_true(orig[0] > 1200000);
        run(&r, 30);
        for (unsigned d = 0; d < 2; d++)
                lowered += r.pf->actuator->domains[d].cur_khz == 1200000;
        if (lowered == 0)
                fail_msg("the app's domain was never set to 1200 MHz (%u, %u kHz)",
                         r.pf->actuator->domains[0].cur_khz, r.pf->actuator->domains[1].cur_khz);
        assert_int_equal(manager_release(r.m, SIM_PID_BASE, err, sizeof(err)), 0);
        /* Given back at once, with pctld still running. */
        for (unsigned d = 0; d < 2; d++)
                if (r.pf->actuator->domains[d].cur_khz != orig[d])
                        fail_msg("domain %u runs at %u kHz after its last app left, not %u", d,
                                 r.pf->actuator->domains[d].cur_khz, orig[d]);
        rig_close(&r);
}

/* How many times what fd 2 received (into memfd) holds needle. */
static unsigned count_logged(int memfd, const char *needle)
{
        char *buf;
        off_t size = lseek(memfd, 0, SEEK_END);
        unsigned n = 0;

        buf = calloc(1, (size_t)size + 1);
        assert_non_null(buf);
        assert_int_equal(pread(memfd, buf, (size_t)size, 0), size);
        for (char *p = buf; (p = strstr(p, needle)); p++)
                n++;
        free(buf);
        return n;
}

/* Starts capturing what is logged (fd 2) into a memfd; returns it, *saved the old fd 2. */
static int capture_start(int *saved)
{
        int memfd = memfd_create("stderr", 0);

        *saved = dup(2);
        assert_true(memfd >= 0 && *saved >= 0);
        fflush(stderr);
        assert_int_equal(dup2(memfd, 2), 2);
        return memfd;
}

static void capture_stop(int saved)
{
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
}

/* Ten minutes of decisions against a domain whose writes fail with err: how many attempts,
 * and how many lines say it failed. */
static void failing_for_ten_minutes(int err, unsigned *attempts, unsigned *logged)
{
        struct rig r;
        int saved, memfd;

        fail_err = err;
        set_calls = 0;
        rig_open(&r, true);
        memfd = capture_start(&saved);
        run(&r, 600);
        capture_stop(saved);
        *attempts = set_calls;
        *logged = count_logged(memfd, "Failed to set frequency domain");
        close(memfd);
        rig_close(&r);
        fail_err = 0;
}

static void failing_write_backs_off_and_is_logged_once(void **state)
{
        unsigned attempts, logged;

        failing_for_ten_minutes(-EBUSY, &attempts, &logged);
        printf("EBUSY: %u attempts, %u lines in 600 s of 1 s decisions\n", attempts, logged);
        assert_true(attempts >= 1 && attempts <= 20);
        assert_int_equal(logged, 1);
        /* Permanent for the domain: tried once, one line. */
        failing_for_ten_minutes(-EACCES, &attempts, &logged);
        printf("EACCES: %u attempts, %u lines\n", attempts, logged);
        assert_int_equal(attempts, 1);
        assert_int_equal(logged, 1);
}

/* The app leaves; giving its domain back fails (EBUSY) for ten minutes, then works: tried at
 * 1, 2, 4 ... 64 s apart (15 times, not 600), said once when it fails and once when it
 * works. */
static void failing_give_back_backs_off_and_is_logged_once(void **state)
{
        struct rig r;
        char err[256];
        int saved, memfd;
        unsigned lowered = 0, failed_lines;

        fail_err = 0;
        rig_open(&r, true);
        run(&r, 30);
        for (unsigned d = 0; d < 2; d++)
                lowered += r.pf->actuator->domains[d].cur_khz == 1200000;
        assert_int_equal(lowered, 1);
        fail_restore_err = -EBUSY;
        restore_calls = 0;
        memfd = capture_start(&saved);
        assert_int_equal(manager_release(r.m, SIM_PID_BASE, err, sizeof(err)), 0);
        run(&r, 600);
        fail_restore_err = 0;
        run(&r, 65);
        capture_stop(saved);
        failed_lines = count_logged(memfd, "Failed to give back frequency domain");
        printf("give-back failing 600 s: %u attempts, %u lines; recovered: %u\n", restore_calls,
               failed_lines, count_logged(memfd, "given back, after"));
        assert_true(restore_calls >= 10 && restore_calls <= 20);
        assert_int_equal(failed_lines, 1);
        assert_int_equal(count_logged(memfd, "given back, after"), 1);
        for (unsigned d = 0; d < 2; d++)
                assert_int_not_equal(r.pf->actuator->domains[d].cur_khz, 1200000);
        close(memfd);
        rig_close(&r);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(domain_given_back_when_last_app_leaves),
    cmocka_unit_test(failing_write_backs_off_and_is_logged_once),
    cmocka_unit_test(failing_give_back_backs_off_and_is_logged_once),
};

PCTL_TEST_MAIN(tests)
