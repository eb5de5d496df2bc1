"""Weight prefetch inside a layer group (docs/compiler.md, "Weight prefetch"): which
members read their weights from L2, fetched there during earlier members that leave the
DDR idle.

A member is worth it when the cost model says the DDR takes a good share of its time
(``READER_DDR_SHARE``), or one of its weights takes a tenth of its time to fetch
(``FETCH_SHARE``, ``FETCH_MIN_BYTES``), and that, lowered with its weights in L2, it runs faster (its other
large inputs are asked about in turn, the largest first, with those already planned in L2). Its weights are then fetched during the members just
before it, each giving at most ``share`` of the cycles it leaves the DDR idle, while the
group's intermediates, the prefetched weights live at that member and the largest
member's own L2 buffers fit L2. Members are taken in order, and one whose weights come
from L2 leaves the DDR idle for the next.
"""
from typing import Any, Callable, Sequence

from ..arch import params as _params

DDR_BYTES_PER_CYCLE = _params()["ddr_bytes_per_cycle"]
DDR_LATENCY = _params()["ddr_latency"]
# of a member's DDR-idle cycles a prefetch may take (its own loads keep the rest): the driver
# plans with each and keeps the group the cost model finds fastest (taking more leaves the
# readers less to wait for, but slows the members fetching when they load more than estimated;
# the members are planned in order, each taking the donors nearest it, so a share moves which
# readers find donors at all: the groups' cycles do not follow the share smoothly). The
# driver plans with MORE_SHARES too when the largest of SHARES was the fastest.
SHARES = (0.3, 0.4, 0.5)
MORE_SHARES = (0.6, 0.65, 0.7)
# a plan whose weights are all in L2 a member before their reader (``gap`` 1: the member
# before the reader then loads their first blocks into L1, the layer group's handoff) takes
# this share of its donors' DDR-idle cycles
HANDOFF_SHARE = 0.7
MIN_BYTES = 8 << 10  # smaller weights are not worth a member's L2
MIN_GAIN = 0.05  # of the member's cycles
DDR_BOUND = 0.6  # a member whose DDR cycles reach this share of its cycles is bound by the DDR
READER_DDR_SHARE = 0.35  # a reader worth asking about: its DDR cycles reach this share
# or a weight of at least FETCH_MIN_BYTES whose fetch alone takes this share of its reader's
# cycles: the DDR then does little of the reader's time but sits at its start (a projection
# after a squeeze-excite stages its 75 KB of weights into L2 before any core may read them)
FETCH_SHARE = 0.1
FETCH_MIN_BYTES = 64 << 10


def plan(members: Sequence[dict[str, Any]], rows: Sequence[Sequence[int]], weights: dict[int, int],
         live: Sequence[int], free_l2: int, in_l2: Callable[[int, tuple[int, ...]], tuple[int, int] | None],
         share: float = SHARES[0], inputs: dict[int, int] | None = None, gap: int = 0,
         wait: int = 0) -> list[tuple[int, int, int, int]]:
    """Prefetch rows ``(tensor, member, begin, end)`` for ``compiler.GroupKernels``.

    ``members``: the cost model's per-member ``cycles`` and ``ddr_cycles`` in the group;
    ``rows``: each member's tensor ids; ``weights``: constant input id -> bytes;
    ``live``: bytes of intermediates live at each member; ``free_l2``: the L2 the arena may
    take; ``in_l2(k, ids)``: the cycles and DDR cycles of member k with the tensors ``ids``
    (a tuple: those already planned for it, then the one asked about) in L2 (None when it
    cannot be lowered so); ``share``: of a donor's DDR-idle cycles, what
    its prefetches may take; ``inputs``: the group's other inputs (activations in the DDR)
    -> bytes: one read by two members (a residual) may be fetched for its second reader,
    the first reading the DDR; ``gap``: donors start that many members further from the
    reader (1: the member just before it then hands the weights from L2 into its L1);
    ``wait``: cycles taken off each donor's share before its bytes (``DDR_LATENCY``: its
    pieces' engine waits on the DDR's latency, which a short member's end does not hide).
    """
    n = len(members)
    cycles = [int(m["cycles"]) for m in members]
    ddr = [int(m["ddr_cycles"]) for m in members]
    used = [0] * n  # bytes already fetched during each member
    held = list(live)  # L2 bytes live at each member, prefetched weights included
    inputs = inputs or {}
    first_reader, second_reader = {}, {}
    for k, row in enumerate(rows):
        for t in row:
            if t in first_reader and first_reader[t] != k:
                second_reader.setdefault(t, k)
            first_reader.setdefault(t, k)
    sizes = {**inputs, **weights}
    out = []
    for j in range(n):
        ids = [t for t in rows[j] if sizes.get(t, 0) >= MIN_BYTES
               and (first_reader[t] == j if t in weights else second_reader.get(t) == j)]
        waits = any(t in weights and sizes[t] >= FETCH_MIN_BYTES
                    and sizes[t] / DDR_BYTES_PER_CYCLE >= FETCH_SHARE * cycles[j] for t in ids)
        if not ids or (ddr[j] < READER_DDR_SHARE * cycles[j] and not waits):
            continue
        taken = []  # the member's tensors fetched so far (the cost model asked with them all)
        # the largest first; one declined is asked again once another is fetched (with that
        # one in L2 the member may wait for it where it did not before)
        waiting = sorted(ids, key=lambda i: -sizes[i])
        asked = set()
        while waiting:
            key = tuple(taken)
            t = next((i for i in waiting if (key, i) not in asked), None)
            if t is None:
                break
            asked.add((key, t))
            size = sizes[t]
            last = max(k for k, row in enumerate(rows) if t in row)
            if max(held[j:last + 1]) + size > free_l2:
                continue
            need, take, i = size, [], j - 1 - gap
            # (an input read before: donors after its first reader, so that j reads the copy)
            lowest = -1 if t in weights else first_reader[t]
            while need > 0 and i > lowest and held[i] + size <= free_l2:
                spare = 0
                if ddr[i] < DDR_BOUND * cycles[i]:  # a member the DDR bounds has nothing to give
                    spare = int(((cycles[i] - ddr[i]) * share - wait) * DDR_BYTES_PER_CYCLE) - used[i]
                spare = spare // 4096 * 4096
                if spare > 0:
                    b = min(spare, need)
                    take.append((i, b))
                    need -= b
                i -= 1
            if need > 0:
                continue
            # (asked last: lowering the member again is the expensive part)
            est = in_l2(j, tuple(taken + [t]))
            if est is None or cycles[j] - est[0] < MIN_GAIN * cycles[j]:
                continue
            begin = 0
            for i, b in reversed(take):  # the earliest member fetches the first bytes
                out.append((t, i, begin, begin + b))
                used[i] += b
                begin += b
            for k in range(take[-1][0], last + 1):
                held[k] += size
            cycles[j], ddr[j] = est
            taken.append(t)
            waiting.remove(t)
    return out
