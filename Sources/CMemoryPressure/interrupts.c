// Signals forwarded to a pipe (the self-pipe trick): the handler does one write(2), which is
// async-signal-safe, whichever thread the kernel chose to run it on; a thread of the program
// reads the pipe and decides. See mp_forward_signals in CMemoryPressure.h.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "CMemoryPressure.h"

static volatile int forward_fd = -1;

static void forward(int sig) {
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (forward_fd >= 0) (void)write(forward_fd, &b, 1);
    errno = saved;
}

int mp_forward_signals(int fd, const int *signals, int count) {
    forward_fd = fd;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < count; i++) {
        if (sigaction(signals[i], &sa, NULL) != 0) return -1;
    }
    return 0;
}
