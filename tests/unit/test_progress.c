/* Progress markers of a real process (include/pctl/progress.h): a child marks units through
 * the public header, pctld's reader sees them; a counter that is not the process's (another
 * start time, another owner, not a counter) is refused. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pctl_test.h"
#define PCTL_PROGRESS_READER
#include "pctl/progress.h"

/* The child marks `first` units, says so, waits for a byte, marks `more`, says so, waits,
 * closes its counter, says so and waits to be killed. */
static pid_t marking_child(int to_child[2], int from_child[2], uint64_t first, uint64_t more)
{
        pid_t pid;
        char c = 0;

        assert_int_equal(pipe(to_child), 0);
        assert_int_equal(pipe(from_child), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (pctl_progress_open() < 0)
                        _exit(1);
                pctl_progress_mark(first);
                (void)!write(from_child[1], &c, 1);
                (void)!read(to_child[0], &c, 1);
                pctl_progress_mark(more);
                (void)!write(from_child[1], &c, 1);
                (void)!read(to_child[0], &c, 1);
                pctl_progress_close();
                (void)!write(from_child[1], &c, 1);
                pause();
                _exit(0);
        }
        return pid;
}

static void reader_sees_what_the_app_marks(void **state)
{
        int to_child[2], from_child[2];
        uint64_t units = 99;
        char c = 0;
        pid_t pid;

        pid = marking_child(to_child, from_child, 5, 10);
        assert_int_equal(read(from_child[0], &c, 1), 1);
        assert_int_equal(progress_read(pid, &units), 0);
        assert_int_equal(units, 5);
        assert_int_equal(write(to_child[1], &c, 1), 1);
        assert_int_equal(read(from_child[0], &c, 1), 1);
        assert_int_equal(progress_read(pid, &units), 0);
        assert_int_equal(units, 15);
        assert_int_equal(write(to_child[1], &c, 1), 1);
        assert_int_equal(read(from_child[0], &c, 1), 1);
        /* Closed: no counter, and the output untouched. */
        units = 77;
        assert_int_equal(progress_read(pid, &units), -ENOENT);
        assert_int_equal(units, 77);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

/* A counter left under this process's pid by an earlier process (another start time), and
 * a file that is no counter. */
static void stale_or_foreign_counters_are_refused(void **state)
{
        char path[64];
        struct pctl_progress_page pg = {
            .magic = PCTL_PROGRESS_MAGIC, .start_ticks = 1, .units = 42};
        uint64_t units = 7;
        int fd;

        snprintf(path, sizeof(path), PCTL_PROGRESS_PATH_FMT, (long)getpid());
        assert_int_equal(progress_read(getpid(), &units), -ENOENT);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, &pg, sizeof(pg)), sizeof(pg));
        assert_int_equal(progress_read(getpid(), &units), -ESTALE);
        /* Another user's file under this pid's name (root can make one). */
        if (geteuid() == 0) {
                assert_int_equal(fchown(fd, 65534, (gid_t)-1), 0);
                assert_int_equal(progress_read(getpid(), &units), -EPERM);
                assert_int_equal(fchown(fd, 0, (gid_t)-1), 0);
        }
        assert_int_equal(ftruncate(fd, 0), 0);
        assert_int_equal(write(fd, "not a counter at all, but long enough", 37), 37);
        assert_int_equal(progress_read(getpid(), &units), -EBADMSG);
        assert_int_equal(units, 7);
        close(fd);
        unlink(path);
        /* The app's own start time, as the header records it: accepted. */
        assert_int_equal(pctl_progress_open(), 0);
        pctl_progress_mark(3);
        assert_int_equal(progress_read(getpid(), &units), 0);
        assert_int_equal(units, 3);
        pctl_progress_close();
}

static void page_parse_checks_size_magic_and_start(void **state)
{
        struct pctl_progress_page pg = {.magic = PCTL_PROGRESS_MAGIC, .start_ticks = 9, .units = 4};
        uint64_t units = 0;

        assert_int_equal(progress_page_parse(&pg, sizeof(pg) - 1, 9, &units), -EBADMSG);
        assert_int_equal(progress_page_parse(&pg, sizeof(pg), 8, &units), -ESTALE);
        pg.magic ^= 1;
        assert_int_equal(progress_page_parse(&pg, sizeof(pg), 9, &units), -EBADMSG);
        assert_int_equal(units, 0);
        pg.magic ^= 1;
        assert_int_equal(progress_page_parse(&pg, sizeof(pg), 9, &units), 0);
        assert_int_equal(units, 4);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(reader_sees_what_the_app_marks),
            cmocka_unit_test(stale_or_foreign_counters_are_refused),
            cmocka_unit_test(page_parse_checks_size_magic_and_start),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
