#define _GNU_SOURCE
#include "CMemoryPressure.h"

#include <errno.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
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
