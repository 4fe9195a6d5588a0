// The C client of the lifecycle protocol, version 1 (mempressure_client.h says how to use it;
// the LifecycleProtocol module's documentation specifies the protocol).
#define _GNU_SOURCE
#include "mempressure_client.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

typedef struct task {
    long id;
    void (*expiration)(void *);
    void *context;
} task;

struct mp_client {
    int fd;
    char *app;
    mp_delegate delegate;
    pthread_mutex_t lock;  // guards writes, the tasks and next_task
    task *tasks;
    size_t task_count, task_capacity;
    long next_task;
    // The line being assembled; `skipping` drops a bad line's bytes up to its line feed.
    char line[MP_MAXIMUM_LINE_BYTES + 1];
    size_t line_length;
    int skipping;
};

static int send_line(mp_client *c, const char *text) {
    size_t n = strlen(text);
    if (n > MP_MAXIMUM_LINE_BYTES) n = MP_MAXIMUM_LINE_BYTES;
    char buffer[MP_MAXIMUM_LINE_BYTES + 1];
    memcpy(buffer, text, n);
    buffer[n++] = '\n';
    int result = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t off = 0; off < n;) {
        ssize_t w = send(c->fd, buffer + off, n - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            result = -1;  // the supervisor went away: dispatch sees the connection end
            break;
        }
        off += (size_t)w;
    }
    pthread_mutex_unlock(&c->lock);
    return result;
}

mp_client *mp_client_connect(const char *socket_path, const char *app, const char *token, const mp_delegate *delegate) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (!socket_path || !app || !token) {
        errno = EINVAL;
        return NULL;
    }
    if (strlen(socket_path) >= sizeof address.sun_path) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    strcpy(address.sun_path, socket_path);
    mp_client *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->app = strdup(app);
    c->next_task = 1;
    if (delegate) c->delegate = *delegate;
    pthread_mutex_init(&c->lock, NULL);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (!c->app || c->fd < 0 || connect(c->fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int saved = errno;
        mp_client_close(c);
        errno = saved;
        return NULL;
    }
    char hello[MP_MAXIMUM_LINE_BYTES];
    snprintf(hello, sizeof hello, "hello %d %s %s", MP_PROTOCOL_VERSION, app, token);
    if (send_line(c, hello) != 0) {
        int saved = errno;
        mp_client_close(c);
        errno = saved;
        return NULL;
    }
    return c;
}

mp_client *mp_client_connect_from_environment(const mp_delegate *delegate) {
    const char *socket_path = getenv("MEMPRESSURE_SOCKET"), *app = getenv("MEMPRESSURE_APP"),
               *token = getenv("MEMPRESSURE_TOKEN");
    if (!socket_path || !app || !token) {
        errno = ENOENT;
        return NULL;
    }
    return mp_client_connect(socket_path, app, token, delegate);
}

int mp_client_fd(const mp_client *c) { return c->fd; }
const char *mp_client_app_name(const mp_client *c) { return c->app; }

void mp_client_close(mp_client *c) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    pthread_mutex_destroy(&c->lock);
    free(c->tasks);
    free(c->app);
    free(c);
}

int mp_client_report_ready(mp_client *c) { return send_line(c, "ready"); }

long mp_client_begin_background_task(mp_client *c, const char *name, void (*expiration)(void *), void *context) {
    pthread_mutex_lock(&c->lock);
    if (c->task_count == c->task_capacity) {
        size_t capacity = c->task_capacity ? c->task_capacity * 2 : 8;
        task *grown = realloc(c->tasks, capacity * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&c->lock);
            return -1;
        }
        c->tasks = grown;
        c->task_capacity = capacity;
    }
    long id = c->next_task++;
    c->tasks[c->task_count++] = (task){id, expiration, context};
    pthread_mutex_unlock(&c->lock);
    // The name is one word: spaces and control characters become '_'.
    char clean[201];
    size_t n = 0;
    for (const char *p = name ? name : ""; *p && n < sizeof clean - 1; p++) {
        unsigned char b = (unsigned char)*p;
        clean[n++] = (b < 0x21 || b == 0x7f) ? '_' : (char)b;
    }
    clean[n] = 0;
    char line[MP_MAXIMUM_LINE_BYTES];
    snprintf(line, sizeof line, "task-begin %ld %d %s", id, (int)gettid(), n ? clean : "task");
    send_line(c, line);
    return id;
}

/* Removes task `id`; 1 if it was there (its handler in *expiration, *context). */
static int take_task(mp_client *c, long id, int remove, void (**expiration)(void *), void **context) {
    int found = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->task_count; i++) {
        if (c->tasks[i].id != id) continue;
        found = 1;
        if (expiration) *expiration = c->tasks[i].expiration;
        if (context) *context = c->tasks[i].context;
        if (remove) c->tasks[i] = c->tasks[--c->task_count];
        break;
    }
    pthread_mutex_unlock(&c->lock);
    return found;
}

void mp_client_end_background_task(mp_client *c, long id) {
    if (!take_task(c, id, 1, NULL, NULL)) return;
    char line[64];
    snprintf(line, sizeof line, "task-end %ld", id);
    send_line(c, line);
}

// MARK: Reading the supervisor's messages

/* A decimal of 1 to 18 digits (so it fits a long), or -1. */
static long number(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 18) return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* Whether the n bytes are UTF-8 (no overlong forms, surrogates or values past U+10FFFF). */
static int is_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char b = s[i];
        size_t extra;
        unsigned int value;
        if (b < 0x80) { i++; continue; }
        else if (b >= 0xc2 && b <= 0xdf) { extra = 1; value = b & 0x1f; }
        else if (b >= 0xe0 && b <= 0xef) { extra = 2; value = b & 0x0f; }
        else if (b >= 0xf0 && b <= 0xf4) { extra = 3; value = b & 0x07; }
        else return 0;
        if (i + extra >= n) return 0;
        for (size_t k = 1; k <= extra; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            value = (value << 6) | (s[i + k] & 0x3f);
        }
        if ((extra == 2 && (value < 0x800 || (value >= 0xd800 && value <= 0xdfff))) || (extra == 3 && (value < 0x10000 || value > 0x10ffff)))
            return 0;
        i += extra + 1;
    }
    return 1;
}

typedef void (*callback_fn)(mp_client *, void *);

/* The delegate's function for a callback's name; 0 if the name is no callback. */
static int callback_named(const mp_client *c, const char *name, callback_fn *fn) {
    static const char *const names[] = {"didFinishLaunching", "willResignActive", "didEnterBackground", "willEnterForeground",
                                        "didBecomeActive", "willTerminate", "didReceiveMemoryWarning"};
    const callback_fn fns[] = {c->delegate.did_finish_launching, c->delegate.will_resign_active, c->delegate.did_enter_background,
                               c->delegate.will_enter_foreground, c->delegate.did_become_active, c->delegate.will_terminate,
                               c->delegate.did_receive_memory_warning};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (strcmp(name, names[i]) == 0) {
            *fn = fns[i];
            return 1;
        }
    }
    return 0;
}

/* Splits off the next word (up to a space) in place; the rest after its space, or NULL. */
static char *word(char *s) {
    char *space = strchr(s, ' ');
    if (!space) return NULL;
    *space = 0;
    return space + 1;
}

static void handle(mp_client *c, char *line) {
    char out[MP_MAXIMUM_LINE_BYTES];
    char *verb = line, *rest = word(line);
    if (strcmp(verb, "callback") == 0 && rest && !strchr(rest, ' ')) {
        callback_fn fn;
        if (!callback_named(c, rest, &fn)) return;  // a newer supervisor's callback
        if (fn) fn(c, c->delegate.context);
        snprintf(out, sizeof out, "ack %s", rest);
        send_line(c, out);
    } else if (strcmp(verb, "notification") == 0 && rest) {
        char *kind = rest, *count_text = word(kind);
        if (!count_text) return;
        char *value = word(count_text);
        long count = number(count_text);
        if (count < 0 || *kind == 0) return;
        if (c->delegate.did_receive_notification) c->delegate.did_receive_notification(c, kind, value ? value : "", count, c->delegate.context);
        snprintf(out, sizeof out, "notified %s", kind);
        send_line(c, out);
    } else if (strcmp(verb, "expire") == 0 && rest) {
        long id = number(rest);
        if (id < 0) return;
        void (*expiration)(void *) = NULL;
        void *context = NULL;
        if (take_task(c, id, 0, &expiration, &context) && expiration) expiration(context);
        snprintf(out, sizeof out, "expired %ld", id);
        send_line(c, out);
    } else if (strcmp(verb, "report-stack") == 0 && rest) {
        if (number(rest) < 0) return;
        send_line(c, "stack-end");  // this library does not capture other threads' stacks
    } else if (strcmp(verb, "command") == 0 && rest) {
        char *text = word(rest);
        long id = number(rest);
        if (id < 0 || !text) return;
        char answer[MP_MAXIMUM_ANSWER_BYTES + 1] = "error: commands not supported";
        if (c->delegate.did_receive_command) {
            answer[0] = 0;
            c->delegate.did_receive_command(c, text, answer, sizeof answer, c->delegate.context);
            answer[MP_MAXIMUM_ANSWER_BYTES] = 0;
        }
        for (char *p = answer; *p; p++) {
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';  // one line
        }
        snprintf(out, sizeof out, "done %ld %s", id, answer);
        send_line(c, out);
    }
    // welcome, and anything this library does not know, needs no answer.
}

int mp_client_dispatch(mp_client *c) {
    char buffer[4096];
    ssize_t n;
    do {
        n = read(c->fd, buffer, sizeof buffer);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return -1;
    if (n == 0) return 0;
    for (ssize_t i = 0; i < n; i++) {
        char b = buffer[i];
        if (c->skipping) {
            if (b == '\n') c->skipping = 0;
            continue;
        }
        if (b == '\n') {
            c->line[c->line_length] = 0;
            size_t length = c->line_length;
            c->line_length = 0;
            if (is_utf8((const unsigned char *)c->line, length)) handle(c, c->line);
        } else if (b == 0 || c->line_length == MP_MAXIMUM_LINE_BYTES) {
            c->skipping = 1;  // a NUL or an over-long line: skipped up to its line feed
            c->line_length = 0;
        } else {
            c->line[c->line_length++] = b;
        }
    }
    return 1;
}

static void *dispatch_loop(void *argument) {
    mp_client *c = argument;
    while (mp_client_dispatch(c) > 0) {
    }
    return NULL;
}

int mp_client_start_thread(mp_client *c) {
    pthread_t thread;
    int error = pthread_create(&thread, NULL, dispatch_loop, c);
    if (error == 0) pthread_detach(thread);
    return error;
}
