"""Helpers the test files share."""

import re
import threading


def iterations_while(work):
    """Runs `work` in a thread and counts loop iterations of this thread
    until it is done: a count in the thousands means the other thread let
    this one run Python (it released the GIL); holding the GIL through its
    C++ work would stop the loop for all of it."""
    done = threading.Event()

    def run():
        try:
            work()
        finally:
            done.set()

    counter = 0
    thread = threading.Thread(target=run)
    thread.start()
    while not done.is_set():
        counter += 1
    thread.join()
    return counter


def rss_kib():
    """This process's resident memory in KiB."""
    with open("/proc/self/status") as f:
        return int(re.search(r"^VmRSS:\s+(\d+) kB$", f.read(), re.M).group(1))
