"""The build progress bar (driver/progress.py): shown on a terminal once a build has run
for a while, never in pipes (so never in tests or logs), off with TK_PROGRESS=0."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import textwrap

BUILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tensorkiln as tk
    from tensorkiln.driver import progress
    progress.DELAY_SECONDS = float(sys.argv[1])
    tk.set_cache_dir(None)
    b = tk.GraphBuilder()
    x = b.input("x", (4, 9))
    h = x
    for k in range(6):
        h = b.tanh(b.dense(h, np.full((9, 9), 0.1 * k, "f4")))
    lib = tk.build(b.finish(h))
    print("built", lib(np.ones((4, 9), "f4")).shape)
    """
)


def _run_on_a_terminal(delay: float, env: dict[str, str] | None = None) -> tuple[str, str]:
    """stdout (a pipe) and what the build wrote to stderr, a pseudo-terminal."""
    main, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal's size
    run = subprocess.Popen(
        [sys.executable, "-c", BUILD, str(delay)], stdout=subprocess.PIPE, stderr=terminal, text=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    os.close(terminal)
    written = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # (the terminal closed: the build ended)
            break
        if not chunk:
            break
        written += chunk
    out, _ = run.communicate(timeout=600)
    os.close(main)
    assert run.returncode == 0, written.decode(errors="replace")
    return out, written.decode(errors="replace")


def test_a_terminal_shows_the_bar_of_a_long_build():
    out, shown = _run_on_a_terminal(delay=0.0)  # (every build counts as long)
    assert "built (4, 9)" in out
    assert "building main" in shown and "%|" in shown
    assert "llvm" in shown  # the step it was at


def test_a_short_build_shows_nothing():
    _, shown = _run_on_a_terminal(delay=1000.0)
    assert "building" not in shown


def test_tk_progress_0_turns_it_off():
    _, shown = _run_on_a_terminal(delay=0.0, env={"TK_PROGRESS": "0"})
    assert "building" not in shown


def test_a_pipe_gets_nothing():
    done = subprocess.run([sys.executable, "-c", BUILD, "0"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "building" not in done.stderr and "%|" not in done.stderr
