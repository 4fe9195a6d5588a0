#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "CBacktrace.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <string.h>

int mp_capture_stack(mp_frame *frames, int max, int skip) {
    unw_context_t context;
    unw_cursor_t cursor;
    if (unw_getcontext(&context) != 0) return -1;
    if (unw_init_local(&cursor, &context) != 0) return -1;
    int n = 0;
    int depth = 0;
    while (n < max && unw_step(&cursor) > 0) {
        if (depth++ < skip) continue;
        unw_word_t ip = 0, off = 0;
        unw_get_reg(&cursor, UNW_REG_IP, &ip);
        frames[n].ip = (uintptr_t)ip;
        frames[n].name[0] = 0;
        if (unw_get_proc_name(&cursor, frames[n].name, sizeof(frames[n].name), &off) != 0 &&
            frames[n].name[0] == 0) {
            off = 0;
        }
        frames[n].name[sizeof(frames[n].name) - 1] = 0;
        frames[n].offset = (uintptr_t)off;
        n++;
    }
    return n;
}

const char *mp_object_of(uintptr_t ip) {
    Dl_info info;
    if (dladdr((void *)ip, &info) == 0) return NULL;
    return info.dli_fname;
}
