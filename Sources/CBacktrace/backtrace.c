#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "CBacktrace.h"

#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <poll.h>
#include <signal.h>
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
// handler, in which case the caller's wait times out and no stack is reported.
#define MP_CAPTURE_MAX 64
static mp_frame captured[MP_CAPTURE_MAX];
static int capture_below_signal(void);
static volatile int captured_count;
static int notify_fd = -1;

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

static void capture_handler(int sig) {
    (void)sig;
    int saved = errno;
    captured_count = capture_below_signal();
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
    sa.sa_handler = capture_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    return sigaction(signo, &sa, NULL);
}

int mp_thread_stack_capture(int tid, int signo, mp_frame *frames, int max, int timeout_ms) {
    if (notify_fd < 0) {
        errno = EINVAL;
        return -1;
    }
    uint64_t drain;
    while (read(notify_fd, &drain, sizeof drain) > 0) {}
    captured_count = 0;
    if (syscall(SYS_tgkill, getpid(), tid, signo) != 0) return -1;
    struct pollfd p = { .fd = notify_fd, .events = POLLIN };
    int r;
    do { r = poll(&p, 1, timeout_ms); } while (r < 0 && errno == EINTR);
    if (r <= 0) return 0;
    (void)read(notify_fd, &drain, sizeof drain);
    int n = captured_count, out = 0;
    for (int i = 0; i < n && out < max; i++) frames[out++] = captured[i];
    return out;
}
