"""Reference models of the packet path (nanobpf.models.pktpath): the core select policies' decisions, the
free list of the reassembly buffer, the reorder scoreboard and the ideal-queue yardstick."""
import random

import pytest

from nanobpf.models.pktpath import CoreSelect, Reasm, ReorderCheck, comp_word, desc_fields, ideal_single_queue


def test_policies_decide():
    m = CoreSelect(4, depth=8, policy="jbsq", bound=2)
    m.outstanding = [2, 1, 0, 0]
    assert m.decide(0) == 2  # fewest outstanding, lowest index on ties
    m.outstanding = [2, 2, 2, 2]
    assert m.decide(0) is None
    m.policy = "sjbsq"
    m.outstanding = [0, 2, 2, 1]
    assert m.decide(1) == 3 and m.decide(4) == 0 and m.decide(3) == 3
    m.policy = "rss"
    assert m.limit() == 8 and m.decide(6) == 2
    m.outstanding[2] = 8
    assert m.decide(6) is None
    m.policy = "rr"
    m.outstanding = [0] * 4
    picks = []
    for s in range(6):
        c = m.decide(0)
        m.dispatch(c, s)
        picks.append(c)
    assert picks == [0, 1, 2, 3, 0, 1]
    assert not m.complete(0, 0), "completed before it was popped"
    m.pop(0, 0)
    assert not m.complete(3, 0) and m.complete(0, 0) and not m.complete(0, 0)


def test_reasm_free_list():
    r = Reasm(slots=2)
    a, b = r.frame(b"x" * 60), r.frame(b"y" * 60)
    assert r.frame(b"z" * 60) is None and r.counters["rx_drop_full"] == 1
    assert [desc_fields(d)["slot"] for d, _ in (a, b)] == [0, 1]
    assert [desc_fields(d)["seq"] for d, _ in (a, b)] == [0, 1]
    r.release(1)
    assert r.frame(b"q", bad=True) is None and r.counters["rx_drop_bad"] == 1  # slot 1 stays free
    with pytest.raises(AssertionError):
        r.release(1)
    assert desc_fields(r.frame(b"w" * 70)[0])["slot"] == 1


def test_reorder_check_catches_disorder():
    c = ReorderCheck()
    r = Reasm(slots=4)
    descs = [r.frame(b"a" * 60)[0] for _ in range(3)]
    for d in descs:
        c.enq(d)
    words = [comp_word(slot=desc_fields(d)["slot"], action=2) for d in descs]
    for w in words:
        c.complete(w)
    with pytest.raises(AssertionError):  # slot 1 before slot 0, not late: 0 would have to be skipped
        c2 = ReorderCheck()
        for d in descs:
            c2.enq(d)
        c2.complete(words[1])
        c2.released(words[1], 0, 1, False)
        c2.released(words[0], 0, 0, False)
    assert [c.released(w, 0, i, False) for i, w in enumerate(words)] == [0, 1, 2]


def test_ideal_single_queue():
    assert ideal_single_queue([0, 0, 0], [10, 10, 10], 2) == [10, 10, 20]
    rng = random.Random(1)  # M/M/1 at load 0.5: mean sojourn 1 / (mu - lambda) = 2 (service mean 1)
    t, arr = 0.0, []
    for _ in range(200000):
        t += rng.expovariate(0.5)
        arr.append(t)
    soj = ideal_single_queue(arr, [rng.expovariate(1.0) for _ in arr], 1)
    assert abs(sum(soj) / len(soj) - 2.0) < 0.1
