"""Joining FolioDB's background threads, and interpreter exit.

Every FolioDB thread is a daemon (the loop's, connections', the accept thread,
the cursor reaper, the TTL monitor), so a process never waits for one to exit.
A client not closed by its program is closed by its ``__del__`` as the
interpreter finalizes, and from Python 3.13 on daemon threads never run again
once finalization has begun (PEP 703's era: they hang on the interpreter
lock): a join there waits its whole timeout, 35 s in all for a dbpath owner
that had shared its engine. So a join while the interpreter finalizes does not
wait: the thread will never run, and the process is ending anyway.
"""

from __future__ import annotations

import sys
import threading


def join(thread: threading.Thread, timeout: float) -> None:
    """Wait up to ``timeout`` seconds for ``thread`` to end; not at all when it is this thread,
    or when the interpreter is finalizing (see the module docstring)."""
    if thread is threading.current_thread() or sys.is_finalizing():
        return
    thread.join(timeout)
