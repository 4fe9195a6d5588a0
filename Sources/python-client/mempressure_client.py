"""The Python client of the MemoryPressure lifecycle protocol, version 1.

A program started by a MemoryPressure supervisor finds it through its environment
(MEMPRESSURE_SOCKET, MEMPRESSURE_APP, MEMPRESSURE_TOKEN); with this module it connects, receives
the lifecycle callbacks (did_finish_launching, ..., did_receive_memory_warning) and answers them
as the protocol requires. The protocol is specified in the LifecycleProtocol module's
documentation ("The lifecycle protocol, version 1"). Only the standard library is used.

    import mempressure_client as mp

    class App(mp.Delegate):
        def did_receive_memory_warning(self, client):
            cache.clear()
        def did_become_active(self, client):
            client.report_ready()

    client = mp.Client.from_environment(App())   # None: not started by a supervisor
    if client:
        client.run()                              # or client.start_thread()

Callbacks run on the thread that calls run(), one at a time; the supervisor waits for each to
return (its acknowledgement is sent when it returns). report_ready() and the background-task
methods may be called from any thread, also from inside a callback.
"""

import os
import socket
import threading

__all__ = ["PROTOCOL_VERSION", "MAXIMUM_LINE_BYTES", "CALLBACKS", "Delegate", "Client"]
__version__ = "1.0.0"

PROTOCOL_VERSION = 1
MAXIMUM_LINE_BYTES = 4096
MAXIMUM_ANSWER_BYTES = 1000

# The protocol's callback names and the Delegate methods they call.
CALLBACKS = {
    "didFinishLaunching": "did_finish_launching",
    "willResignActive": "will_resign_active",
    "didEnterBackground": "did_enter_background",
    "willEnterForeground": "will_enter_foreground",
    "didBecomeActive": "did_become_active",
    "willTerminate": "will_terminate",
    "didReceiveMemoryWarning": "did_receive_memory_warning",
}


class Delegate:
    """What the app does at each point of its lifecycle; every method does nothing by default."""

    def did_finish_launching(self, client): pass
    def will_resign_active(self, client): pass
    def did_enter_background(self, client): pass
    def will_enter_foreground(self, client): pass
    def did_become_active(self, client): pass
    def will_terminate(self, client): pass
    def did_receive_memory_warning(self, client): pass

    def did_receive_notification(self, client, kind, value, count):
        """A system change: `count` changes of `kind`; `value` is the latest."""

    def did_receive_command(self, client, text):
        """An app-defined command; the returned text is the one-line answer (beginning with
        "error" when the command failed)."""
        return "error: commands not supported"


def _number(text):
    """A decimal of 1 to 18 digits, or None."""
    if not 0 < len(text) <= 18 or not all("0" <= c <= "9" for c in text):
        return None
    return int(text)


def _one_line(text, limit):
    """Control characters become spaces; cut to `limit` UTF-8 bytes on a character boundary."""
    clean = "".join(" " if ord(c) < 0x20 or ord(c) == 0x7F else c for c in text)
    data = clean.encode("utf-8")[:limit]
    return data.decode("utf-8", errors="ignore")


class Client:
    """A connection to the supervisor's control socket, speaking for one app."""

    def __init__(self, sock, app, delegate):
        self._sock = sock
        self.app_name = app
        self._delegate = delegate
        self._write_lock = threading.Lock()
        self._tasks = {}
        self._next_task = 1
        self._pending = bytearray()
        self._skipping = False

    @classmethod
    def connect(cls, socket_path, app, token, delegate):
        """Connects to `socket_path` and says hello as `app` with `token` (OSError if it
        cannot be reached)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(socket_path)
        except OSError:
            sock.close()
            raise
        client = cls(sock, app, delegate)
        client._send("hello %d %s %s" % (PROTOCOL_VERSION, app, token))
        return client

    @classmethod
    def from_environment(cls, delegate):
        """Connects with what the supervisor put in the environment; None when the process was
        not started by a supervisor or cannot reach it (the app then runs unsupervised)."""
        env = os.environ
        try:
            return cls.connect(env["MEMPRESSURE_SOCKET"], env["MEMPRESSURE_APP"], env["MEMPRESSURE_TOKEN"], delegate)
        except (KeyError, OSError):
            return None

    def fileno(self):
        """The connection's descriptor, to wait for input in an event loop of the app's own."""
        return self._sock.fileno()

    def report_ready(self):
        """Tells the supervisor the app is interactive (after launch, and after each resume)."""
        self._send("ready")

    def begin_background_task(self, name, expiration=None):
        """Asks for time to finish `name` in the background; the calling thread is the task's.
        `expiration` runs on the dispatching thread shortly before the time is up and must end
        the task. Returns the task's id."""
        with self._write_lock:
            task = self._next_task
            self._next_task += 1
            self._tasks[task] = expiration
        clean = "".join("_" if ord(c) < 0x21 or ord(c) == 0x7F else c for c in name)[:200] or "task"
        self._send("task-begin %d %d %s" % (task, threading.get_native_id(), clean))
        return task

    def end_background_task(self, task):
        with self._write_lock:
            if task not in self._tasks:
                return
            del self._tasks[task]
        self._send("task-end %d" % task)

    def dispatch(self):
        """Reads what the supervisor sent (blocking) and runs the callbacks it asks for. True
        while connected, False once the supervisor closed the connection."""
        try:
            data = self._sock.recv(4096)
        except InterruptedError:
            return True
        except OSError:
            return False
        if not data:
            return False
        for line in self._lines(data):
            self._handle(line)
        return True

    def run(self):
        """Dispatches until the supervisor closes the connection."""
        while self.dispatch():
            pass

    def start_thread(self):
        """Dispatches on a daemon thread of its own; returns the thread."""
        thread = threading.Thread(target=self.run, name="mempressure-client", daemon=True)
        thread.start()
        return thread

    def close(self):
        self._sock.close()

    def _send(self, line):
        data = (line + "\n").encode("utf-8")
        with self._write_lock:
            try:
                self._sock.sendall(data)
            except OSError:
                pass  # the supervisor went away: dispatch sees the connection end

    def _lines(self, data):
        """Complete lines; a bad one (over-long, with a NUL, not UTF-8) is skipped to its line feed."""
        lines = []
        for b in data:
            if self._skipping:
                self._skipping = b != 0x0A
                continue
            if b == 0x0A:
                try:
                    lines.append(bytes(self._pending).decode("utf-8"))
                except UnicodeDecodeError:
                    pass
                self._pending.clear()
            elif b == 0 or len(self._pending) == MAXIMUM_LINE_BYTES:
                self._skipping = True
                self._pending.clear()
            else:
                self._pending.append(b)
        return lines

    def _handle(self, line):
        words = line.split(" ", 3)
        verb, argc = words[0], len(words) - 1
        d = self._delegate
        if verb == "callback" and argc == 1 and words[1] in CALLBACKS:
            getattr(d, CALLBACKS[words[1]])(self)
            self._send("ack " + words[1])
        elif verb == "notification" and argc >= 2 and words[1] and _number(words[2]) is not None:
            d.did_receive_notification(self, words[1], words[3] if argc == 3 else "", _number(words[2]))
            self._send("notified " + words[1])
        elif verb == "expire" and argc == 1 and _number(words[1]) is not None:
            task = _number(words[1])
            with self._write_lock:
                handler = self._tasks.get(task)
            if handler:
                handler()
            self._send("expired %d" % task)
        elif verb == "report-stack" and argc == 1 and _number(words[1]) is not None:
            self._send("stack-end")  # this module does not capture other threads' stacks
        elif verb == "command" and argc >= 2 and _number(words[1]) is not None:
            text = line.split(" ", 2)[2]
            answer = d.did_receive_command(self, text)
            self._send("done %d %s" % (_number(words[1]), _one_line(str(answer), MAXIMUM_ANSWER_BYTES)))
        # welcome, and anything this module does not know, needs no answer.
