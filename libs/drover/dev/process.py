"""Child processes that never outlive the process that started them."""

from __future__ import annotations

import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """For ``Popen(preexec_fn=...)``: SIGTERM this child when its parent dies
    (Linux PR_SET_PDEATHSIG), so even a ``kill -9`` of a test run or of
    `drover dev` leaves no etcd or service behind."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def new_session_dying_with_parent() -> None:
    """``die_with_parent`` in a new session (its own process group)."""
    os.setsid()
    die_with_parent()
