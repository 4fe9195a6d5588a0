#define _GNU_SOURCE
#include "CPurgeable.h"

#include <errno.h>
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

// Everything here runs inside jemalloc (with its locks held): no malloc, no I/O, no Swift.

#define MP_MAX_ARENAS 64
#define MP_MAX_EXTENTS 8192
#define MP_NAME_LENGTH 80

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static extent_hooks_t *default_hooks;          // jemalloc's own, which do the mapping
static char names[MP_MAX_ARENAS][MP_NAME_LENGTH];
static unsigned arena_ids[MP_MAX_ARENAS];
static int arena_count;
static mp_extent extents[MP_MAX_EXTENTS];
static int extent_count;
static uint64_t serial;
static _Atomic uint64_t generation;
static _Atomic int anon_names = -1;
static __thread int pending_here;

static const char *name_of(unsigned arena) {
    for (int i = 0; i < arena_count; i++)
        if (arena_ids[i] == arena) return names[i];
    return NULL;
}

// Two purgeable arenas' mappings side by side would have the same VMA flags (MADV_NOHUGEPAGE)
// and the kernel would merge them into one VMA, which a report can only name after one arena.
// So an extent takes the core-dump flag (MADV_DONTDUMP) opposite to that of a neighbouring
// extent of another arena: two colours suffice for a neighbour on one side (mmap places a new
// mapping next to the last one); with other arenas on both sides, already of two colours, one
// merge cannot be avoided. Purgeable memory is a cache the kernel may drop anyway; leaving some
// of it out of core dumps loses nothing a crash needs. Called with `lock` held.
static int choose_dontdump(uintptr_t start, uintptr_t end, unsigned arena) {
    int below = -1, above = -1;
    for (int i = 0; i < extent_count; i++) {
        if (extents[i].arena == arena) continue;
        if (extents[i].end == start) below = extents[i].dontdump;
        if (extents[i].start == end) above = extents[i].dontdump;
    }
    if (below < 0 && above < 0) return 0;
    if (below < 0) return !above;
    if (above < 0) return !below;
    return below == above ? !below : 0;
}

static void record(void *addr, size_t size, unsigned arena) {
    int tid = (int)syscall(SYS_gettid);
    uintptr_t start = (uintptr_t)addr, end = start + size;
    pthread_mutex_lock(&lock);
    int dontdump = choose_dontdump(start, end, arena);
    (void)madvise(addr, size, dontdump ? MADV_DONTDUMP : MADV_DODUMP);
    if (extent_count < MP_MAX_EXTENTS) {
        extents[extent_count++] = (mp_extent){ start, end, arena, tid, ++serial, dontdump };
    }
    pthread_mutex_unlock(&lock);
    pending_here = 1;
    atomic_fetch_add(&generation, 1);
}

// Removes [start, end) from the records: records inside it go, records overlapping it are
// trimmed (jemalloc may unmap part of an extent it mapped whole), a record spanning it is split.
static void forget(void *addr, size_t size) {
    uintptr_t start = (uintptr_t)addr, end = start + size;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < extent_count;) {
        mp_extent *e = &extents[i];
        if (e->end <= start || e->start >= end) {
            i++;
        } else if (e->start >= start && e->end <= end) {
            extents[i] = extents[--extent_count];
        } else if (e->start < start && e->end > end) {
            mp_extent tail = *e;
            tail.start = end;
            e->end = start;
            if (extent_count < MP_MAX_EXTENTS) extents[extent_count++] = tail;
            i++;
        } else if (e->start < start) {
            e->end = start;
            i++;
        } else {
            e->start = end;
            i++;
        }
    }
    pthread_mutex_unlock(&lock);
    atomic_fetch_add(&generation, 1);
}

bool mp_extents_pending_for_this_thread(void) {
    int was = pending_here;
    pending_here = 0;
    return was != 0;
}

// PR_SET_VMA_ANON_NAME takes printable ASCII except \\ ` $ [ ]; others become '_'.
static void sanitize_name(char *name) {
    for (char *c = name; *c; c++) {
        unsigned char u = (unsigned char)*c;
        if (u < 0x20 || u > 0x7e || u == '\\' || u == '`' || u == '$' || u == '[' || u == ']') *c = '_';
    }
}

static void *hook_alloc(extent_hooks_t *hooks, void *new_addr, size_t size, size_t alignment, bool *zero,
                        bool *commit, unsigned arena) {
    (void)hooks;
    void *p = default_hooks->alloc(default_hooks, new_addr, size, alignment, zero, commit, arena);
    if (p == NULL) return NULL;
    // A VMA flag neighbours lack keeps the kernel from merging this memory into another
    // allocator's anonymous mapping, so a report can attribute the whole VMA to this arena. It
    // also keeps transparent huge pages off, so MADV_FREE works page by page.
    (void)madvise(p, size, MADV_NOHUGEPAGE);
    const char *name = name_of(arena);
    if (name != NULL && atomic_load(&anon_names) != 0) {
        int rc = prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p, (unsigned long)size, (unsigned long)name);
        atomic_store(&anon_names, rc == 0 ? 1 : 0);
    }
    record(p, size, arena);
    return p;
}

static bool hook_dalloc(extent_hooks_t *hooks, void *addr, size_t size, bool committed, unsigned arena) {
    (void)hooks;
    bool failed = default_hooks->dalloc(default_hooks, addr, size, committed, arena);
    if (!failed) forget(addr, size);  // unmapped; otherwise jemalloc retains it, still ours
    return failed;
}

static void hook_destroy(extent_hooks_t *hooks, void *addr, size_t size, bool committed, unsigned arena) {
    (void)hooks;
    default_hooks->destroy(default_hooks, addr, size, committed, arena);
    forget(addr, size);
}

static bool hook_commit(extent_hooks_t *h, void *a, size_t s, size_t o, size_t l, unsigned i) {
    (void)h;
    return default_hooks->commit == NULL || default_hooks->commit(default_hooks, a, s, o, l, i);
}
static bool hook_decommit(extent_hooks_t *h, void *a, size_t s, size_t o, size_t l, unsigned i) {
    (void)h;
    return default_hooks->decommit == NULL || default_hooks->decommit(default_hooks, a, s, o, l, i);
}
static bool hook_purge_lazy(extent_hooks_t *h, void *a, size_t s, size_t o, size_t l, unsigned i) {
    (void)h;
    return default_hooks->purge_lazy == NULL || default_hooks->purge_lazy(default_hooks, a, s, o, l, i);
}
static bool hook_purge_forced(extent_hooks_t *h, void *a, size_t s, size_t o, size_t l, unsigned i) {
    (void)h;
    return default_hooks->purge_forced == NULL || default_hooks->purge_forced(default_hooks, a, s, o, l, i);
}
static bool hook_split(extent_hooks_t *h, void *a, size_t s, size_t sa, size_t sb, bool c, unsigned i) {
    (void)h;
    return default_hooks->split == NULL || default_hooks->split(default_hooks, a, s, sa, sb, c, i);
}
static bool hook_merge(extent_hooks_t *h, void *a, size_t sa, void *b, size_t sb, bool c, unsigned i) {
    (void)h;
    return default_hooks->merge == NULL || default_hooks->merge(default_hooks, a, sa, b, sb, c, i);
}

static extent_hooks_t hooks = {
    hook_alloc, hook_dalloc, hook_destroy, hook_commit, hook_decommit,
    hook_purge_lazy, hook_purge_forced, hook_split, hook_merge,
};

int mp_arena_create(const char *name, unsigned *index) {
    if (default_hooks == NULL) {
        size_t sz = sizeof(default_hooks);
        int rc = mallctl("arena.0.extent_hooks", &default_hooks, &sz, NULL, 0);
        if (rc != 0) return rc;
    }
    pthread_mutex_lock(&lock);
    if (arena_count >= MP_MAX_ARENAS) {
        pthread_mutex_unlock(&lock);
        return ENOSPC;
    }
    pthread_mutex_unlock(&lock);
    unsigned ind = 0;
    size_t sz = sizeof(ind);
    extent_hooks_t *ours = &hooks;
    // Register the name before the arena can map anything.
    pthread_mutex_lock(&lock);
    int slot = arena_count;
    strncpy(names[slot], name, MP_NAME_LENGTH - 1);
    names[slot][MP_NAME_LENGTH - 1] = 0;
    sanitize_name(names[slot]);  // a name the kernel refuses must not pass for "unsupported"
    arena_ids[slot] = (unsigned)-1;
    arena_count++;
    pthread_mutex_unlock(&lock);
    int rc = mallctl("arenas.create", &ind, &sz, &ours, sizeof(ours));
    pthread_mutex_lock(&lock);
    if (rc != 0) {
        arena_count--;
    } else {
        arena_ids[slot] = ind;
        *index = ind;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

int mp_mallocx_flags(unsigned arena, size_t alignment, bool zero) {
    int flags = MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE;
    if (alignment > 0) flags |= MALLOCX_ALIGN(alignment);
    if (zero) flags |= MALLOCX_ZERO;
    return flags;
}

uint64_t mp_extent_generation(void) { return atomic_load(&generation); }

int mp_extent_list(mp_extent *out, int max) {
    pthread_mutex_lock(&lock);
    int n = extent_count;
    for (int i = 0; i < n && i < max; i++) out[i] = extents[i];
    pthread_mutex_unlock(&lock);
    return n;
}

int mp_anon_names_supported(void) { return atomic_load(&anon_names); }

uint64_t mp_atomic_exchange_u64(void *word, uint64_t value) {
    return __atomic_exchange_n((uint64_t *)word, value, __ATOMIC_SEQ_CST);
}

void mp_store_u64(void *word, uint64_t value) { __atomic_store_n((uint64_t *)word, value, __ATOMIC_RELAXED); }
uint64_t mp_load_u64(const void *word) { return __atomic_load_n((const uint64_t *)word, __ATOMIC_RELAXED); }
