"""The c target's cores as threads (a `cores` loop with a barrier): cores call Python from
their threads, and a core that fails, or a thread that cannot be created, ends the kernel
with an error instead of leaving the other cores waiting at a barrier forever (a hang) or
aborting the process. Each case runs in a
child process (reliability_helpers), so a regression shows as a failing test."""
import os

from reliability_helpers import run_isolated

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = f'''
import sys
sys.path.insert(0, {HERE!r})
import c_cluster_kernels as K
mod = tilecore.build(K.phases, target="c")
a = np.arange(32, dtype=np.int32)
out = np.zeros(1, np.int32)
'''


def test_cores_as_threads_call_python():
    # Every core calls back into Python from its own thread: the kernel runs without the GIL.
    snippet = KERNEL + "K.REFUSED['core'] = -1\nmod['phases'](a, out)\nRESULT = int(out[0])\n"
    assert run_isolated(snippet, timeout=60).expect_ok() == str(0 + 8 + 16 + 24)


def test_a_failing_core_releases_the_others_waiting_at_a_barrier():
    outcome = run_isolated(KERNEL + "mod['phases'](a, out)\n", timeout=60)
    outcome.expect("KeyError", "core 1 refused")


def test_a_thread_that_cannot_start_is_an_error_not_an_abort():
    # Each new thread gets a 1 GiB stack and the address space has room for about one:
    # pthread_create fails for a later core.
    snippet = KERNEL + '''
K.REFUSED['core'] = -1
import ctypes, resource
libc = ctypes.CDLL(None)
attr = ctypes.create_string_buffer(128)
assert libc.pthread_attr_init(attr) == 0
assert libc.pthread_attr_setstacksize(attr, ctypes.c_size_t(1 << 30)) == 0
assert libc.pthread_setattr_default_np(attr) == 0
vm = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (vm + (3 << 29), vm + (3 << 29)))
mod['phases'](a, out)
'''
    outcome = run_isolated(snippet, timeout=60)
    outcome.expect("RuntimeError", "could not start a thread", "phases")
