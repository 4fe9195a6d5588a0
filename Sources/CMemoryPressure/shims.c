#define _GNU_SOURCE
#include "CMemoryPressure.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/swap.h>
#include <sys/statfs.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <unistd.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef PR_SET_VMA_ANON_NAME
#define PR_SET_VMA_ANON_NAME 0
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef SYS_process_mrelease
#define SYS_process_mrelease 448
#endif
#include <limits.h>
#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

int mp_set_vma_anon_name(void *start, size_t length, const char *name) {
    return prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)start, (unsigned long)length,
                 (unsigned long)name);
}

int mp_pin_to_cpu(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set);
}

int mp_current_cpu(void) { return sched_getcpu(); }

static void *drain_page;
static pthread_once_t drain_once = PTHREAD_ONCE_INIT;
static void make_drain_page(void) {
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    drain_page = p == MAP_FAILED ? NULL : p;
}

int mp_drain_lru_batches(void) {
    pthread_once(&drain_once, make_drain_page);
    if (drain_page == NULL) return -1;
    cpu_set_t original;
    if (sched_getaffinity(0, sizeof(original), &original) != 0) return -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &original)) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof(one), &one) != 0) continue;
        (void)madvise(drain_page, 4096, MADV_COLD);
    }
    return sched_setaffinity(0, sizeof(original), &original);
}

int mp_accept_cloexec(int listener) { return accept4(listener, NULL, NULL, SOCK_CLOEXEC); }

int mp_peer_credentials(int fd, int *pid, unsigned int *uid, unsigned int *gid) {
    struct ucred cred;
    socklen_t length = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int mp_gettid(void) { return (int)syscall(SYS_gettid); }

int mp_eventfd(unsigned int initial) { return eventfd(initial, EFD_CLOEXEC | EFD_NONBLOCK); }

int mp_pidfd_open(pid_t pid, unsigned int flags) {
    return (int)syscall(SYS_pidfd_open, pid, flags);
}

int mp_pidfd_send_signal(int pidfd, int sig) {
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

long mp_process_madvise(int pidfd, void *start, size_t length, int advice) {
    struct iovec iov = { .iov_base = start, .iov_len = length };
    return syscall(SYS_process_madvise, pidfd, &iov, 1, advice, 0);
}

long mp_process_madvise_ranges(int pidfd, const uint64_t *starts, const uint64_t *lengths, size_t count, int advice) {
    struct iovec iov[64];
    long total = 0;
    size_t i = 0;
    while (i < count) {
        size_t n = 0;
        while (n < 64 && i + n < count) {
            iov[n].iov_base = (void *)(uintptr_t)starts[i + n];
            iov[n].iov_len = (size_t)lengths[i + n];
            n++;
        }
        long r = syscall(SYS_process_madvise, pidfd, iov, n, advice, 0);
        if (r < 0) return -1;
        total += r;
        i += n;
    }
    return total;
}

int mp_process_mrelease(int pidfd, unsigned int flags) {
    return (int)syscall(SYS_process_mrelease, pidfd, flags);
}

int mp_swapon(const char *path, int flags) { return swapon(path, flags); }
int mp_swapoff(const char *path) { return swapoff(path); }

int mp_fstatfs_type(int fd, unsigned long long *type) {
    struct statfs info;
    if (fstatfs(fd, &info) != 0) return -1;
    *type = (unsigned long long)info.f_type;
    return 0;
}

int mp_spawn_file_actions_addchdir(void *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np((posix_spawn_file_actions_t *)actions, path);
}

long mp_send_with_descriptor(int socket, const void *data, size_t length, int fd) {
    struct iovec iov = {(void *)data, length};
    struct msghdr message = {0};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    char control[CMSG_SPACE(sizeof(int))];
    if (fd >= 0) {
        memset(control, 0, sizeof control);
        message.msg_control = control;
        message.msg_controllen = sizeof control;
        struct cmsghdr *c = CMSG_FIRSTHDR(&message);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    ssize_t n;
    do {
        n = sendmsg(socket, &message, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return (long)n;
}

int mp_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}
