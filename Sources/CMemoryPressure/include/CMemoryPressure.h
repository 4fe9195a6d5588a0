#ifndef MEMORYPRESSURE_SHIMS_H
#define MEMORYPRESSURE_SHIMS_H
// What Swift cannot import directly: function-like macros (CPU_SET), constants that older
// glibc headers lack, and syscalls glibc does not wrap. Each wrapper returns what the kernel
// returned (-1 with errno set on failure); the Swift side turns that into a typed error.

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "MappedAccess.h"  // guarded reads of file mappings (SIGBUS on truncation)
#include "CgroupKill.h"    // ending every process of a cgroup (the supervisor and its guardian)

#ifdef __cplusplus
extern "C" {
#endif

// madvise(2) advice values (linux/mman.h), fixed numbers in the kernel ABI.
static const int mp_MADV_FREE = 8;
static const int mp_MADV_COLD = 20;
static const int mp_MADV_PAGEOUT = 21;

// prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, start, len, name): names an anonymous region so
// that smaps shows it as [anon:name]. Needs CONFIG_ANON_VMA_NAME (Linux 5.17+); EINVAL without.
int mp_set_vma_anon_name(void *start, size_t length, const char *name);

// Pins the calling thread to one CPU (sched_setaffinity with CPU_SET). Returns 0 or -1.
int mp_pin_to_cpu(int cpu);
// The CPU the calling thread runs on (sched_getcpu), or -1.
int mp_current_cpu(void);

// Drains the kernel's per-CPU LRU batches on every CPU the thread may run on, by pinning the
// thread to each in turn and issuing madvise(MADV_COLD) on a private page of its own (which
// drains the local batch first), then restoring the thread's affinity. A page marked MADV_FREE
// moments ago may sit in another CPU's batch, where reclaim cannot see it yet; after this it
// can. Returns 0, or -1 with errno.
int mp_drain_lru_batches(void);

// fstatfs(2)'s f_type of an open file (the file system's magic number): sys/statfs.h is not
// part of Swift's Glibc module. Returns 0, or -1 with errno.
int mp_fstatfs_type(int fd, unsigned long long *type);

// accept4(2) with SOCK_CLOEXEC; and the peer's credentials of a UNIX socket (SO_PEERCRED).
int mp_accept_cloexec(int listener);
int mp_peer_credentials(int fd, int *pid, unsigned int *uid, unsigned int *gid);
// The calling thread's id (gettid).
int mp_gettid(void);

// eventfd(2) with EFD_CLOEXEC | EFD_NONBLOCK (sys/eventfd.h is not in Swift's Glibc module).
int mp_eventfd(unsigned int initial);

// pidfd_open(2), pidfd_send_signal(2), process_madvise(2) through syscall(2).
int mp_pidfd_open(pid_t pid, unsigned int flags);
int mp_pidfd_send_signal(int pidfd, int sig);
long mp_process_madvise(int pidfd, void *start, size_t length, int advice);
// process_madvise(2) over `count` ranges (start, length) of the process, in batches of at most
// IOV_MAX; returns the bytes advised, or -1 with errno (after a partial success: -1 too).
long mp_process_madvise_ranges(int pidfd, const uint64_t *starts, const uint64_t *lengths, size_t count, int advice);
// swapon(2) and swapoff(2) (sys/swap.h is not in Swift's Glibc module).
int mp_swapon(const char *path, int flags);
int mp_swapoff(const char *path);
// process_mrelease(2) (Linux 5.15): frees the memory of a process that is being killed now.
int mp_process_mrelease(int pidfd, unsigned int flags);
// Installs, for each of `signals`, a handler that writes the signal's number as one byte to
// `fd` (the write end of a pipe): a thread reading the pipe then handles them, whichever
// thread the kernel delivered them to. Returns 0, or -1 with errno from sigaction(2).
int mp_forward_signals(int fd, const int *signals, int count);
// posix_spawn_file_actions_addchdir_np (glibc 2.29), which glibc declares only for _GNU_SOURCE:
// the child changes to `path` before exec. Returns 0 or an errno value.
int mp_spawn_file_actions_addchdir(void *actions, const char *path);
// sendmsg(2) of one packet on a UNIX socket, passing descriptor `fd` with it (SCM_RIGHTS) when
// it is not negative; MSG_NOSIGNAL. Returns the bytes sent, or -1 with errno.
long mp_send_with_descriptor(int socket, const void *data, size_t length, int fd);
// pipe2(fds, O_CLOEXEC) (glibc declares pipe2 only for _GNU_SOURCE). 0, or -1 with errno.
int mp_pipe_cloexec(int fds[2]);

#ifdef __cplusplus
}
#endif
#endif
