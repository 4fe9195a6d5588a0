/*
 * mempressure_client.h: the C client of the MemoryPressure lifecycle protocol, version 1.
 *
 * A program started by a MemoryPressure supervisor finds it through its environment
 * (MEMPRESSURE_SOCKET, MEMPRESSURE_APP, MEMPRESSURE_TOKEN); with this library it connects,
 * receives the lifecycle callbacks (didFinishLaunching, ..., didReceiveMemoryWarning) and
 * answers them as the protocol requires. The protocol itself is specified in the LifecycleProtocol
 * module's documentation ("The lifecycle protocol, version 1").
 *
 *     static void on_warning(mp_client *c, void *ctx) { free_cache(); malloc_trim(0); }
 *     mp_delegate d = { .did_receive_memory_warning = on_warning };
 *     mp_client *c = mp_client_connect_from_environment(&d);   // NULL: not supervised
 *     if (c) while (mp_client_dispatch(c) > 0) {}               // or mp_client_start_thread(c)
 *
 * Callbacks run on the thread that calls mp_client_dispatch, one at a time; the supervisor waits
 * for each to return (its acknowledgement is sent when it returns). mp_client_report_ready and
 * the background-task calls may be made from any thread, also from inside a callback.
 *
 * Link with `pkg-config --cflags --libs mempressure-client` (the library needs -lpthread).
 */
#ifndef MEMPRESSURE_CLIENT_H
#define MEMPRESSURE_CLIENT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The protocol version this library speaks. */
#define MP_PROTOCOL_VERSION 1
/* The longest line either side sends, in bytes (without the line feed). */
#define MP_MAXIMUM_LINE_BYTES 4096
/* The longest answer to an app command the library sends (longer ones are cut). */
#define MP_MAXIMUM_ANSWER_BYTES 1000

typedef struct mp_client mp_client;

/* What the app does at each point of its lifecycle. Every member may be NULL (nothing is done;
 * the callback is still acknowledged). `context` is passed to each. */
typedef struct mp_delegate {
    void (*did_finish_launching)(mp_client *client, void *context);
    void (*will_resign_active)(mp_client *client, void *context);
    void (*did_enter_background)(mp_client *client, void *context);
    void (*will_enter_foreground)(mp_client *client, void *context);
    void (*did_become_active)(mp_client *client, void *context);
    void (*will_terminate)(mp_client *client, void *context);
    void (*did_receive_memory_warning)(mp_client *client, void *context);
    /* A system change: `count` changes of `kind` (while the app was suspended, or one now);
     * `value` is the latest. */
    void (*did_receive_notification)(mp_client *client, const char *kind, const char *value, long count, void *context);
    /* An app-defined command: write the one-line answer into `answer` (`size` bytes, NUL
     * terminated). An answer beginning with "error" tells the supervisor the command failed.
     * NULL: every command is answered "error: commands not supported". */
    void (*did_receive_command)(mp_client *client, const char *text, char *answer, size_t size, void *context);
    void *context;
} mp_delegate;

/* Connects with what the supervisor put in the environment and says hello. NULL (errno set)
 * when the process was not started by a supervisor (ENOENT: a variable is missing) or the
 * socket cannot be reached: the app then runs unsupervised. `delegate` is copied. */
mp_client *mp_client_connect_from_environment(const mp_delegate *delegate);

/* The same with the socket path, app name and token given (a test's fake supervisor). */
mp_client *mp_client_connect(const char *socket_path, const char *app, const char *token, const mp_delegate *delegate);

/* The connection's descriptor, to poll for input in an event loop of the app's own. */
int mp_client_fd(const mp_client *client);

/* Reads what the supervisor sent (blocking until something arrives) and runs the callbacks it
 * asks for. Returns 1 while connected, 0 once the supervisor closed the connection (the app runs
 * on, unsupervised), -1 on a read error (errno set). Lines the library does not understand
 * (a newer supervisor's messages, bad bytes) are skipped, never fatal. */
int mp_client_dispatch(mp_client *client);

/* Runs mp_client_dispatch on a thread of its own until the connection ends. 0, or an errno. */
int mp_client_start_thread(mp_client *client);

/* Tells the supervisor the app is interactive (after launch, and after each resume). 0 or -1. */
int mp_client_report_ready(mp_client *client);

/* Asks for time to finish `name` in the background. The calling thread is the task's thread.
 * `expiration` (may be NULL) runs on the dispatching thread shortly before the time is up and
 * must end the task. Returns the task's id (> 0), or -1. */
long mp_client_begin_background_task(mp_client *client, const char *name, void (*expiration)(void *context), void *context);

/* Ends a background task (an id already ended is ignored). */
void mp_client_end_background_task(mp_client *client, long task);

/* The app's name (MEMPRESSURE_APP). */
const char *mp_client_app_name(const mp_client *client);

/* Closes the connection and frees the client. Not while mp_client_start_thread's thread runs. */
void mp_client_close(mp_client *client);

#ifdef __cplusplus
}
#endif

#endif
