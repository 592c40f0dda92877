"""When topocast.mpi counts a machine as crowded (its waits then sleep between polls instead
of spinning): more ranks than the cores their affinities cover together, machine by machine."""

import numpy as np

from topocast.mpi.state import MASK_CPUS, crowds


def _row(name: int, cpus) -> np.ndarray:
    bits = np.zeros(MASK_CPUS, dtype=np.uint8)
    bits[list(cpus)] = 1
    return np.concatenate(([name], np.packbits(bits).view(np.int64)))


def test_ranks_bound_one_per_core_are_not_crowded():
    every = np.array([_row(7, [c]) for c in range(4)])
    assert not crowds(every, 7)


def test_ranks_sharing_two_cores_are_crowded():
    every = np.array([_row(7, [0, 1]) for _ in range(4)])
    assert crowds(every, 7)


def test_ranks_bound_to_one_core_together_are_crowded():
    every = np.array([_row(7, [3]), _row(7, [3])])
    assert crowds(every, 7)


def test_only_the_ranks_of_the_same_machine_count():
    every = np.array([_row(7, [0]), _row(7, [1]), _row(9, [0]), _row(9, [0]), _row(9, [0])])
    assert not crowds(every, 7) and crowds(every, 9)
