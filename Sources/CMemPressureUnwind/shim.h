#ifndef MEMORYPRESSURE_CUNWIND_H
#define MEMORYPRESSURE_CUNWIND_H
// libunwind, from Debian's libunwind-dev, restricted to unwinding the calling process
// (UNW_LOCAL_ONLY selects the _UL* entry points of -lunwind).
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif
