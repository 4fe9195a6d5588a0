#ifndef MEMORYPRESSURE_CBACKTRACE_H
#define MEMORYPRESSURE_CBACKTRACE_H
// The calling thread's stack, walked with libunwind and symbolized from the ELF symbol tables
// (unw_get_proc_name sees local symbols too, which dladdr does not).
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uintptr_t ip;        // instruction address
    uintptr_t offset;    // from the start of the function
    char name[240];      // mangled name, empty if unknown
} mp_frame;

/// Walks the calling thread's stack, skipping `skip` innermost frames (this function's own
/// frame is always skipped). Returns the number of frames written (at most `max`), or -1.
int mp_capture_stack(mp_frame *frames, int max, int skip);

/// Prepares capturing another thread's stack with signal `signo`: installs a handler that walks
/// the stack of the thread it interrupts. Returns 0, or -1 with errno.
int mp_thread_stack_install(int signo);

/// Sends `signo` to thread `tid` of this process and waits up to `timeout_ms` for its handler to
/// walk that thread's stack; copies the frames below the signal (the interrupted code first)
/// into `frames`. Returns the count, 0 if the thread did not answer in time, or -1 with errno.
/// One capture at a time: -1 with EBUSY while another runs (or while the handler of an
/// abandoned capture is still walking). A thread blocking `signo` never answers (0).
int mp_thread_stack_capture(int tid, int signo, mp_frame *frames, int max, int timeout_ms);

/// The shared object containing `ip` (dladdr), or NULL.
const char *mp_object_of(uintptr_t ip);

#ifdef __cplusplus
}
#endif
#endif
