/* pbench kernels: sqrt is CPU-bound, mem streams an array larger than the last-level cache,
 * spin does sqrt work while holding one lock all threads contend on. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pbench.h"
#include "pctl/fsio.h"
#include "pctl/util.h"

#define CACHE_LINE_WORDS (64 / sizeof(uint64_t))
#define MEM_DEFAULT_BYTES (64ULL << 20)
#define MEM_MIN_BYTES (16ULL << 20)

static const char *const kernel_names[] = {
    [PBENCH_KERNEL_SQRT] = "sqrt",
    [PBENCH_KERNEL_MEM] = "mem",
    [PBENCH_KERNEL_SPIN] = "spin",
};
static const char *const scaling_names[] = {
    [PBENCH_SCALING_AMDAHL] = "amdahl",
    [PBENCH_SCALING_GUSTAFSON] = "gustafson",
};

const char *pbench_kernel_name(enum pbench_kernel k)
{
        return kernel_names[k];
}
const char *pbench_scaling_name(enum pbench_scaling s)
{
        return scaling_names[s];
}

int pbench_kernel_from_name(const char *name, enum pbench_kernel *out)
{
        for (size_t i = 0; i < ARRAY_SIZE(kernel_names); i++)
                if (strcmp(name, kernel_names[i]) == 0) {
                        *out = (enum pbench_kernel)i;
                        return 0;
                }
        return -EINVAL;
}

int pbench_scaling_from_name(const char *name, enum pbench_scaling *out)
{
        for (size_t i = 0; i < ARRAY_SIZE(scaling_names); i++)
                if (strcmp(name, scaling_names[i]) == 0) {
                        *out = (enum pbench_scaling)i;
                        return 0;
                }
        return -EINVAL;
}

/* "266240K" or "8M" or "512" from sysfs cache sizes. */
static int cache_size_parse(const char *s, uint64_t *bytes)
{
        char num[32];
        size_t len = strlen(s);
        uint64_t mult = 1, v;

        if (len == 0 || len >= sizeof(num))
                return -EINVAL;
        memcpy(num, s, len + 1);
        if (num[len - 1] == 'K')
                mult = 1024;
        else if (num[len - 1] == 'M')
                mult = 1024 * 1024;
        if (mult > 1)
                num[len - 1] = '\0';
        if (parse_u64(num, &v) < 0)
                return -EINVAL;
        *bytes = v * mult;
        return 0;
}

static uint64_t llc_bytes(void)
{
        uint64_t largest = 0;

        for (unsigned i = 0; i < 16; i++) {
                char path[96], buf[64];
                uint64_t bytes;

                snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%u/size", i);
                if (fs_read(path, buf, sizeof(buf)) < 0)
                        break;
                if (cache_size_parse(buf, &bytes) == 0 && bytes > largest)
                        largest = bytes;
        }
        return largest;
}

size_t kernel_mem_array_bytes(unsigned threads)
{
        uint64_t llc = llc_bytes();
        uint64_t bytes = llc > 0 ? 4 * llc : MEM_DEFAULT_BYTES;
        long pages = sysconf(_SC_AVPHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);

        if (bytes < MEM_DEFAULT_BYTES)
                bytes = MEM_DEFAULT_BYTES;
        /* A VM may report the host's cache; do not let N arrays take the machine's memory. */
        if (pages > 0 && page_size > 0 && threads > 0) {
                uint64_t cap = (uint64_t)pages * (uint64_t)page_size / 4 / threads;

                if (bytes > cap)
                        bytes = cap > MEM_MIN_BYTES ? cap : MEM_MIN_BYTES;
        }
        return (size_t)(bytes & ~(uint64_t)4095);
}

int kernel_state_init(struct kernel_state *ks, enum pbench_kernel kernel, size_t array_bytes)
{
        *ks = (struct kernel_state){.kernel = kernel, .acc = 1.0};
        if (kernel != PBENCH_KERNEL_MEM)
                return 0;
        ks->array =
            mmap(NULL, array_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (ks->array == MAP_FAILED) {
                ks->array = NULL;
                return -errno;
        }
        /* Huge pages where the kernel has them: a 4 KiB fault per page of a 1 GiB array takes
         * seconds in a VM. Not fatal: the kernel then falls back to small pages. */
        (void)madvise(ks->array, array_bytes, MADV_HUGEPAGE);
        /* First touch here, on the thread's own CPU, so that page faults are not timed. */
        memset(ks->array, 1, array_bytes);
        ks->array_words = array_bytes / sizeof(uint64_t);
        return 0;
}

void kernel_state_free(struct kernel_state *ks)
{
        if (ks->array)
                munmap(ks->array, ks->array_words * sizeof(uint64_t));
        ks->array = NULL;
}

static void kernel_chunk(struct kernel_state *ks, uint64_t iters)
{
        if (ks->kernel == PBENCH_KERNEL_MEM) {
                uint64_t *a = ks->array;
                size_t pos = ks->pos, words = ks->array_words;

                /* One cache line per iteration, read-modify-write. */
                for (uint64_t i = 0; i < iters; i++) {
                        a[pos] += i;
                        pos += CACHE_LINE_WORDS;
                        if (pos >= words)
                                pos = 0;
                }
                ks->pos = pos;
                ks->acc += (double)a[0];
                return;
        }
        /* A dependent chain of square roots: latency-bound, nothing to vectorise or hoist. */
        double x = ks->acc;
        for (uint64_t i = 0; i < iters; i++)
                x = sqrt(x + 1.0);
        ks->acc = x;
}

void kernel_run(struct kernel_state *ks, uint64_t iters, pthread_spinlock_t *spin,
                const atomic_int *stop)
{
        while (iters > 0 && !atomic_load_explicit(stop, memory_order_relaxed)) {
                uint64_t n = iters < PBENCH_ITERS_PER_UNIT ? iters : PBENCH_ITERS_PER_UNIT;

                if (spin)
                        pthread_spin_lock(spin);
                kernel_chunk(ks, n);
                if (spin)
                        pthread_spin_unlock(spin);
                iters -= n;
        }
}

static double thread_cpu_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int kernel_calibrate(struct kernel_state *ks, double *units_per_s)
{
        static const atomic_int never = 0;
        uint64_t iters = PBENCH_ITERS_PER_UNIT / 10;

        kernel_chunk(ks, iters); /* warm caches and the branch predictor */
        /* Double until the timing is long enough to trust (~30 ms of CPU). */
        for (;;) {
                double start_s = thread_cpu_s(), cpu_s;

                kernel_run(ks, iters, NULL, &never);
                cpu_s = thread_cpu_s() - start_s;
                if (cpu_s >= 0.03) {
                        *units_per_s = (double)iters / (double)PBENCH_ITERS_PER_UNIT / cpu_s;
                        return 0;
                }
                if (iters > (UINT64_MAX >> 2))
                        return -ERANGE;
                iters *= 2;
        }
}

void kernel_sink(const struct kernel_state *ks)
{
        static volatile double sink;

        sink += ks->acc;
}
