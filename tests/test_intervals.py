"""IntervalSet: adding many ranges at once gives the same set as adding them one by one."""

from hypothesis import given, settings
from hypothesis import strategies as st

from topocast.intervals import IntervalSet

ranges = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 30)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(ranges, ranges)
def test_add_ranges_equals_one_by_one(first, second):
    batch = IntervalSet(first)
    batch.add_ranges(second)
    single = IntervalSet()
    for off, length in first + second:
        single.add(off, off + length)
    assert (batch.starts, batch.ends, batch.total) == (single.starts, single.ends, single.total)
    covered = {x for off, length in first + second for x in range(off, off + length)}
    assert batch.total == len(covered)
    assert all(batch.covers(x, x + 1) for x in covered)
