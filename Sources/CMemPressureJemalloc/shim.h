#ifndef MEMORYPRESSURE_CJEMALLOC_H
#define MEMORYPRESSURE_CJEMALLOC_H
// jemalloc's non-standard API (mallctl, mallocx, dallocx, ...), from Debian's libjemalloc-dev.
// The MALLOCX_* flag macros take arguments and are wrapped in CMemoryPressure.
#include <jemalloc/jemalloc.h>
#endif
