"""tests/python/pty_terminal.py — a program run in a pseudo-terminal, for tests that must
see what a person would see (readline's tab completion, prompts)."""
import os
import pty
import select
import time


class Terminal:
    def __init__(self, argv, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execvpe(argv[0], argv, env)
        self.screen = b""

    def read_until(self, text, timeout=120, since=0):
        """Reads until ``text`` is on the screen (after byte ``since``); returns the screen."""
        end = time.time() + timeout
        while text.encode() not in self.screen[since:].replace(b"\x07", b""):  # without readline's bell
            left = end - time.time()
            if left <= 0:
                raise AssertionError(f"did not see {text!r}; screen so far:\n{self.screen.decode(errors='replace')[-2000:]}")
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                self.screen += chunk
        return self.screen.replace(b"\x07", b"").decode(errors="replace")

    def send(self, text):
        os.write(self.fd, text.encode())

    def close(self):
        """Kills the program unless a test already reaped it (and set pid to None)."""
        if not self.pid:
            return
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
