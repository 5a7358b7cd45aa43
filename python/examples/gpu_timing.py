"""Timing of strata.Solver with CuPy arrays on the GPU: creation, then solves of the same rhs
(a model's time steps), each timed around the call (synchronised) against the solver's own
time; then the same with NumPy arrays, which go through the host. Usage:
python gpu_timing.py [n] [nz] [solver] [steps]"""
import sys
import time

import cupy as cp
import numpy as np
import strata

n = int(sys.argv[1]) if len(sys.argv) > 1 else 2048
nz = int(sys.argv[2]) if len(sys.argv) > 2 else 128
solver = sys.argv[3] if len(sys.argv) > 3 else "mg"
steps = int(sys.argv[4]) if len(sys.argv) > 4 else 5

# A model's fields are on the GPU before it makes its solver: the CUDA context exists (its
# creation, timed here, is the caller's, not strata's).
t = time.perf_counter()
f = cp.asarray(np.random.default_rng(1).uniform(-1e-6, 1e-6, (n, n, nz)))
cp.cuda.Device().synchronize()
print(f"CUDA context and the rhs on the GPU: {time.perf_counter() - t:.3f} s")
t = time.perf_counter()
# A name from the command line (the stubs type `solver` as the literal names): strata checks it.
s = strata.Solver(n, nz, solver=solver, backend="cuda")  # type: ignore[arg-type]
phases = ", ".join(f"{k} {v:.3f} s" for k, v in s.setup.items())
print(f"python, {solver}, {n}x{n}x{nz}: created in {time.perf_counter() - t:.3f} s ({phases})")
u = cp.zeros_like(f)
worst = 0.0
for step in range(steps):
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    s.solve(f, out=u)
    cp.cuda.Device().synchronize()
    wall = time.perf_counter() - t
    info = s.info
    assert info is not None
    ratio = wall / info["seconds"]
    if step > 0:
        worst = max(worst, ratio)
    print(f"cupy step {step}: {info['iterations']} its, call {wall:.4f} s, "
          f"solver {info['seconds']:.4f} s, ratio {ratio:.4f}")
r = float(cp.linalg.norm(s.apply(u) - f) / cp.linalg.norm(f))
print(f"|f - A u| / |f| = {r:.2e}; worst call / solver time after the first: {worst:.4f}")
fh = cp.asnumpy(f)
t = time.perf_counter()
uh = s.solve(fh)
wall = time.perf_counter() - t
info = s.info
assert info is not None
print(f"numpy (through the host): call {wall:.4f} s, solver {info['seconds']:.4f} s, "
      f"ratio {wall / info['seconds']:.4f}; same answer: {np.array_equal(uh, cp.asnumpy(u))}")
