"""Running a check on a thread with a small C stack, so that a walk that takes a C++
frame per level of a deep value overflows it instead of passing by luck."""
import threading

STACK_BYTES = 256 << 10


def run_on_small_stack(body):
    """Runs body() on a thread with a 256 KiB stack; returns what it returned, re-raises
    what it raised."""
    result = {}

    def target():
        try:
            result["value"] = body()
        except BaseException as e:  # noqa: BLE001  (handed back to the test's thread)
            result["error"] = e

    old = threading.stack_size(STACK_BYTES)
    try:
        thread = threading.Thread(target=target)
        thread.start()
    finally:
        threading.stack_size(old)
    thread.join()
    if "error" in result:
        raise result["error"]
    return result.get("value")
