#!/usr/bin/env python3
"""An app written in Python on the lifecycle protocol's Python client.

    cache_app.py [--cache-mb N] [--state PATH]

At launch it fills a cache of N MiB (default 64) in 64 KiB blocks, every page written. On a
memory warning it frees the cache and gives the pages back to the kernel with glibc's malloc_trim
(through ctypes), so its footprint drops. In didEnterBackground (and willTerminate) it saves its
state to PATH (default ./example-state.txt) inside a background task, written to a temporary file
and renamed. It reports ready after didFinishLaunching and didBecomeActive, and answers the app
commands `ping` (pong) and `cache` (the cache's size in bytes); any other command is an error.
This is the conformance app of the protocol's golden transcripts, as the C example is.

Not started by a supervisor, it says so and exits with status 2; it exits with status 0 when the
supervisor closes the connection.
"""

import argparse
import ctypes
import ctypes.util
import os
import sys

import mempressure_client as mp

BLOCK_BYTES = 64 << 10


def malloc_trim():
    """Gives the heap's free pages back to the kernel (glibc); False where there is no glibc."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return False
    trim(0)
    return True


class CacheApp(mp.Delegate):
    def __init__(self, cache_mb, state_path):
        self.cache_mb = cache_mb
        self.state_path = state_path
        self.cache = []
        self.warnings = 0
        self.saves = 0

    def cache_bytes(self):
        return len(self.cache) * BLOCK_BYTES

    def did_finish_launching(self, client):
        blocks = self.cache_mb * (1 << 20) // BLOCK_BYTES
        # Every byte written: the pages are dirty, charged to the app's footprint.
        self.cache = [bytearray(b"\x5a") * BLOCK_BYTES for _ in range(blocks)]
        print("cache filled: %d bytes" % self.cache_bytes(), flush=True)
        client.report_ready()

    def did_become_active(self, client):
        client.report_ready()

    def did_receive_memory_warning(self, client):
        self.warnings += 1
        freed = self.cache_bytes()
        self.cache = []
        malloc_trim()
        print("memory warning %d: freed %d bytes" % (self.warnings, freed), flush=True)

    def did_enter_background(self, client):
        self.save_state(client, "didEnterBackground")

    def will_terminate(self, client):
        self.save_state(client, "willTerminate")

    def save_state(self, client, why):
        task = client.begin_background_task("save-state")
        try:
            self.saves += 1
            temporary = self.state_path + ".tmp"
            # Made anew (O_EXCL, O_NOFOLLOW; a leftover unlinked first, which never follows a
            # link), so a link planted in the data directory cannot redirect the write.
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write("app=%s saved=%s saves=%d warnings=%d cache_bytes=%d\n"
                        % (client.app_name, why, self.saves, self.warnings, self.cache_bytes()))
            os.replace(temporary, self.state_path)
        except OSError as e:
            print("cache_app.py: cannot save state to %s: %s" % (self.state_path, e), file=sys.stderr, flush=True)
        finally:
            client.end_background_task(task)

    def did_receive_notification(self, client, kind, value, count):
        print("notification %s (%d): %s" % (kind, count, value), flush=True)

    def did_receive_command(self, client, text):
        if text == "ping":
            return "pong"
        if text == "cache":
            return "cache %d" % self.cache_bytes()
        return "error: unknown command"


def main():
    parser = argparse.ArgumentParser(description="An app that frees a cache on a memory warning.")
    parser.add_argument("--cache-mb", type=int, default=64)
    parser.add_argument("--state", default="example-state.txt")
    args = parser.parse_args()
    client = mp.Client.from_environment(CacheApp(args.cache_mb, args.state))
    if client is None:
        print("cache_app.py: not started by a supervisor", file=sys.stderr)
        return 2
    client.run()  # the callbacks run here, on the main thread
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
