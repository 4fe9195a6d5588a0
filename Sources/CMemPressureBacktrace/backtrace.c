#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "CBacktrace.h"

#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

int mp_capture_stack(mp_frame *frames, int max, int skip) {
    unw_context_t context;
    unw_cursor_t cursor;
    if (unw_getcontext(&context) != 0) return -1;
    if (unw_init_local(&cursor, &context) != 0) return -1;
    int n = 0;
    int depth = 0;
    while (n < max && unw_step(&cursor) > 0) {
        if (depth++ < skip) continue;
        unw_word_t ip = 0, off = 0;
        unw_get_reg(&cursor, UNW_REG_IP, &ip);
        frames[n].ip = (uintptr_t)ip;
        frames[n].name[0] = 0;
        if (unw_get_proc_name(&cursor, frames[n].name, sizeof(frames[n].name), &off) != 0 &&
            frames[n].name[0] == 0) {
            off = 0;
        }
        frames[n].name[sizeof(frames[n].name) - 1] = 0;
        frames[n].offset = (uintptr_t)off;
        n++;
    }
    return n;
}

const char *mp_object_of(uintptr_t ip) {
    Dl_info info;
    if (dladdr((void *)ip, &info) == 0) return NULL;
    return info.dli_fname;
}

// The signal handler walks the interrupted thread's stack into this buffer and tells the
// waiting thread through an eventfd (write(2) is async-signal-safe). libunwind's local walk is
// used from the handler with per-thread caching; symbol lookup reads the ELF files, which is not
// strictly async-signal-safe: a thread interrupted inside the dynamic loader could stall the
// handler, in which case the caller's wait times out and no stack is reported. A thread that
// blocks the signal (as libdispatch's worker threads do) never runs the handler: no stack.
//
// Each capture is a numbered request, sent with rt_tgsigqueueinfo so the handler sees its number.
// `slot` says who owns the buffer: 0 idle, 4N+1 armed for request N, 4N+2 the handler of
// request N is writing, 4N+3 request N's frames are ready. Only the handler whose number matches
// the armed request claims the buffer (compare-and-swap), so a handler arriving late for an
// abandoned request cannot hand its stack to a newer one, and two handlers never write at once.
#define MP_CAPTURE_MAX 64
static mp_frame captured[MP_CAPTURE_MAX];
static int captured_count;
static int notify_fd = -1;
static _Atomic long slot;
static _Atomic long last_request;

enum { SLOT_ARMED = 1, SLOT_WRITING = 2, SLOT_READY = 3 };

// Walks the stack from inside the handler, keeping only the frames below the signal frame (the
// interrupted code and its callers).
static int capture_below_signal(void) {
    unw_context_t context;
    unw_cursor_t cursor;
    if (unw_getcontext(&context) != 0 || unw_init_local(&cursor, &context) != 0) return 0;
    int n = 0;
    int below = 0;
    while (n < MP_CAPTURE_MAX && unw_step(&cursor) > 0) {
        if (!below) {
            if (unw_is_signal_frame(&cursor) > 0) below = 1;
            continue;
        }
        unw_word_t ip = 0, off = 0;
        unw_get_reg(&cursor, UNW_REG_IP, &ip);
        captured[n].ip = (uintptr_t)ip;
        captured[n].name[0] = 0;
        if (unw_get_proc_name(&cursor, captured[n].name, sizeof(captured[n].name), &off) != 0 && captured[n].name[0] == 0) off = 0;
        captured[n].name[sizeof(captured[n].name) - 1] = 0;
        captured[n].offset = (uintptr_t)off;
        n++;
    }
    return n;
}

static void capture_handler(int sig, siginfo_t *info, void *context) {
    (void)sig;
    (void)context;
    if (info == NULL || info->si_code != SI_QUEUE || info->si_pid != getpid()) return;
    long request = (long)info->si_value.sival_ptr;
    long expected = request * 4 + SLOT_ARMED;
    if (!atomic_compare_exchange_strong(&slot, &expected, request * 4 + SLOT_WRITING)) return;
    int saved = errno;
    captured_count = capture_below_signal();
    atomic_store_explicit(&slot, request * 4 + SLOT_READY, memory_order_release);
    uint64_t one = 1;
    ssize_t w = write(notify_fd, &one, sizeof one);
    (void)w;
    errno = saved;
}

int mp_thread_stack_install(int signo) {
    if (notify_fd < 0) {
        notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (notify_fd < 0) return -1;
    }
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = capture_handler;
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    return sigaction(signo, &sa, NULL);
}

static long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

// Waits until `request`'s frames are ready or `deadline` (ms) passes; true when ready.
static int wait_ready(long request, long deadline) {
    for (;;) {
        if (atomic_load_explicit(&slot, memory_order_acquire) == request * 4 + SLOT_READY) return 1;
        long left = deadline - now_ms();
        if (left <= 0) return 0;
        struct pollfd p = { .fd = notify_fd, .events = POLLIN };
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno != EINTR) return 0;
        uint64_t drain;
        while (read(notify_fd, &drain, sizeof drain) > 0) {}
    }
}

int mp_thread_stack_capture(int tid, int signo, mp_frame *frames, int max, int timeout_ms) {
    if (notify_fd < 0) {
        errno = EINVAL;
        return -1;
    }
    long current = atomic_load(&slot);
    if ((current & 3) == SLOT_WRITING || (current & 3) == SLOT_ARMED) {
        errno = EBUSY;  // a handler of an abandoned request is still walking, or a capture runs
        return -1;
    }
    long request = atomic_fetch_add(&last_request, 1) + 1;
    if (!atomic_compare_exchange_strong(&slot, &current, request * 4 + SLOT_ARMED)) {
        errno = EBUSY;
        return -1;
    }
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_signo = signo;
    info.si_code = SI_QUEUE;
    info.si_pid = getpid();
    info.si_uid = getuid();
    info.si_value.sival_ptr = (void *)request;
    if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, signo, &info) != 0) {
        int e = errno;
        atomic_store(&slot, 0);
        errno = e;
        return -1;
    }
    int ready = wait_ready(request, now_ms() + timeout_ms);
    if (!ready) {
        long armed = request * 4 + SLOT_ARMED;
        if (atomic_compare_exchange_strong(&slot, &armed, 0)) return 0;  // no handler ran: abandoned
        // The handler is walking: give it as long again, then abandon the buffer to it.
        ready = wait_ready(request, now_ms() + timeout_ms);
        if (!ready) return 0;
    }
    int n = captured_count, out = 0;
    for (int i = 0; i < n && out < max; i++) frames[out++] = captured[i];
    atomic_store(&slot, 0);
    return out;
}
