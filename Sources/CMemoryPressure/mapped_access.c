// See include/MappedAccess.h.
#include "MappedAccess.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

struct mp_guard {
    volatile sig_atomic_t active;
    uintptr_t low, high;
    sigjmp_buf jump;
};

static _Thread_local struct mp_guard guard;
static struct sigaction previous;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_errno;

static void on_sigbus(int sig, siginfo_t *info, void *context) {
    struct mp_guard *g = &guard;
    uintptr_t address = (uintptr_t)info->si_addr;
    if (g->active && info->si_code > 0 && address >= g->low && address < g->high) {
        g->active = 0;
        siglongjmp(g->jump, 1);
    }
    // Not a fault of a guarded access: what would have happened without this handler.
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction != NULL) {
            previous.sa_sigaction(sig, info, context);
            return;
        }
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
        return;
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGBUS, &dfl, NULL);
    // A fault repeats when the handler returns and now kills; a SIGBUS sent with kill(2) does
    // not repeat, so it is raised again (it is blocked until this handler returns).
    if (info->si_code <= 0) raise(SIGBUS);
}

static void install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGBUS, &action, &previous) != 0) install_errno = errno;
}

static int ready(void) {
    pthread_once(&install_once, install);
    if (install_errno != 0) {
        errno = install_errno;
        return -1;
    }
    return 0;
}

// The three accessors share this shape; the access itself is the only difference.
#define GUARDED(mapping, length, access)                                    \
    do {                                                                    \
        if (ready() != 0) return -1;                                        \
        if (guard.active) {                                                 \
            errno = EBUSY;                                                  \
            return -1;                                                      \
        }                                                                   \
        guard.low = (uintptr_t)(mapping);                                   \
        guard.high = (uintptr_t)(mapping) + (length);                       \
        /* The mask now is saved here and restored by the jump. */         \
        if (sigsetjmp(guard.jump, 1) != 0) return 1;                        \
        /* A blocked SIGBUS from a fault kills without calling a handler. */\
        sigset_t bus, saved;                                                \
        sigemptyset(&bus);                                                  \
        sigaddset(&bus, SIGBUS);                                            \
        pthread_sigmask(SIG_UNBLOCK, &bus, &saved);                         \
        guard.active = 1;                                                   \
        access;                                                             \
        guard.active = 0;                                                   \
        pthread_sigmask(SIG_SETMASK, &saved, NULL);                         \
        return 0;                                                           \
    } while (0)

int mp_guarded_touch(const void *mapping, size_t length, size_t stride, uint64_t *sum) {
    if (stride == 0) stride = 1;
    GUARDED(mapping, length, {
        const volatile unsigned char *p = mapping;
        uint64_t total = 0;
        for (size_t offset = 0; offset < length; offset += stride) total += p[offset];
        *sum = total;
    });
}

int mp_guarded_compare(const void *mapping, size_t length, const void *other, int *result) {
    GUARDED(mapping, length, { *result = memcmp(mapping, other, length); });
}

int mp_guarded_copy(void *destination, const void *mapping, size_t length) {
    GUARDED(mapping, length, { memcpy(destination, mapping, length); });
}
