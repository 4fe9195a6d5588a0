#define _GNU_SOURCE
#include "CBenchSupport.h"
#include <sys/prctl.h>

int bench_become_child_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL);
}
