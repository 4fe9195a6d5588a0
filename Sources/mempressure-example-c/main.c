// mempressure-example-c: an app written in C on the lifecycle protocol's C client.
//
//   mempressure-example-c [--cache-mb N] [--state PATH]
//
// At launch it fills a cache of N MiB (default 64) of malloc'd memory, in 64 KiB blocks, every
// page written. On a memory warning it frees the cache and gives the pages back to the kernel
// with malloc_trim, so its footprint drops. In didEnterBackground (and willTerminate) it saves its
// state to PATH (default ./example-state.txt) inside a background task, written to a temporary
// file and renamed. It reports ready after didFinishLaunching and didBecomeActive, and answers
// the app commands `ping` (pong) and `cache` (the cache's size in bytes); any other command is an
// error. This is the conformance app of the protocol's golden transcripts.
//
// Not started by a supervisor, it says so and exits with status 2; it exits with status 0 when
// the supervisor closes the connection.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mempressure_client.h"

enum { block_bytes = 64 << 10 };

typedef struct app {
    size_t cache_mb;
    const char *state_path;
    void **blocks;
    size_t block_count;
    long warnings;
    long saves;
} app;

static size_t cache_bytes(const app *a) { return a->block_count * (size_t)block_bytes; }

static void fill_cache(app *a) {
    size_t want = a->cache_mb * ((size_t)1 << 20) / block_bytes;
    a->blocks = calloc(want ? want : 1, sizeof *a->blocks);
    if (!a->blocks) return;
    for (a->block_count = 0; a->block_count < want; a->block_count++) {
        void *p = malloc(block_bytes);
        if (!p) break;
        memset(p, 0x5a, block_bytes);  // every page dirty: charged to the app's footprint
        a->blocks[a->block_count] = p;
    }
    printf("cache filled: %zu bytes\n", cache_bytes(a));
    fflush(stdout);
}

static void free_cache(app *a) {
    size_t freed = cache_bytes(a);
    for (size_t i = 0; i < a->block_count; i++) free(a->blocks[i]);
    free(a->blocks);
    a->blocks = NULL;
    a->block_count = 0;
    // free() keeps the pages in the heap for the next malloc; malloc_trim gives them back.
    malloc_trim(0);
    printf("memory warning %ld: freed %zu bytes\n", a->warnings, freed);
    fflush(stdout);
}

/* Writes the state to a temporary file beside PATH and renames it over PATH. The temporary file
   is made anew (O_EXCL, O_NOFOLLOW; a leftover is unlinked first, which never follows a link), so
   a link planted in the data directory cannot redirect the write when the app runs as root. */
static void save_state(mp_client *c, app *a, const char *why) {
    long task = mp_client_begin_background_task(c, "save-state", NULL, NULL);
    char temporary[4096];
    snprintf(temporary, sizeof temporary, "%s.tmp", a->state_path);
    (void)unlink(temporary);
    int fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fd >= 0 && f == NULL) close(fd);
    int ok = f != NULL;
    if (f) {
        a->saves++;
        ok = fprintf(f, "app=%s saved=%s saves=%ld warnings=%ld cache_bytes=%zu\n", mp_client_app_name(c), why, a->saves, a->warnings,
                     cache_bytes(a)) > 0;
        ok = (fclose(f) == 0) && ok;
    }
    if (ok && rename(temporary, a->state_path) != 0) ok = 0;
    if (!ok) fprintf(stderr, "mempressure-example-c: cannot save state to %s: %s\n", a->state_path, strerror(errno));
    if (task > 0) mp_client_end_background_task(c, task);
}

static void did_finish_launching(mp_client *c, void *context) {
    fill_cache(context);
    mp_client_report_ready(c);
}

static void did_become_active(mp_client *c, void *context) {
    (void)context;
    mp_client_report_ready(c);
}

static void did_enter_background(mp_client *c, void *context) { save_state(c, context, "didEnterBackground"); }
static void will_terminate(mp_client *c, void *context) { save_state(c, context, "willTerminate"); }

static void did_receive_memory_warning(mp_client *c, void *context) {
    (void)c;
    app *a = context;
    a->warnings++;
    free_cache(a);
}

static void did_receive_notification(mp_client *c, const char *kind, const char *value, long count, void *context) {
    (void)c, (void)context;
    printf("notification %s (%ld): %s\n", kind, count, value);
    fflush(stdout);
}

static void did_receive_command(mp_client *c, const char *text, char *answer, size_t size, void *context) {
    (void)c;
    if (strcmp(text, "ping") == 0) snprintf(answer, size, "pong");
    else if (strcmp(text, "cache") == 0) snprintf(answer, size, "cache %zu", cache_bytes(context));
    else snprintf(answer, size, "error: unknown command");
}

int main(int argc, char **argv) {
    app a = {.cache_mb = 64, .state_path = "example-state.txt"};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cache-mb") == 0 && i + 1 < argc) {
            char *end;
            a.cache_mb = strtoul(argv[++i], &end, 10);
            if (*end || a.cache_mb > 65536) {
                fprintf(stderr, "mempressure-example-c: --cache-mb takes a number of MiB up to 65536\n");
                return 64;
            }
        } else if (strcmp(argv[i], "--state") == 0 && i + 1 < argc) {
            a.state_path = argv[++i];
        } else {
            fprintf(stderr, "usage: mempressure-example-c [--cache-mb N] [--state PATH]\n");
            return 64;
        }
    }
    mp_delegate delegate = {
        .did_finish_launching = did_finish_launching,
        .did_enter_background = did_enter_background,
        .did_become_active = did_become_active,
        .will_terminate = will_terminate,
        .did_receive_memory_warning = did_receive_memory_warning,
        .did_receive_notification = did_receive_notification,
        .did_receive_command = did_receive_command,
        .context = &a,
    };
    mp_client *client = mp_client_connect_from_environment(&delegate);
    if (!client) {
        fprintf(stderr, "mempressure-example-c: not started by a supervisor (%s)\n", strerror(errno));
        return 2;
    }
    // The callbacks run here, on the main thread.
    while (mp_client_dispatch(client) > 0) {
    }
    // The supervisor closed the connection: this example ends with it.
    mp_client_close(client);
    return 0;
}
