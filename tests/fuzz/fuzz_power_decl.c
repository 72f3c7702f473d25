/* The [power] declaration (lib/power_decl.c) as `pctl model table --power FILE` reads it:
 * power_decl_load takes only a path. An accepted declaration must build a model. */
#include <errno.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "pctl/power_decl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct power_decl d = {};
        struct model_power pm;
        char err[512] = "";
        const char *path = fuzz_file(data, size);
        int fds = fuzz_fds_mark();
        int r;

        if (!path)
                abort();
        r = power_decl_load(path, &d, err, sizeof(err));
        if (r < 0) {
                if (!err[0] || (r != -EINVAL && r != -ENODATA))
                        abort();
                fuzz_check_fds(fds);
                return 0;
        }
        if (power_decl_to_model(&d, 3000000, &pm) < 0)
                abort();
        fuzz_check_fds(fds);
        return 0;
}
