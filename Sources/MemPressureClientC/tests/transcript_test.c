// The C client against the protocol's golden transcripts (Tests/Fixtures/protocol, whose README
// gives their format): a fake supervisor, here, replays each transcript given on the command line
// to a client running the specification's conformance app in this process. The Swift test suite
// builds it through the client's pkg-config file and runs it (`make test`).
//
//   cc transcript_test.c $(pkg-config --cflags --libs --static mempressure-client) -o transcript_test
//   ./transcript_test Tests/Fixtures/protocol/*.txt
//
// Prints one line per transcript ("ok NAME" or "FAIL NAME: why"); exit status 0 when all pass.
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "mempressure_client.h"

enum { timeout_ms = 60000 };

// MARK: The conformance app

static size_t cache_bytes;
static void *cache;

static void ready(mp_client *c, void *context) {
    (void)context;
    mp_client_report_ready(c);
}

static void launched(mp_client *c, void *context) {
    cache_bytes = 1 << 20;
    cache = malloc(cache_bytes);
    if (cache) memset(cache, 0x5a, cache_bytes);
    ready(c, context);
}

static void save_state(mp_client *c, void *context) {
    (void)context;
    long task = mp_client_begin_background_task(c, "save-state", NULL, NULL);
    mp_client_end_background_task(c, task);
}

static void warned(mp_client *c, void *context) {
    (void)c, (void)context;
    free(cache);
    cache = NULL;
    cache_bytes = 0;
}

static void command(mp_client *c, const char *text, char *answer, size_t size, void *context) {
    (void)c, (void)context;
    if (strcmp(text, "ping") == 0) snprintf(answer, size, "pong");
    else if (strcmp(text, "cache") == 0) snprintf(answer, size, "cache %zu", cache_bytes);
    else snprintf(answer, size, "error: unknown command");
}

// MARK: The fake supervisor

/* Whether the client's line matches the pattern: a word `*` matches any one word; a pattern
 * ending in "..." matches every line beginning with what comes before it. */
static int matches(const char *line, const char *pattern) {
    size_t n = strlen(pattern);
    if (n >= 3 && strcmp(pattern + n - 3, "...") == 0) return strncmp(line, pattern, n - 3) == 0;
    while (*pattern) {
        if (pattern[0] == '*' && (pattern[1] == ' ' || pattern[1] == 0)) {
            if (*line == ' ' || *line == 0) return 0;  // a word is not empty
            while (*line && *line != ' ') line++;
            pattern++;
        } else if (*line++ != *pattern++) {
            return 0;
        }
    }
    return *line == 0;
}

typedef struct reader {
    int fd;
    char buffer[65536];
    size_t length;
    char line[8192];
    int peeked;
} reader;

/* The client's next line (peek: left for the next call); NULL at the end or after the timeout. */
static const char *next_line(reader *r, int peek) {
    if (r->peeked) {
        r->peeked = peek;
        return r->line;
    }
    for (;;) {
        char *newline = memchr(r->buffer, '\n', r->length);
        if (newline) {
            size_t n = (size_t)(newline - r->buffer);
            if (n >= sizeof r->line) n = sizeof r->line - 1;
            memcpy(r->line, r->buffer, n);
            r->line[n] = 0;
            r->length -= (size_t)(newline - r->buffer) + 1;
            memmove(r->buffer, newline + 1, r->length);
            r->peeked = peek;
            return r->line;
        }
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        if (poll(&p, 1, timeout_ms) <= 0 || r->length == sizeof r->buffer) return NULL;
        ssize_t got = read(r->fd, r->buffer + r->length, sizeof r->buffer - r->length);
        if (got <= 0) return NULL;
        r->length += (size_t)got;
    }
}

static int send_all(int fd, const void *bytes, size_t n) {
    for (size_t off = 0; off < n;) {
        ssize_t w = send(fd, (const char *)bytes + off, n - off, MSG_NOSIGNAL);
        if (w <= 0) return -1;
        off += (size_t)w;
    }
    return 0;
}

/* Sends one `>` directive's bytes. */
static int send_directive(int fd, const char *line) {
    if (strncmp(line, ">hex ", 5) == 0) {
        unsigned char bytes[256];
        size_t n = 0;
        for (char *p = (char *)line + 5, *end; *p && n < sizeof bytes; p = end) {
            bytes[n++] = (unsigned char)strtoul(p, &end, 16);
            if (end == p) return -1;
        }
        return send_all(fd, bytes, n);
    }
    if (strncmp(line, ">long ", 6) == 0) {
        size_t n = strtoul(line + 6, NULL, 10);
        char *bytes = malloc(n + 1);
        if (!bytes) return -1;
        memset(bytes, 'x', n);
        bytes[n] = '\n';
        int result = send_all(fd, bytes, n + 1);
        free(bytes);
        return result;
    }
    return send_all(fd, line + 2, strlen(line + 2)) || send_all(fd, "\n", 1);
}

static void *dispatch(void *client) {
    while (mp_client_dispatch(client) > 0) {
    }
    return NULL;
}

/* Replays one transcript; 0, or 1 with the reason in `why`. */
static int replay(const char *path, char *why, size_t size) {
    FILE *f = fopen(path, "r");
    if (!f) return snprintf(why, size, "cannot open it"), 1;
    char directory[] = "/tmp/mempressure-c-transcript.XXXXXX";
    if (!mkdtemp(directory)) return fclose(f), snprintf(why, size, "mkdtemp failed"), 1;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    snprintf(address.sun_path, sizeof address.sun_path, "%s/control.sock", directory);
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int failed = listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 1) != 0;
    mp_delegate delegate = {.did_finish_launching = launched, .did_become_active = ready, .did_enter_background = save_state,
                            .will_terminate = save_state, .did_receive_memory_warning = warned, .did_receive_command = command};
    mp_client *client = failed ? NULL : mp_client_connect(address.sun_path, "conformance", "0123abcd", &delegate);
    int connection = client ? accept4(listener, NULL, NULL, SOCK_CLOEXEC) : -1;
    pthread_t thread;
    int dispatching = connection >= 0 && pthread_create(&thread, NULL, dispatch, client) == 0;
    failed = !dispatching;
    if (failed) snprintf(why, size, "the client did not connect");
    static reader r;
    r = (reader){.fd = connection};
    char text[8192];
    for (int number = 1; !failed && fgets(text, sizeof text, f); number++) {
        text[strcspn(text, "\n")] = 0;
        if (text[0] == 0 || text[0] == '#') continue;
        if (text[0] == '>') {
            if (send_directive(connection, text) != 0) failed = snprintf(why, size, "line %d: cannot send", number) > 0;
        } else if (strncmp(text, "<* ", 3) == 0) {
            const char *line;
            while ((line = next_line(&r, 1)) && matches(line, text + 3)) next_line(&r, 0);
        } else if (strncmp(text, "< ", 2) == 0) {
            const char *line = next_line(&r, 0);
            if (!line || !matches(line, text + 2))
                failed = snprintf(why, size, "line %d: expected '%s', got %s%s%s", number, text + 2, line ? "'" : "", line ? line : "nothing",
                                  line ? "'" : "") > 0;
        } else {
            failed = snprintf(why, size, "line %d: not a directive", number) > 0;
        }
    }
    fclose(f);
    if (connection >= 0) close(connection);  // the client sees the end of the connection
    if (dispatching) pthread_join(thread, NULL);
    mp_client_close(client);
    if (listener >= 0) close(listener);
    unlink(address.sun_path);
    rmdir(directory);
    free(cache);
    cache = NULL;
    return failed;
}

int main(int argc, char **argv) {
    int failures = 0;
    for (int i = 1; i < argc; i++) {
        char why[8192] = "";
        int failed = replay(argv[i], why, sizeof why);
        const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
        if (failed) printf("FAIL %s: %s\n", name, why);
        else printf("ok %s\n", name);
        failures += failed;
    }
    return failures ? 1 : argc > 1 ? 0 : 2;
}
