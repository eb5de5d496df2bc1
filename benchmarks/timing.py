"""benchmarks/timing.py — the timer the benchmark scripts share (imported from the
script's own folder, which Python puts first on the path)."""
import statistics
import time


def timed(fn, repeat):
    """(median seconds of `repeat` calls of fn(), what the last call returned)."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result
