// alloc-counter: an LD_PRELOAD shim that counts the bytes a process allocates and frees, for
// export-bench's "bytes allocated per scrape" of the exporter it measures. export-bench compiles
// it with cc into its scratch directory:
//
//   cc -O2 -shared -fPIC -I Sources/CAllocCounter/include -o alloc-counter.so alloc-counter.c -ldl
//
// and starts the exporter with LD_PRELOAD=alloc-counter.so and ALLOC_COUNTER_FILE=<a file of
// one page of zeros>. The shim wraps malloc, calloc, realloc, reallocarray, free,
// posix_memalign, aligned_alloc, memalign, valloc and pvalloc, calls the next definition of each
// (glibc's, or jemalloc's where the program links it), and adds to the counters of
// AllocCounter.h in that file, mapped shared, so the harness reads them while the process runs.
// Sizes are usable sizes (malloc_usable_size of the same allocator), so allocated - freed is
// the live heap's change exactly. A forked child stops counting into the file (its own counts
// would otherwise mix with its parent's); an exec'd program maps the file anew.
//
// Not counted: memory the allocator's callers get some other way (mmap directly, jemalloc's own
// mallocx API), and the few blocks handed out from a static buffer while the next definitions
// are being looked up (dlsym can allocate).

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "AllocCounter.h"

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void (*free_fn)(void *);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*aligned_alloc_fn)(size_t, size_t);
typedef void *(*valloc_fn)(size_t);
typedef size_t (*usable_fn)(void *);

static malloc_fn real_malloc;
static calloc_fn real_calloc;
static realloc_fn real_realloc;
static free_fn real_free;
static posix_memalign_fn real_posix_memalign;
static aligned_alloc_fn real_aligned_alloc;
static aligned_alloc_fn real_memalign;
static valloc_fn real_valloc;
static valloc_fn real_pvalloc;
static usable_fn real_usable;
static int resolved;
static __thread int resolving;

// ---- blocks handed out while dlsym runs: from a static buffer, never freed, never counted ----

static _Alignas(64) unsigned char bootstrap[1 << 16];
static size_t bootstrap_used;

static int in_bootstrap(const void *p) {
    return (const unsigned char *)p >= bootstrap && (const unsigned char *)p < bootstrap + sizeof bootstrap;
}

// A block of `size` bytes aligned to `align` (a power of two, at least 16), its size in the
// 8 bytes before it; NULL (ENOMEM) once the buffer is used up.
static void *bootstrap_alloc(size_t size, size_t align) {
    if (align < 16) align = 16;
    size_t old = __atomic_load_n(&bootstrap_used, __ATOMIC_RELAXED);
    for (;;) {
        uintptr_t base = (uintptr_t)bootstrap;
        size_t start = (size_t)(((base + old + 16 + align - 1) & ~(uintptr_t)(align - 1)) - base);
        if (start > sizeof bootstrap || size > sizeof bootstrap - start) {
            errno = ENOMEM;
            return NULL;
        }
        if (__atomic_compare_exchange_n(&bootstrap_used, &old, start + size, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            memcpy(bootstrap + start - 8, &size, sizeof size);
            return bootstrap + start;
        }
    }
}

static size_t bootstrap_size(const void *p) {
    size_t size;
    memcpy(&size, (const unsigned char *)p - 8, sizeof size);
    return size;
}

static void resolve(void) {
    if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE)) return;
    resolving = 1;
    __atomic_store_n(&real_malloc, (malloc_fn)dlsym(RTLD_NEXT, "malloc"), __ATOMIC_RELAXED);
    __atomic_store_n(&real_calloc, (calloc_fn)dlsym(RTLD_NEXT, "calloc"), __ATOMIC_RELAXED);
    __atomic_store_n(&real_realloc, (realloc_fn)dlsym(RTLD_NEXT, "realloc"), __ATOMIC_RELAXED);
    __atomic_store_n(&real_free, (free_fn)dlsym(RTLD_NEXT, "free"), __ATOMIC_RELAXED);
    __atomic_store_n(&real_posix_memalign, (posix_memalign_fn)dlsym(RTLD_NEXT, "posix_memalign"), __ATOMIC_RELAXED);
    __atomic_store_n(&real_aligned_alloc, (aligned_alloc_fn)dlsym(RTLD_NEXT, "aligned_alloc"), __ATOMIC_RELAXED);
    __atomic_store_n(&real_memalign, (aligned_alloc_fn)dlsym(RTLD_NEXT, "memalign"), __ATOMIC_RELAXED);
    __atomic_store_n(&real_valloc, (valloc_fn)dlsym(RTLD_NEXT, "valloc"), __ATOMIC_RELAXED);
    __atomic_store_n(&real_pvalloc, (valloc_fn)dlsym(RTLD_NEXT, "pvalloc"), __ATOMIC_RELAXED);
    __atomic_store_n(&real_usable, (usable_fn)dlsym(RTLD_NEXT, "malloc_usable_size"), __ATOMIC_RELAXED);
    resolving = 0;
    // Without these the process cannot allocate at all: better to stop at once than to run on
    // with a wrong count.
    if (!real_malloc || !real_calloc || !real_realloc || !real_free || !real_posix_memalign || !real_aligned_alloc
        || !real_memalign || !real_valloc || !real_pvalloc || !real_usable) {
        static const char message[] = "alloc-counter: dlsym(RTLD_NEXT) found no malloc family to wrap\n";
        (void)!write(2, message, sizeof message - 1);
        _exit(127);
    }
    __atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
}

// ---- the counters: this process's own until the shared file is mapped ----

static alloc_counters local;
static alloc_counters *counters = &local;
// 0: not tried; 1: being mapped; 2: mapped; 3: no file (counts stay local).
static int map_state;

static void map_counters(void) {
    int expected = 0;
    if (!__atomic_compare_exchange_n(&map_state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return;
    const char *path = getenv(ALLOC_COUNTER_ENV);
    int fd = path ? open(path, O_RDWR | O_CLOEXEC) : -1;
    void *map = fd >= 0 ? mmap(NULL, sizeof(alloc_counters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0) close(fd);
    if (map == MAP_FAILED) {
        if (path) {
            static const char message[] = "alloc-counter: cannot map the file named by " ALLOC_COUNTER_ENV "\n";
            (void)!write(2, message, sizeof message - 1);
        }
        __atomic_store_n(&map_state, 3, __ATOMIC_RELEASE);
        return;
    }
    alloc_counters *shared = map;
    // What was counted before the file was mapped.
    __atomic_fetch_add(&shared->allocated_bytes, __atomic_load_n(&local.allocated_bytes, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    __atomic_fetch_add(&shared->allocations, __atomic_load_n(&local.allocations, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    __atomic_fetch_add(&shared->freed_bytes, __atomic_load_n(&local.freed_bytes, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    __atomic_fetch_add(&shared->frees, __atomic_load_n(&local.frees, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    __atomic_fetch_add(&shared->requested_bytes, __atomic_load_n(&local.requested_bytes, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    __atomic_store_n(&shared->pid, (uint64_t)getpid(), __ATOMIC_RELAXED);
    __atomic_store_n(&shared->magic, ALLOC_COUNTER_MAGIC, __ATOMIC_RELEASE);
    __atomic_store_n(&counters, shared, __ATOMIC_RELEASE);
    __atomic_store_n(&map_state, 2, __ATOMIC_RELEASE);
}

static alloc_counters *current(void) {
    if (__atomic_load_n(&map_state, __ATOMIC_ACQUIRE) == 0) map_counters();
    return __atomic_load_n(&counters, __ATOMIC_ACQUIRE);
}

// A forked child counts for itself, not into its parent's file.
static void detach_in_child(void) {
    __atomic_store_n(&counters, &local, __ATOMIC_RELEASE);
    __atomic_store_n(&map_state, 3, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void alloc_counter_init(void) {
    resolve();
    map_counters();  // so the harness sees `magic` before the program's first allocation
    pthread_atfork(NULL, NULL, detach_in_child);
}

static void *counted(void *p, size_t requested) {
    if (p && !in_bootstrap(p)) {
        alloc_counters *c = current();
        __atomic_fetch_add(&c->allocated_bytes, real_usable(p), __ATOMIC_RELAXED);
        __atomic_fetch_add(&c->allocations, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&c->requested_bytes, requested, __ATOMIC_RELAXED);
    }
    return p;
}

static void count_free(void *p) {
    alloc_counters *c = current();
    __atomic_fetch_add(&c->freed_bytes, real_usable(p), __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->frees, 1, __ATOMIC_RELAXED);
}

// ---- the wrappers ----

void *malloc(size_t size) {
    if (resolving) return bootstrap_alloc(size, 16);
    resolve();
    return counted(real_malloc(size), size);
}

void *calloc(size_t count, size_t size) {
    if (resolving) {
        if (size && count > SIZE_MAX / size) {
            errno = ENOMEM;
            return NULL;
        }
        return bootstrap_alloc(count * size, 16);  // static storage: zero already
    }
    resolve();
    return counted(real_calloc(count, size), count * size);
}

void free(void *p) {
    if (!p || in_bootstrap(p)) return;
    resolve();
    count_free(p);
    real_free(p);
}

void *realloc(void *p, size_t size) {
    if (resolving) {
        void *q = bootstrap_alloc(size, 16);
        if (q && p) memcpy(q, p, in_bootstrap(p) && bootstrap_size(p) < size ? bootstrap_size(p) : size);
        return q;
    }
    resolve();
    if (p && in_bootstrap(p)) {
        // Moved out of the static buffer into a real block.
        void *q = real_malloc(size);
        if (q) memcpy(q, p, bootstrap_size(p) < size ? bootstrap_size(p) : size);
        return counted(q, size);
    }
    if (!p) return counted(real_realloc(NULL, size), size);
    size_t old = real_usable(p);
    void *q = real_realloc(p, size);
    if (q || size == 0) {  // realloc(p, 0) may free p and return NULL
        alloc_counters *c = current();
        __atomic_fetch_add(&c->freed_bytes, old, __ATOMIC_RELAXED);
        __atomic_fetch_add(&c->frees, 1, __ATOMIC_RELAXED);
    }
    return counted(q, size);
}

void *reallocarray(void *p, size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, count * size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    if (resolving) {
        void *p = bootstrap_alloc(size, alignment);
        if (!p) return ENOMEM;
        *out = p;
        return 0;
    }
    resolve();
    int rc = real_posix_memalign(out, alignment, size);
    if (rc == 0) counted(*out, size);
    return rc;
}

void *aligned_alloc(size_t alignment, size_t size) {
    if (resolving) return bootstrap_alloc(size, alignment);
    resolve();
    return counted(real_aligned_alloc(alignment, size), size);
}

void *memalign(size_t alignment, size_t size) {
    if (resolving) return bootstrap_alloc(size, alignment);
    resolve();
    return counted(real_memalign(alignment, size), size);
}

void *valloc(size_t size) {
    if (resolving) return bootstrap_alloc(size, 4096);
    resolve();
    return counted(real_valloc(size), size);
}

void *pvalloc(size_t size) {
    if (resolving) return bootstrap_alloc((size + 4095) & ~(size_t)4095, 4096);
    resolve();
    return counted(real_pvalloc(size), size);
}

size_t malloc_usable_size(void *p) {
    if (!p) return 0;
    if (in_bootstrap(p)) return bootstrap_size(p);
    resolve();
    return real_usable(p);
}
