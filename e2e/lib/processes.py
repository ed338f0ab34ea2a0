"""Stopping the processes a harness started.

``stop(proc)`` asks a process to end (SIGTERM) and waits; one that does not
end within the timeout is killed. Only the harness's own children are ever
signalled.
"""

from __future__ import annotations

import subprocess


def stop(proc: subprocess.Popen, timeout: float = 10) -> None:
    """Terminates `proc` (if it still runs) and reaps it; kills it after `timeout` s."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
