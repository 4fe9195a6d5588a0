// mempressure-guard: the supervisor's guardian. It outlives a supervisor that dies without
// shutting down (SIGKILL, a crash), and then gives back what the kernel holds for it:
//
//   1. the kernel's OOM killer of every device memory cgroup (cgroup v1 `oom_kill_disable`,
//      which jetsam sets so that a task at the limit waits for its decision) is let act again
//      at once, so that no task waits at the limit with nobody watching;
//   2. every process of every app is ended — through its cgroup (each PID opened as a pidfd and
//      checked to be in the app's cgroup before SIGKILL: mp_cgroup_kill_all), or, for apps
//      without a cgroup, through the pidfd the supervisor passed with the app's process group —
//      and frozen groups are thawed so that their processes can die;
//   3. the app cgroups and the device cgroups are removed;
//   4. what it did is written to `guardian-report.txt` in the supervisor's runtime directory,
//      where the next supervisor started on that directory finds it and says what was cleaned.
//
//   mempressure-guard            (started by the supervisor, never by hand)
//
// Descriptor 3 is its end of a SOCK_SEQPACKET socket pair; the supervisor keeps the other end
// (close-on-exec: no app inherits it). Descriptor 4 is the runtime directory (O_DIRECTORY).
// Messages, one per packet:
//   group CONTROLLER HIERARCHY RELATIVE   a device cgroup ("-" as controller for cgroup v2)
//   app PGID                             an app without a cgroup; SCM_RIGHTS carries its pidfd
//   gone PGID                            that app has ended (its pidfd is closed)
//   private PATH                         the runtime directory (descriptor 4) was made for this
//                                        run alone: no supervisor will start on it again, so its
//                                        files and itself are removed too, and the report goes to
//                                        standard error instead
//   bye                                  the supervisor shut down cleanly: exit, doing nothing
// When the socket reports end of file (or an error) without `bye`, the supervisor is gone: the
// guardian cleans up as above and exits 0 (1 if something could not be cleaned).
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "CMemoryPressure.h"

#define MAX_GROUPS 16
#define MAX_APPS 4096

struct group {
    char controller[32];  // "" for v2
    char hierarchy[1024];
    char relative[1024];
};

struct app {
    int pgid;
    int pidfd;
};

static struct group groups[MAX_GROUPS];
static int group_count;
static struct app apps[MAX_APPS];
static int app_count;
static int directory_fd = 4;
static char private_directory[4096];
static char report[65536];
static size_t report_length;
static int failures;

static void note(const char *format, ...) {
    if (report_length >= sizeof report - 1) return;
    va_list args;
    va_start(args, format);
    int n = vsnprintf(report + report_length, sizeof report - report_length, format, args);
    va_end(args);
    if (n > 0) report_length += (size_t)n < sizeof report - report_length ? (size_t)n : sizeof report - report_length - 1;
}

static int write_text(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    int saved = errno;
    close(fd);
    errno = saved;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

static void take_message(const char *text, int passed_fd) {
    if (strncmp(text, "group ", 6) == 0 && group_count < MAX_GROUPS) {
        struct group *g = &groups[group_count];
        char controller[32];
        if (sscanf(text + 6, "%31s %1023s %1023s", controller, g->hierarchy, g->relative) == 3) {
            strcpy(g->controller, strcmp(controller, "-") == 0 ? "" : controller);
            group_count++;
        }
    } else if (strncmp(text, "app ", 4) == 0 && passed_fd >= 0) {
        if (app_count < MAX_APPS) {
            apps[app_count].pgid = atoi(text + 4);
            apps[app_count].pidfd = passed_fd;
            app_count++;
            return;
        }
    } else if (strncmp(text, "private ", 8) == 0) {
        snprintf(private_directory, sizeof private_directory, "%s", text + 8);
    } else if (strncmp(text, "gone ", 5) == 0) {
        int pgid = atoi(text + 5);
        for (int i = 0; i < app_count; i++) {
            if (apps[i].pgid == pgid) {
                close(apps[i].pidfd);
                apps[i] = apps[--app_count];
                break;
            }
        }
    }
    if (passed_fd >= 0) close(passed_fd);
}

/// The kernel's OOM killer of each v1 memory group: let act again (oom_kill_disable 0).
static void release_holds(void) {
    for (int i = 0; i < group_count; i++) {
        if (strcmp(groups[i].controller, "memory") != 0) continue;
        char path[2200];
        snprintf(path, sizeof path, "%s%s/memory.oom_control", groups[i].hierarchy, groups[i].relative);
        if (access(path, F_OK) != 0) continue;
        if (write_text(path, "0") == 0) {
            note("released the kernel's OOM killer of %s%s (oom_kill_disable 0)\n", groups[i].hierarchy, groups[i].relative);
        } else {
            note("could not release the kernel's OOM killer of %s%s: %s\n", groups[i].hierarchy, groups[i].relative, strerror(errno));
            failures++;
        }
    }
}

/// Calls `each` with every app group (child directory) of group `g`.
static void for_each_app(struct group *g, void (*each)(struct group *, const char *name, const char *dir, const char *relative)) {
    char base[2200];
    snprintf(base, sizeof base, "%s%s", g->hierarchy, g->relative);
    DIR *d = opendir(base);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
        char dir[2600], relative[1400];
        snprintf(dir, sizeof dir, "%s/%s", base, e->d_name);
        snprintf(relative, sizeof relative, "%s/%s", g->relative, e->d_name);
        each(g, e->d_name, dir, relative);
    }
    closedir(d);
}

/// Whether a v1 memory group is listed: its apps' processes are then killed through it (the
/// freezer groups hold the same processes: they are only thawed).
static int has_memory_group(void) {
    for (int i = 0; i < group_count; i++) if (strcmp(groups[i].controller, "memory") == 0) return 1;
    return 0;
}

static void kill_app(struct group *g, const char *name, const char *dir, const char *relative) {
    if (strcmp(g->controller, "freezer") == 0 && has_memory_group()) return;
    struct mp_cgroup_kill out;
    memset(&out, 0, sizeof out);
    mp_cgroup_kill_all(dir, g->controller, relative, 1, 1, &out);
    if (out.signalled > 0) note("ended %d process(es) of app %s (cgroup %s)\n", out.signalled, name, dir);
    if (out.failed_call && out.error != ENOENT) {
        note("app %s: %s failed: %s\n", name, out.failed_call, strerror(out.error));
        failures++;
    }
}

static void thaw_app(struct group *g, const char *name, const char *dir, const char *relative) {
    (void)relative;
    char path[2700];
    if (strcmp(g->controller, "freezer") == 0) {
        snprintf(path, sizeof path, "%s/freezer.state", dir);
        char state[32] = {0};
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (read(fd, state, sizeof state - 1) < 0) state[0] = 0;
            close(fd);
        }
        if (strncmp(state, "THAWED", 6) != 0) {
            if (write_text(path, "THAWED") == 0) {
                note("thawed app %s (%s)\n", name, dir);
            } else {
                note("could not thaw app %s (%s): %s\n", name, dir, strerror(errno));
                failures++;
            }
        }
    } else if (g->controller[0] == 0) {
        snprintf(path, sizeof path, "%s/cgroup.freeze", dir);
        if (access(path, F_OK) == 0) write_text(path, "0");
    }
}

static void finish_app(struct group *g, const char *name, const char *dir, const char *relative) {
    if (!(strcmp(g->controller, "freezer") == 0 && has_memory_group())) {
        struct mp_cgroup_kill out;
        memset(&out, 0, sizeof out);
        // Those still listed are mostly dying already (signalled above): not counted again.
        mp_cgroup_kill_all(dir, g->controller, relative, 1, 8, &out);
    }
    int empty = mp_cgroup_wait_empty(dir, 10000);
    if (empty == 1) {
        note("app %s: processes still in %s 10 s after SIGKILL\n", name, dir);
        failures++;
        return;
    }
    if (rmdir(dir) == 0) {
        note("removed cgroup %s\n", dir);
    } else if (errno != ENOENT) {
        note("could not remove cgroup %s: %s\n", dir, strerror(errno));
        failures++;
    }
}

static void clean_up(void) {
    // First what makes a task wait: the held OOM killer.
    release_holds();
    for (int i = 0; i < group_count; i++) for_each_app(&groups[i], kill_app);
    for (int i = 0; i < group_count; i++) for_each_app(&groups[i], thaw_app);
    for (int i = 0; i < group_count; i++) for_each_app(&groups[i], finish_app);
    for (int i = 0; i < group_count; i++) {
        char dir[2200];
        snprintf(dir, sizeof dir, "%s%s", groups[i].hierarchy, groups[i].relative);
        if (rmdir(dir) == 0) {
            note("removed cgroup %s\n", dir);
        } else if (errno != ENOENT) {
            note("could not remove cgroup %s: %s\n", dir, strerror(errno));
            failures++;
        }
    }
    // Apps without a cgroup: the process group, while its leader (checked alive through the
    // pidfd) pins the group's number; then the leader through its pidfd.
    for (int i = 0; i < app_count; i++) {
        if (mp_pidfd_send_signal(apps[i].pidfd, 0) != 0) continue;  // gone already
        kill(-apps[i].pgid, SIGKILL);
        if (mp_pidfd_send_signal(apps[i].pidfd, SIGKILL) == 0) note("ended the process group %d of an app\n", apps[i].pgid);
    }
}

/// A private runtime directory: its files (sockets, the lock, output files, an old report) and
/// then itself.
static void remove_private_directory(void) {
    int fd = dup(directory_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.' && (e->d_name[1] == 0 || (e->d_name[1] == '.' && e->d_name[2] == 0))) continue;
            if (unlinkat(directory_fd, e->d_name, 0) != 0 && errno != ENOENT) {
                note("could not remove %s/%s: %s\n", private_directory, e->d_name, strerror(errno));
                failures++;
            }
        }
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    if (rmdir(private_directory) == 0) {
        note("removed the runtime directory %s\n", private_directory);
    } else if (errno != ENOENT) {
        note("could not remove the runtime directory %s: %s\n", private_directory, strerror(errno));
        failures++;
    }
}

static void write_report(void) {
    if (report_length == 0) note("nothing was left to clean\n");
    if (private_directory[0]) {
        // Nobody will look in the directory: whoever watched the supervisor may read this.
        fprintf(stderr, "mempressure-guard: the supervisor died; cleaned up after it:\n%.*s", (int)report_length, report);
        return;
    }
    unlinkat(directory_fd, "guardian-report.txt", 0);
    int fd = openat(directory_fd, "guardian-report.txt", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    ssize_t n = write(fd, report, report_length);
    (void)n;
    close(fd);
}

int main(void) {
    // Not the terminal's: a Ctrl-C meant for the supervisor must not take the guardian first.
    setsid();
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    // The kernel's OOM killer never picks the watcher (root only; otherwise it stays as it is).
    write_text("/proc/self/oom_score_adj", "-1000");
    struct stat st;
    if (fstat(3, &st) != 0 || !S_ISSOCK(st.st_mode) || fstat(4, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "mempressure-guard: started by the supervisor only (descriptors 3 and 4)\n");
        return 2;
    }
    for (;;) {
        char text[4096];
        char control[CMSG_SPACE(sizeof(int))];
        struct iovec iov = {text, sizeof text - 1};
        struct msghdr message = {0};
        message.msg_iov = &iov;
        message.msg_iovlen = 1;
        message.msg_control = control;
        message.msg_controllen = sizeof control;
        ssize_t n = recvmsg(3, &message, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // end of file or an error: the supervisor is gone
        text[n] = 0;
        int passed = -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) memcpy(&passed, CMSG_DATA(c), sizeof passed);
        }
        if (strcmp(text, "bye") == 0) {
            if (passed >= 0) close(passed);
            return 0;
        }
        take_message(text, passed);
    }
    clean_up();
    if (private_directory[0]) remove_private_directory();
    write_report();
    return failures ? 1 : 0;
}
