#ifndef MEMORYPRESSURE_CPURGEABLE_H
#define MEMORYPRESSURE_CPURGEABLE_H
// The jemalloc side of purgeable memory: arenas with extent hooks that keep the arena's memory
// in VMAs of its own (so reports can attribute them), record every extent mapped, and name it
// with PR_SET_VMA_ANON_NAME where the kernel supports that; jemalloc's flag macros; an atomic
// exchange on raw memory (the discard-detection primitive).

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Creates a jemalloc arena (mallctl "arenas.create") with this module's extent hooks and
/// remembers `name` for it. Returns 0 and sets *index, or the errno mallctl returned.
int mp_arena_create(const char *name, unsigned *index);

/// mallocx/dallocx flags: this arena, no thread cache, `alignment` (a power of two, or 0).
int mp_mallocx_flags(unsigned arena, size_t alignment, bool zero);

/// One extent the hooks have seen mapped for an arena and not yet unmapped.
typedef struct {
    uintptr_t start;
    uintptr_t end;
    unsigned arena;
    int tid;           // the thread whose allocation made jemalloc map it
    uint64_t serial;   // increases with every extent mapped, to tell new ones apart
    int dontdump;      // MADV_DONTDUMP set on it: neighbouring arenas alternate (see hooks.c)
} mp_extent;

/// Incremented whenever an extent is mapped or unmapped by any hooked arena.
uint64_t mp_extent_generation(void);
/// Copies up to `max` live extents into `out`; returns how many there are in all.
int mp_extent_list(mp_extent *out, int max);
/// Whether extents were mapped for allocations of the calling thread since it last asked
/// (and forgets them): that thread then records its call stack for them.
bool mp_extents_pending_for_this_thread(void);
/// Whether the last PR_SET_VMA_ANON_NAME attempt worked (-1: not tried yet, 0: no, 1: yes).
int mp_anon_names_supported(void);

/// __atomic_exchange_n with sequential consistency on a 64-bit word.
uint64_t mp_atomic_exchange_u64(void *word, uint64_t value);
/// A plain 64-bit store and load (the compiler may not elide or reorder them past the madvise).
void mp_store_u64(void *word, uint64_t value);
uint64_t mp_load_u64(const void *word);

#ifdef __cplusplus
}
#endif
#endif
