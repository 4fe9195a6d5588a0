"""The Python client against the protocol's golden transcripts (Tests/Fixtures/protocol).

A fake supervisor, written here with the standard library alone, replays each transcript to a
client running the specification's conformance app (examples/cache_app.py's CacheApp, which is
that app) in this process; the Swift test suite runs these tests too (`make test`).

    PYTHONPATH=Sources/python-client python3 -m unittest discover -s Sources/python-client/tests
"""

import os
import socket
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import mempressure_client as mp  # noqa: E402
from cache_app import CacheApp  # noqa: E402

TRANSCRIPTS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "Tests", "Fixtures", "protocol"))
APP, TOKEN = "conformance", "0123abcd"
TIMEOUT = 60


def parse(path):
    """The transcript's steps: ("send", bytes), ("expect", pattern) or ("expect-any", pattern)."""
    steps = []
    with open(path, "rb") as f:
        for raw in f.read().split(b"\n"):
            line = raw.decode("utf-8")
            if not line or line.startswith("#"):
                continue
            if line.startswith(">hex "):
                steps.append(("send", bytes(int(h, 16) for h in line[5:].split())))
            elif line.startswith(">long "):
                steps.append(("send", b"x" * int(line[6:]) + b"\n"))
            elif line.startswith("> "):
                steps.append(("send", line[2:].encode("utf-8") + b"\n"))
            elif line.startswith("<* "):
                steps.append(("expect-any", line[3:]))
            elif line.startswith("< "):
                steps.append(("expect", line[2:]))
            else:
                raise ValueError("%s: not a directive: %r" % (path, line))
    return steps


def matches(line, pattern):
    """A word `*` matches any one word; a pattern ending in ... matches lines beginning with the rest."""
    if pattern.endswith("..."):
        return line.startswith(pattern[:-3])
    words, wanted = line.split(" "), pattern.split(" ")
    return len(words) == len(wanted) and all(w == p or (p == "*" and w) for w, p in zip(words, wanted))


class Peer:
    """Lines from the client's connection, each waited for at most TIMEOUT seconds."""

    def __init__(self, connection):
        self.connection = connection
        self.connection.settimeout(TIMEOUT)
        self.pending = b""
        self.peeked = None

    def peek(self):
        if self.peeked is None:
            self.peeked = self._read()
        return self.peeked

    def next(self):
        line, self.peeked = self.peek(), None
        return line

    def _read(self):
        while b"\n" not in self.pending:
            data = self.connection.recv(4096)
            if not data:
                return None
            self.pending += data
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode("utf-8", errors="replace")


class TranscriptTests(unittest.TestCase):
    def replay(self, name):
        steps = parse(os.path.join(TRANSCRIPTS, name + ".txt"))
        with tempfile.TemporaryDirectory(prefix="mempressure-py-transcript.") as directory:
            path = os.path.join(directory, "control.sock")
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(path)
            listener.listen(1)
            listener.settimeout(TIMEOUT)
            app = CacheApp(1, os.path.join(directory, "state.txt"))
            client = mp.Client.connect(path, APP, TOKEN, app)
            thread = client.start_thread()
            connection, _ = listener.accept()
            peer, received = Peer(connection), []
            try:
                for index, (kind, value) in enumerate(steps):
                    where = "%s, step %d; received so far: %r" % (name, index + 1, received)
                    if kind == "send":
                        connection.sendall(value)
                    elif kind == "expect":
                        line = peer.next()
                        received.append(line)
                        self.assertIsNotNone(line, "expected %r, got the end of the connection (%s)" % (value, where))
                        self.assertTrue(matches(line, value), "expected %r, got %r (%s)" % (value, line, where))
                    else:
                        while peer.peek() is not None and matches(peer.peek(), value):
                            received.append(peer.next())
            finally:
                connection.close()
                listener.close()
            thread.join(TIMEOUT)
            self.assertFalse(thread.is_alive(), "the client did not see the connection end")
            client.close()

    def test_transcripts(self):
        names = sorted(f[:-4] for f in os.listdir(TRANSCRIPTS) if f.endswith(".txt"))
        self.assertEqual(len(names), 7, names)
        for name in names:
            with self.subTest(transcript=name):
                self.replay(name)

    def test_matching(self):
        self.assertTrue(matches("task-begin 1 77 save-state", "task-begin 1 * save-state"))
        self.assertFalse(matches("task-begin 1  save-state", "task-begin 1 * save-state"))
        self.assertTrue(matches("done 8 error: unknown", "done 8 error..."))

    def test_not_supervised(self):
        saved = {k: os.environ.pop(k) for k in ("MEMPRESSURE_SOCKET", "MEMPRESSURE_APP", "MEMPRESSURE_TOKEN") if k in os.environ}
        try:
            self.assertIsNone(mp.Client.from_environment(mp.Delegate()))
        finally:
            os.environ.update(saved)


if __name__ == "__main__":
    unittest.main()
