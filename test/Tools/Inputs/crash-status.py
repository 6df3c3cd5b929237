"""Runs a tool with HESPER_TEST_CRASH set and prints how it ended and how
long it took (crash-watchdog.test): 'signal SIGSEGV', 'signal SIGALRM' or
'exit N', then 'in time' (under 20 s); or 'hung' when it is still running
after the time limit."""
import os
import signal
import subprocess
import sys
import time

mode, limit, command = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
env = dict(os.environ, HESPER_TEST_CRASH=mode)
# In the sanitizer build, AddressSanitizer's own SEGV handler (which LLVM's
# restores before re-raising) would report the signal and exit with status
# 1; without it the process ends by the signal, as in the normal build.
env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":handle_segv=0").lstrip(":")
start = time.monotonic()
process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
try:
    code = process.wait(timeout=limit)
except subprocess.TimeoutExpired:
    process.kill()
    process.wait()
    print("hung")
    sys.exit(0)
seconds = time.monotonic() - start
how = ("signal " + signal.Signals(-code).name) if code < 0 else "exit %d" % code
# The watchdog fires at 10 s; a loaded machine may take a little longer to
# deliver and end the process, hence the margin.
print("%s %s" % (how, "in time" if seconds < 20 else "after %.0f s" % seconds))
