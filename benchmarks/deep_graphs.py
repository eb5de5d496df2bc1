"""benchmarks/deep_graphs.py — JSON save and load, structural equality and hashing and
freeing of a chain of N nested values, next to the same work on a wide graph of the same
N nodes (one Array holding N one-element Arrays). The walks keep their place on a heap
stack, so depth should cost nothing: the deep/wide ratio stays near 1 as N grows.

    python benchmarks/deep_graphs.py --nodes 100000 1000000 --repeat 3
"""
import argparse
import time

from timing import timed


def deep(tilecore, n, leaf):
    node = tilecore.convert(leaf)
    for _ in range(n):
        node = tilecore.convert([node])
    return node


def wide(tilecore, n, leaf):
    one = [tilecore.convert([leaf]) for _ in range(n - 1)]
    return tilecore.convert(one + [tilecore.convert([leaf])])


def measure(tilecore, make, n, repeat):
    a, b = make(tilecore, n, 1), make(tilecore, n, 1)
    t_save, text = timed(lambda: tilecore.save_json(a), repeat)
    t_load, back = timed(lambda: tilecore.load_json(text), repeat)
    t_eq, same = timed(lambda: tilecore.structural_equal(a, b), repeat)
    assert same and tilecore.structural_equal(back, a)
    t_hash, h = timed(lambda: tilecore.structural_hash(a), repeat)
    assert h == tilecore.structural_hash(back)

    def free():
        copies = [tilecore.load_json(text) for _ in range(repeat)]
        t0 = time.perf_counter()
        copies.clear()
        return (time.perf_counter() - t0) / repeat

    return {"save": t_save, "load": t_load, "equal": t_eq, "hash": t_hash, "free": free()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[100000, 1000000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import tilecore

    print(f"{'nodes':>9} {'step':>6} {'deep s':>9} {'wide s':>9} {'deep/wide':>9}")
    for n in args.nodes:
        d = measure(tilecore, deep, n, args.repeat)
        w = measure(tilecore, wide, n, args.repeat)
        for step in d:
            print(f"{n:>9} {step:>6} {d[step]:>9.4f} {w[step]:>9.4f} {d[step] / w[step]:>9.2f}")


if __name__ == "__main__":
    main()
