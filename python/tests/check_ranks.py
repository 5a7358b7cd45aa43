"""strata.Solver on MPI ranks (run under mpirun, with mpi4py and a strata built with
`--features mpi`): every rank gives its block of the right-hand side and of the coefficient
fields, and the solution, iteration count and residual equal a one-process solve of the whole
problem (a panel; on the sphere each rank's tiles, with the whole sphere's fields); wrong shapes
and a bad value on one rank are errors on every rank, not a hang.

    mpirun -n 4 python python/tests/check_ranks.py
"""

import sys

import numpy as np
from mpi4py import MPI

import strata

comm = MPI.COMM_WORLD
rank = comm.rank
n, nz = 32, 16
y, x, z = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n), np.linspace(0, 1, nz), indexing="ij")
# Whole fields, the same on every rank (fixed seed): a right-hand side, smooth 3D kx, a jump in
# kz, and an advection vector for the non-symmetric case.
f = np.random.default_rng(7).standard_normal((n, n, nz))
kx = 1.0 + 0.5 * np.sin(6 * x + 2 * y) * np.cos(3 * z)
kz = np.where(z >= 0.5, 100.0, 1.0)
xi = (np.sin(3 * x) * np.cos(2 * y + z), np.cos(2 * x + z), 0.3 * np.sin(y))
failures = []


def check(what, ok, detail=""):
    if not ok:
        failures.append(f"rank {rank}: {what} {detail}")


for solver, with_xi in (("mg", False), ("mg-cg", False), ("gcr", True)):
    kwargs = dict(solver=solver, levels=3, backend="cpu", threads=1)
    s = strata.Solver(n, nz, comm=comm, **kwargs)
    i0, j0, nx, ny = s.block

    def block(a):
        return np.ascontiguousarray(a[j0 : j0 + ny, i0 : i0 + nx, :])

    check("shape", s.shape == (ny, nx, nz), str(s.shape))
    fields = dict(kx=block(kx), kz=block(kz))
    whole = dict(kx=kx, kz=kz)
    if with_xi:
        fields["xi"] = tuple(block(c) for c in xi)
        whole["xi"] = xi
    s.set_coefficients(**fields)
    u = s.solve(block(f))
    one = strata.Solver(n, nz, **kwargs)
    one.set_coefficients(**whole)
    u1 = one.solve(f)
    its, its1 = s.info["iterations"], one.info["iterations"]
    check(f"{solver}: iterations", its == its1, f"{its} on ranks, {its1} on one process")
    diff = np.abs(u - block(u1)).max() / np.abs(u1).max()
    # gcr's default cycle runs in fp32 inside its fp64 iteration: a last-bit difference of a
    # residual summed in another order can round to the neighbouring fp32 value, which the
    # iteration carries (1.3e-8 measured on 2 ranks, 2026-11-27; docs/MODEL.md section 22), so it
    # is held to the solve's rtol; mg (bit for bit) and mg-cg (1.2e-12) to 1e-9.
    bound = 1e-5 if solver == "gcr" else 1e-9
    check(f"{solver}: solution", diff < bound, f"max relative difference {diff:.3e}")
    r = np.linalg.norm(block(f) - s.apply(u)) ** 2
    r = np.sqrt(comm.allreduce(r)) / np.linalg.norm(f)
    check(f"{solver}: residual", r < 1e-5, f"{r:.3e}")
    if rank == 0:
        print(f"{solver} on {comm.size} ranks: {its} iterations (one process {its1}), "
              f"max relative difference {diff:.1e}, |f - A u| / |f| = {r:.2e}")

# The sphere: each rank holds whole panels or blocks of every panel (its tiles, the leading axis
# of its arrays) and takes the whole sphere's coefficient fields.
ns, nzs = 16, 8
fs = np.random.default_rng(11).standard_normal((6, ns, ns, nzs))
kzs = np.where(np.arange(nzs) >= nzs // 2, 50.0, 1.0) * np.ones((6, ns, ns, nzs))
kwargs = dict(geometry="sphere", solver="mg-cg", levels=2, backend="cpu", threads=1)
sph = strata.Solver(ns, nzs, comm=comm, **kwargs)


def tiles_of(a):
    return np.stack([a[p, j0 : j0 + ny_, i0 : i0 + nx_] for p, i0, j0, nx_, ny_ in sph.tiles])


check("sphere shape", sph.shape == tiles_of(fs).shape, f"{sph.shape} for tiles {sph.tiles}")
sph.set_coefficients(kz=kzs)
us = sph.solve(tiles_of(fs))
one = strata.Solver(ns, nzs, **kwargs)
one.set_coefficients(kz=kzs)
us1 = one.solve(fs)
its, its1 = sph.info["iterations"], one.info["iterations"]
check("sphere: iterations", its == its1, f"{its} on ranks, {its1} on one process")
diff = np.abs(us - tiles_of(us1)).max() / np.abs(us1).max()
check("sphere: solution", diff < 1e-9, f"max relative difference {diff:.3e}")
if rank == 0:
    print(f"sphere mg-cg on {comm.size} ranks ({len(sph.tiles)} tiles on rank 0): {its} iterations "
          f"(one process {its1}), max relative difference {diff:.1e}")

# The whole field where a block is needed: an error naming the shape, on this rank alone (no
# collective call starts).
if comm.size > 1:
    try:
        s.solve(f)
        check("whole rhs on a rank", False, "was accepted")
    except ValueError as e:
        check("whole rhs on a rank", "shape" in str(e), str(e))
# A bad value on the last rank only: every rank's call fails (collective agreement), none hangs.
bad = block(kx).copy()
if rank == comm.size - 1:
    bad[0, 0, 0] = -1.0
try:
    s.set_coefficients(kx=bad)
    check("bad kx on the last rank", False, "was accepted")
except ValueError as e:
    check("bad kx on the last rank", "kx" in str(e) or "rank" in str(e), str(e))
# comm must be a communicator.
try:
    strata.Solver(n, nz, comm="world", backend="cpu")
    check("comm='world'", False, "was accepted")
except ValueError as e:
    check("comm='world'", "mpi4py" in str(e), str(e))

failures = [f for r in comm.allgather(failures) for f in r]
if rank == 0:
    print("\n".join(failures) if failures else f"ranks: all checks passed on {comm.size} ranks")
# Solvers outliving MPI (finalised first, as at an interpreter's exit in some orders) are dropped
# without touching their communicators: no MPI error, no crash.
MPI.Finalize()
del s, sph
sys.exit(1 if failures else 0)
