#ifndef MEMORYPRESSURE_ALLOCCOUNTER_H
#define MEMORYPRESSURE_ALLOCCOUNTER_H
// The allocation counters export-bench reads from a process it measures: the layout of the
// small shared file that the LD_PRELOAD shim (Benchmarks/scripts/alloc-counter.c, which includes
// this header) keeps up to date, and the atomic loads the harness reads it with. One definition
// of the layout, used by both sides.
//
// The harness creates the file (one page of zeros) and starts the measured program with
// LD_PRELOAD=<the shim> and ALLOC_COUNTER_FILE=<the file>; the shim maps the file shared on
// its first allocation and sets `magic`, then adds to the counters on every allocation and free.

#include <stdint.h>

/// `magic` once the shim has mapped the file: "ALLOCCNT" read as a little-endian integer.
#define ALLOC_COUNTER_MAGIC 0x544E43434F4C4C41ULL
/// The environment variable naming the counters file.
#define ALLOC_COUNTER_ENV "ALLOC_COUNTER_FILE"

typedef struct alloc_counters {
    /// ALLOC_COUNTER_MAGIC once the shim counts into this file (0 before).
    uint64_t magic;
    /// Bytes handed out: the usable size (malloc_usable_size) of every block returned by
    /// malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc, pvalloc and
    /// reallocarray. A realloc counts as a free of the old block and an allocation of the new.
    uint64_t allocated_bytes;
    /// Blocks handed out (the calls above that returned a block).
    uint64_t allocations;
    /// Bytes given back: the usable size of every block freed (free, and realloc's old block).
    uint64_t freed_bytes;
    /// Blocks given back.
    uint64_t frees;
    /// Bytes asked for (the size arguments), beside the usable sizes above.
    uint64_t requested_bytes;
    /// The process that mapped the file last (a program exec'd by a counted one, such as
    /// `env`, maps it anew).
    uint64_t pid;
} alloc_counters;

/// The counters as they stand, each read atomically (the shim updates them from every thread
/// of the measured process while the harness reads).
static inline alloc_counters alloc_counters_load(const alloc_counters *c) {
    alloc_counters out;
    out.magic = __atomic_load_n(&c->magic, __ATOMIC_ACQUIRE);
    out.allocated_bytes = __atomic_load_n(&c->allocated_bytes, __ATOMIC_RELAXED);
    out.allocations = __atomic_load_n(&c->allocations, __ATOMIC_RELAXED);
    out.freed_bytes = __atomic_load_n(&c->freed_bytes, __ATOMIC_RELAXED);
    out.frees = __atomic_load_n(&c->frees, __ATOMIC_RELAXED);
    out.requested_bytes = __atomic_load_n(&c->requested_bytes, __ATOMIC_RELAXED);
    out.pid = __atomic_load_n(&c->pid, __ATOMIC_RELAXED);
    return out;
}

#endif
