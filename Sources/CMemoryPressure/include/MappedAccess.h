#ifndef MEMORYPRESSURE_MAPPED_ACCESS_H
#define MEMORYPRESSURE_MAPPED_ACCESS_H
// Reads of a file mapping that survive the file being truncated meanwhile. Touching a mapped
// page past the file's new end raises SIGBUS, which would kill the process; these functions
// make such a fault, inside the one mapping being read by this thread, a return value instead.
//
// How: a SIGBUS handler (installed once, chained to whatever handler was there before) and a
// thread-local jump buffer. The access runs here in C, between sigsetjmp and the end of the
// call, so no Swift frame is ever jumped over. A SIGBUS whose address is outside the guarded
// range, or on a thread not inside a guarded access, goes to the previous handler, or gets the
// default action (the process dies by SIGBUS as it would have without this handler).
//
// Each returns 0 when the access completed, 1 when it was stopped by SIGBUS inside
// [mapping, mapping + mapping_length), -1 with errno when the handler could not be installed.

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Reads one byte every `stride` bytes of [mapping, mapping + length); their sum in *sum.
int mp_guarded_touch(const void *mapping, size_t length, size_t stride, uint64_t *sum);
// memcmp of the mapping's first `length` bytes with `other`; the result's sign in *result.
int mp_guarded_compare(const void *mapping, size_t length, const void *other, int *result);
// memcpy of the mapping's first `length` bytes to `destination`.
int mp_guarded_copy(void *destination, const void *mapping, size_t length);

#ifdef __cplusplus
}
#endif
#endif
