"""A model's time loop calling strata from Python: set up once, solve every step with a new
right-hand side (warm-started from the last solution), change the coefficient fields halfway,
check each residual with strata's own operator. On the GPU with CuPy arrays when both are there
(`python timesteps.py cuda`), else on the CPU with NumPy arrays."""
import sys
from typing import Literal

import numpy as np
import strata

# strata's stubs name the backends; a type checker then catches a misspelt one.
backend: Literal["cpu", "cuda"] = "cuda" if sys.argv[1:2] == ["cuda"] else "cpu"
if backend == "cuda":
    import cupy as xp
else:
    xp = np

n, nz = 64, 32
s = strata.Solver(n, nz, solver="mg-cg", levels=4, backend=backend)
print(s, "created:", ", ".join(f"{k} {v:.3f} s" for k, v in s.setup.items()))
y, x, z = np.meshgrid(np.arange(n), np.arange(n), np.arange(nz), indexing="ij")
u = xp.zeros(s.shape)
for step in range(4):
    if step == 2:  # the model's state changed: a stiffer upper atmosphere
        kz = np.where(z >= nz // 2, 100.0, 1.0)
        s.set_coefficients(kz=xp.asarray(kz))
    f = xp.asarray(1e-6 * np.sin(0.2 * x + 0.1 * y + 0.3 * step) * np.cos(0.4 * z))
    s.solve(f, out=u, x0=u)  # warm start in place
    rel = float(xp.linalg.norm(s.apply(u) - f) / xp.linalg.norm(f))
    info = s.info
    assert info is not None  # None only before the first solve
    print(f"step {step}: {info['iterations']} iterations, |f - A u| / |f| = {rel:.2e}")
    assert info["converged"] and rel < 1e-4
print("ok")
