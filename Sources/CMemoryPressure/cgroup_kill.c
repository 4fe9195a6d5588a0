#define _GNU_SOURCE
#include "CgroupKill.h"
#include "CMemoryPressure.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/// Reads a whole file (cgroup and /proc files report size 0) into a growing buffer, NUL-ended.
/// Returns its length, or -1 with errno.
static ssize_t read_all(const char *path, char **buffer, size_t *capacity) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t length = 0;
    for (;;) {
        if (*capacity - length < 4097) {
            size_t bigger = *capacity < 8192 ? 8192 : *capacity * 2;
            char *grown = realloc(*buffer, bigger);
            if (!grown) {
                close(fd);
                errno = ENOMEM;
                return -1;
            }
            *buffer = grown;
            *capacity = bigger;
        }
        ssize_t n = read(fd, *buffer + length, *capacity - length - 1);
        if (n < 0) {
            if (errno == EINTR) continue;
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (n == 0) break;
        length += (size_t)n;
    }
    close(fd);
    (*buffer)[length] = 0;
    return (ssize_t)length;
}

/// Whether /proc/PID/cgroup puts the process in `relative` of the hierarchy of `controller`
/// ("" for v2's "0::" line).
static int in_cgroup(pid_t pid, const char *controller, const char *relative, char **buffer, size_t *capacity) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    if (read_all(path, buffer, capacity) < 0) return 0;
    size_t wanted = strlen(controller);
    for (char *line = *buffer; line && *line;) {
        char *end = strchr(line, '\n');
        if (end) *end = 0;
        char *first = strchr(line, ':');
        char *second = first ? strchr(first + 1, ':') : NULL;
        if (second) {
            int matches = 0;
            if (wanted == 0) {
                matches = first == line + 1 && line[0] == '0' && second == first + 1;
            } else {
                // The controllers field is a comma-separated list ("cpu,cpuacct").
                for (char *c = first + 1; c < second;) {
                    char *comma = memchr(c, ',', (size_t)(second - c));
                    char *stop = comma ? comma : second;
                    if ((size_t)(stop - c) == wanted && memcmp(c, controller, wanted) == 0) matches = 1;
                    c = stop + 1;
                }
            }
            if (matches) return strcmp(second + 1, relative) == 0;
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

static void sleep_ms(double ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000 + (double)ts.tv_nsec / 1e6;
}

/// The PIDs cgroup.procs lists now; the count, or -1 with errno.
static int list_processes(const char *dir, pid_t **pids, size_t *pid_capacity, char **buffer, size_t *capacity) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/cgroup.procs", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (read_all(path, buffer, capacity) < 0) return -1;
    int count = 0;
    for (char *p = *buffer; *p;) {
        char *end;
        long value = strtol(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        if (value > 0) {
            if ((size_t)count == *pid_capacity) {
                size_t bigger = *pid_capacity < 64 ? 64 : *pid_capacity * 2;
                pid_t *grown = realloc(*pids, bigger * sizeof(pid_t));
                if (!grown) {
                    errno = ENOMEM;
                    return -1;
                }
                *pids = grown;
                *pid_capacity = bigger;
            }
            (*pids)[count++] = (pid_t)value;
        }
        p = end;
    }
    return count;
}

/// One round: every process listed now, opened as a pidfd, checked, sent `sig`. The count listed.
static int signal_round(const char *dir, const char *controller, const char *relative, int sig, int release_memory,
                        struct mp_cgroup_kill *out, pid_t **pids, size_t *pid_capacity, char **buffer, size_t *capacity,
                        char **scratch, size_t *scratch_capacity) {
    int count = list_processes(dir, pids, pid_capacity, buffer, capacity);
    if (count < 0) {
        out->failed_call = "read cgroup.procs";
        out->error = errno;
        return -1;
    }
    out->rounds++;
    out->remaining = count;
    for (int i = 0; i < count; i++) {
        pid_t pid = (*pids)[i];
        if (out->spared > 0 && pid == out->spared) continue;
        int fd = mp_pidfd_open(pid, 0);
        if (fd < 0) {
            if (errno != ESRCH && !out->failed_call) {
                out->failed_call = "pidfd_open";
                out->error = errno;
            }
            continue;  // ESRCH: it has exited since the reading
        }
        // The pidfd names one process from now on; /proc says whether it is ours.
        if (!in_cgroup(pid, controller, relative, scratch, scratch_capacity)) {
            out->skipped++;
            close(fd);
            continue;
        }
        if (mp_pidfd_send_signal(fd, sig) == 0) {
            int known = 0;
            for (int j = 0; j < out->seen_count; j++) known |= out->seen[j] == (int)pid;
            if (!known) {
                if (out->seen && out->seen_count < out->seen_capacity) out->seen[out->seen_count++] = (int)pid;
                out->signalled++;
                if (release_memory && mp_process_mrelease(fd, 0) == 0) out->released++;
            }
        } else if (errno != ESRCH && !out->failed_call) {
            out->failed_call = "pidfd_send_signal";
            out->error = errno;
        }
        close(fd);
    }
    return count;
}

static void reset(struct mp_cgroup_kill *out) {
    int *seen = out->seen;
    int seen_count = out->seen_count, seen_capacity = out->seen_capacity, spared = out->spared;
    memset(out, 0, sizeof *out);
    out->spared = spared;
    out->seen = seen;
    out->seen_count = seen_count;
    out->seen_capacity = seen_capacity;
}

int mp_cgroup_signal_all(const char *dir, const char *controller, const char *relative, int sig, struct mp_cgroup_kill *out) {
    reset(out);
    char *buffer = NULL, *scratch = NULL;
    size_t capacity = 0, scratch_capacity = 0, pid_capacity = 0;
    pid_t *pids = NULL;
    int count = signal_round(dir, controller, relative, sig, 0, out, &pids, &pid_capacity, &buffer, &capacity, &scratch, &scratch_capacity);
    free(buffer);
    free(scratch);
    free(pids);
    return count < 0 || out->failed_call ? -1 : 0;
}

int mp_cgroup_kill_all(const char *dir, const char *controller, const char *relative, int release_memory, int max_rounds,
                       struct mp_cgroup_kill *out) {
    reset(out);
    char path[4096];
    if (controller[0] == 0 && snprintf(path, sizeof path, "%s/cgroup.kill", dir) < (int)sizeof path) {
        // v2: the kernel kills every process of the group, forks in flight included.
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (write(fd, "1", 1) != 1) {
                out->failed_call = "write cgroup.kill";
                out->error = errno;
            }
            close(fd);
        }
    }
    char *buffer = NULL, *scratch = NULL;
    size_t capacity = 0, scratch_capacity = 0, pid_capacity = 0;
    pid_t *pids = NULL;
    int result = -1;
    if (max_rounds < 1) max_rounds = 1;
    for (int round = 0; round < max_rounds; round++) {
        int count = signal_round(dir, controller, relative, SIGKILL, release_memory, out, &pids, &pid_capacity, &buffer, &capacity,
                                 &scratch, &scratch_capacity);
        if (count < 0) goto done;
        if (count == 0) {
            result = 0;
            goto done;
        }
        // The killed leave the list as they exit; what is still listed after a short wait gets
        // another round (a process forked after the reading, or one not yet signalled).
        if (round + 1 < max_rounds && mp_cgroup_wait_empty(dir, 20 * (round + 1)) == 0) {
            out->remaining = 0;
            result = 0;
            goto done;
        }
    }
    result = out->remaining == 0 ? 0 : -1;
done:
    free(buffer);
    free(scratch);
    free(pids);
    return result;
}

int mp_cgroup_wait_empty(const char *dir, int timeout_ms) {
    char *buffer = NULL;
    size_t capacity = 0, pid_capacity = 0;
    pid_t *pids = NULL;
    double deadline = now_ms() + timeout_ms;
    double pause = 0.5;
    int result;
    for (;;) {
        int count = list_processes(dir, &pids, &pid_capacity, &buffer, &capacity);
        if (count < 0) {
            result = -1;
            break;
        }
        if (count == 0) {
            result = 0;
            break;
        }
        if (now_ms() >= deadline) {
            result = 1;
            break;
        }
        sleep_ms(pause);
        if (pause < 8) pause *= 2;
    }
    int saved = errno;
    free(buffer);
    free(pids);
    errno = saved;
    return result;
}
