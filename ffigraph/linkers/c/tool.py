"""Running the compiler (or any build tool) with a time limit, killing everything it started."""
from __future__ import annotations

import os
import signal
import subprocess


def tool_env():
    """The compiler's environment: ours (None), less a preloaded sanitizer runtime, which would only
    make gcc itself twice as slow."""
    preload = os.environ.get("LD_PRELOAD", "")
    if "san" not in preload:
        return None
    kept = [p for p in preload.replace(":", " ").split()
            if not os.path.basename(p).startswith(("libasan", "libubsan", "liblsan", "libtsan"))]
    env = dict(os.environ)
    if kept:
        env["LD_PRELOAD"] = " ".join(kept)
    else:
        del env["LD_PRELOAD"]
    return env


def _kill_group(proc):
    """Kill the compiler and every process it started (they share its new session's process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):   # already gone (or no process groups here): the child at least
        try:
            proc.kill()
        except OSError:
            pass


def _reap(proc):
    """Collect a killed compiler's exit status and whatever output it wrote, without waiting on a
    grandchild that escaped the group and still holds the pipe."""
    try:
        return proc.communicate(timeout=5)[0] or ""
    except subprocess.TimeoutExpired:
        if proc.stdout is not None:
            proc.stdout.close()
        proc.wait()
        return ""


def signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def run_tool(command, timeout):
    """Run ``command`` in a session of its own: (exit status, output). Past ``timeout`` seconds (or on
    an interrupt) it is killed with every process it started (cc1, as, ld, or whatever a wrapper
    script runs), not just the driver, and subprocess.TimeoutExpired (with its output) is raised.
    OSError when it cannot be started."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                            start_new_session=True, env=tool_env())
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise subprocess.TimeoutExpired(command, timeout, output=_reap(proc)) from None
    except BaseException:
        _kill_group(proc)
        _reap(proc)
        raise
    return proc.returncode, output
