// Ending every process of a cgroup: the one implementation, used by the supervisor (through
// LinuxSystem's `CgroupDirectory`) and by its guardian (mempressure-guard), which must do it
// after the supervisor has died.
#ifndef MP_CGROUP_KILL_H
#define MP_CGROUP_KILL_H

#include <stddef.h>

/// What `mp_cgroup_kill_all` did.
struct mp_cgroup_kill {
    /// Processes sent SIGKILL for the first time (a PID already in `seen` on entry is signalled
    /// again if still listed, but not counted).
    int signalled;
    /// Of those, whose memory process_mrelease freed at once.
    int released;
    /// Rounds of reading cgroup.procs (a process forked between a reading and the kills shows
    /// in the next round).
    int rounds;
    /// Processes the last reading still listed (0: the cgroup was empty).
    int remaining;
    /// Listed processes skipped because, once a pidfd was open on them, /proc said they were not
    /// in this cgroup (their PID had been reused by another process meanwhile).
    int skipped;
    /// NULL, or the call that failed ("open cgroup.procs", "pidfd_open", ...) and its errno.
    const char *failed_call;
    int error;
    /// Optional, set by the caller: the PIDs signalled so far (carried from one call to the
    /// next so that a process still exiting is counted once), `seen_count` of `seen_capacity`.
    int *seen;
    int seen_count;
    int seen_capacity;
    /// Optional, set by the caller: a PID not to signal even if listed (0: none), such as an
    /// app's main process that the caller signals itself afterwards. Only meaningful with one
    /// round: a spared process that stays listed counts as `remaining`.
    int spared;
};

/// Sends SIGKILL to every process in the cgroup directory `dir`, never by PID number alone: each
/// listed PID is opened as a pidfd, its membership checked in /proc/PID/cgroup (the line of
/// `controller`, or the v2 line "0::" when `controller` is ""; its path must equal `relative`,
/// the group's path inside its hierarchy), and only then signalled through the pidfd. With
/// `release_memory`, process_mrelease frees each victim's memory at once. Repeats until
/// cgroup.procs lists nothing it has not signalled, at most `max_rounds` times (processes with
/// SIGKILL pending cannot fork: the rounds end). On cgroup v2 with `cgroup.kill` (Linux 5.14),
/// the kernel kills the group first. Returns 0 when the last reading listed no live process
/// that was not signalled, else -1 (see `out`). The caller sets `out`'s `seen` fields (or
/// zeroes them) before the call; the others are set here.
int mp_cgroup_kill_all(const char *dir, const char *controller, const char *relative, int release_memory, int max_rounds,
                       struct mp_cgroup_kill *out);

/// One round of `mp_cgroup_kill_all` with another signal (SIGSTOP, SIGCONT: suspending every
/// process of an app): each listed process opened as a pidfd, checked, signalled. No waiting,
/// no second round. Returns 0, or -1 (see `out`).
int mp_cgroup_signal_all(const char *dir, const char *controller, const char *relative, int sig, struct mp_cgroup_kill *out);

/// Waits until `dir`'s cgroup.procs lists no process (zombies are not listed, and do not keep
/// a cgroup from being removed), reading it every 0.5 ms at first, backing off to 8 ms.
/// Returns 0 once empty, 1 on timeout, -1 with errno when it cannot be read (ENOENT: the
/// cgroup is gone, which counts as empty for the caller to decide).
int mp_cgroup_wait_empty(const char *dir, int timeout_ms);

#endif
