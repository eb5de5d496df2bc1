"""tdb in a terminal: a pseudo-terminal session where tab completion is seen on screen."""
import os
import re
import sys
import time

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import tdb_kernels as K  # noqa: E402
from pty_terminal import Terminal  # noqa: E402




@pytest.fixture
def terminal(tmp_path):
    path = tmp_path / "axpy.tcm"
    K.build_module(path)
    np.savez(tmp_path / "in.npz", **K.inputs())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), TERM="dumb", INPUTRC="/dev/null")
    t = Terminal([sys.executable, "-m", "tilecore", "tdb", str(path), "--inputs", str(tmp_path / "in.npz")], env)
    t.module_path = path
    yield t
    t.close()


def test_terminal_session_with_tab_completion(terminal):
    t = terminal
    t.read_until("(tdb) ")
    t.send("b dma.o\t")
    t.read_until("b dma.out")            # the mnemonic completed on screen
    t.send("\n")
    t.read_until("Breakpoint 1: instruction dma.out")
    t.send("b tmu\t")                    # completes the common prefix of tmul, tmuls
    t.read_until("b tmul")
    t.send("\t\t")                       # further tabs list the candidates
    screen = t.read_until("tmuls")
    assert re.search(r"tmul\s+tmuls", screen)
    t.send("s\n")
    t.read_until("Breakpoint 2: instruction tmuls")
    t.send("inf\t")
    t.read_until("(tdb) info")
    t.send(" prog\t")
    t.read_until("info progress")
    t.send("\n")
    t.read_until("*** info: the program is not started")
    t.send("run\n")
    t.read_until("Breakpoint 2, instruction tmuls")
    t.send("delete 2\n")
    t.send("c\n")
    t.read_until("Breakpoint 1, instruction dma.out")
    t.send("py tdb.targ\t")
    t.read_until("py tdb.target")        # py completes in the debugger's namespace
    t.send("\n")
    t.send("x/4 ou\t")
    t.read_until("x/4 out")
    t.send("\n")
    t.read_until("int32[4]")
    t.send("\n")                         # an empty line repeats the last command
    screen = t.read_until("(tdb) ")
    # Every other command and breakpoint kind, typed at the prompt: each gives one
    # more prompt and its own words, and none a traceback.
    typed = K.every_command(K.first_instruction_line(t.module_path))
    for command, words in typed:
        mark = len(t.screen)
        t.send(command + "\n")
        t.read_until(words or "", since=mark)
        screen = t.read_until("(tdb) ", since=mark + len(command))  # the next prompt: the command is done
        if words is not None and not words.startswith("***"):
            assert "***" not in screen[mark:], (command, screen[mark:])
    assert "Traceback" not in t.read_until("(tdb) ")
    t.send("quit\n")
    deadline = time.time() + 60
    while time.time() < deadline:
        pid, status = os.waitpid(t.pid, os.WNOHANG)
        if pid:
            assert os.waitstatus_to_exitcode(status) == 0
            t.pid = None
            break
        time.sleep(0.1)
    else:
        raise AssertionError("tdb did not exit on quit")
    t.close = lambda: None
