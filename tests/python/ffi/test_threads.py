"""Thread safety: concurrent calls and registry use from several Python threads."""
import threading

import tilecore
from tilecore import testing


def _run_threads(n, target):
    errors = []

    def wrapped(i):
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_concurrent_calls_and_registry_reads():
    def work(i):
        echo = tilecore.get_global_func("testing.echo")
        for j in range(2000):
            assert echo(j) == j
            assert testing.apply(lambda x: x * 2, j) == 2 * j
            if j % 200 == 0:
                assert "testing.echo" in tilecore.list_global_func_names()

    _run_threads(8, work)


def test_concurrent_registration(unique_name):
    def work(i):
        name = f"{unique_name}.{i}"
        for j in range(50):
            tilecore.register_func(name, lambda j=j: j, override=True)
            assert tilecore.get_global_func(name)() == j
        tilecore.remove_global_func(name)

    _run_threads(6, work)


def test_callbacks_from_cpp_threads_while_python_threads_call():
    counter = []
    lock = threading.Lock()

    def cb(x):
        with lock:
            counter.append(x)
        return x

    def work(i):
        for j in range(100):
            assert testing.apply_in_thread(cb, j) == j

    _run_threads(4, work)
    assert len(counter) == 400
