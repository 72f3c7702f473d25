/* The Slurm plugin's summary (pctl_spank(8)): step_report_add takes pctld's replies to
 * {"cmd":"report"} as the plugin parses them, one per line of the input (a step's tasks), and
 * step_report_format writes the line that goes to the job's stderr. Whatever the replies say,
 * the line is one line of printable text, terminated within its buffer. */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "pctl/step_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        int mark = fuzz_fds_mark();
        char *text = fuzz_text(data, size), *line, *save = NULL;
        char out[512], small[40];
        struct step_report s;

        if (!text)
                return 0;
        step_report_init(&s);
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                struct json_object *reply = json_tokener_parse(line);

                if (step_report_add(&s, reply) < 0 && reply &&
                    json_object_is_type(reply, json_type_object))
                        abort(); /* an object is always a report, however incomplete */
                json_object_put(reply);
        }
        memset(out, 'x', sizeof(out));
        step_report_format(&s, out, sizeof(out));
        if (!memchr(out, '\0', sizeof(out)))
                abort();
        for (const char *p = out; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        abort();
        step_report_format(&s, small, sizeof(small));
        if (!memchr(small, '\0', sizeof(small)))
                abort();
        free(text);
        fuzz_check_fds(mark);
        return 0;
}
