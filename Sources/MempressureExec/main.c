// mempressure-exec: puts itself into cgroups, then becomes the program.
//
//   mempressure-exec [--cgroup DIR]... -- PROGRAM [ARG]...
//
// For each DIR it writes its own PID to DIR/cgroup.procs, so that the program is charged to and
// frozen with those cgroups from its first instruction; then it execs PROGRAM (searching PATH
// when it has no slash). The supervisor spawns this and keeps the PID and a pidfd: after exec
// they are the program's. Exit status on failure (nothing was exec'd): 125 a cgroup could not be
// joined, 126 PROGRAM is not executable, 127 PROGRAM does not exist; a one-line reason goes to
// standard error, prefixed "mempressure-exec:".
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int join(const char *dir) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/cgroup.procs", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    ssize_t w = write(fd, pid, (size_t)n);
    int saved = errno;
    close(fd);
    errno = saved;
    return w == n ? 0 : -1;
}

int main(int argc, char **argv) {
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "--cgroup") == 0 && i + 1 < argc) {
            if (join(argv[i + 1]) != 0) {
                fprintf(stderr, "mempressure-exec: cannot join cgroup %s: %s\n", argv[i + 1], strerror(errno));
                return 125;
            }
            i++;
            continue;
        }
        fprintf(stderr, "mempressure-exec: unexpected argument '%s' (usage: mempressure-exec [--cgroup DIR]... -- PROGRAM [ARG]...)\n", argv[i]);
        return 125;
    }
    if (i >= argc) {
        fprintf(stderr, "mempressure-exec: no program given\n");
        return 125;
    }
    execvp(argv[i], &argv[i]);
    int e = errno;
    fprintf(stderr, "mempressure-exec: cannot run %s: %s\n", argv[i], strerror(e));
    return (e == ENOENT || e == ENOTDIR) ? 127 : 126;
}
