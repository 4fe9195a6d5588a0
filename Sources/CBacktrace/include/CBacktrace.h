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

/// The shared object containing `ip` (dladdr), or NULL.
const char *mp_object_of(uintptr_t ip);

#ifdef __cplusplus
}
#endif
#endif
