/* pctl.conf: config_load (the daemon's path, through stdio) and config_load_string (the same
 * parser over text) must agree on any input without a NUL byte, and a refused file must come
 * with at least one problem and leave the output untouched. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "pctl/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct config_problems from_file = {}, from_text = {};
        struct config c_file, c_text, untouched;
        const char *path = fuzz_file(data, size);
        char *text = fuzz_text(data, size);
        int fds = fuzz_fds_mark();
        struct model_power pm;
        bool is_config;
        int r_file, r_text;

        if (!path || !text)
                abort();
        memset(&c_file, 0x5a, sizeof(c_file));
        untouched = c_file;
        r_file = config_load(path, &c_file, &from_file);
        r_text = config_load_string(text, "fuzz.conf", &c_text, &from_text);
        if (r_file == -EINVAL && (from_file.n == 0 || memcmp(&c_file, &untouched, sizeof(c_file))))
                abort();
        if (r_file != 0 && r_file != -EINVAL)
                abort();
        if (!memchr(data, '\0', size) && (r_file != r_text || from_file.n != from_text.n))
                abort();
        if (r_file == 0 && c_file.has_power)
                (void)power_decl_to_model(&c_file.power, 3000000, &pm);
        /* The file reader refuses what is no text (a NUL byte), which the string never sees. */
        r_text = config_detect(path, &is_config);
        if (r_text < 0 && !(r_text == -EINVAL && memchr(data, '\0', size)))
                abort();
        config_problems_clear(&from_file);
        config_problems_clear(&from_text);
        free(text);
        fuzz_check_fds(fds);
        return 0;
}
