// A hint to the processor that the cache line holding `address` will be written soon: it starts
// the load from memory without waiting for it (what Swift has no word for). Header only: nothing
// to link.
#ifndef MEMPRESSURE_PREFETCH_H
#define MEMPRESSURE_PREFETCH_H

static inline __attribute__((always_inline)) void mempressure_prefetch_for_write(const void *address) {
    __builtin_prefetch(address, 1, 3);
}

#endif
