"""Thresholds that choose between the simulator's code paths; every path gives the same
rates (tests/sim/test_incremental.py runs the simulator with each forced)."""

# a local recomputation stops growing past a quarter of the flowing transfers, kept between
# these two numbers of flows (or past an eighth of them, if more): then every flowing transfer
# is recomputed in one vectorised pass
LOCAL_COMPONENT_MIN = 64
LOCAL_COMPONENT_LIMIT = 4096
# up to this many transfers, per-event bookkeeping works on Python scalars (numpy's per-call
# overhead would dominate)
SMALL = 8
# a resource crossed by more transfers than this in the whole plan keeps a set of the ones
# flowing over it; the others are looked up from the routes when needed (_resource_users)
BUSY = 64
# groups of up to this many flows are solved on Python scalars (rates.SmallRates)
SMALL_SOLVE = 48
# the fast core solves groups on compiled kernels (sim.kernels, numba installed) once its
# groups have held this many flows in all, and COMPILE_PER_TRANSFER times as many as the
# plan has transfers: numba's import and cache load cost about what the scalar solves of
# that many flows do, and pay back only where flows are solved again and again (a plan whose
# flows are each solved about once, however large, stays on scalars)
COMPILE_AFTER = 250_000
COMPILE_PER_TRANSFER = 8
# the fast core runs plans that qualify for the compiled event loop (sim.loop, numba
# installed) on it from this many transfers: below, numba's start (its import and the
# set-up of its compiler at the first kernel call) costs more than the engine's loop; the
# break-even, measured per family in docs/performance.md, lies between a few hundred and a
# few thousand transfers
LOOP_AFTER = 1000
