"""The preconditioner on its own (Solver.precondition) on a GPU solver against the CPU's: the
paper's fp64 configuration gives the same z to rounding, one V-cycle of mg-cg reduces the
residual, and a singular sphere (delta = 0) is solved on the GPU with projection, its answer of
zero volume-weighted mean. Run by scripts/gpu-check singular; prints one line per check."""
import sys

import numpy as np
import strata


def main() -> int:
    ok = True
    rng = np.random.default_rng(1)
    n, nz = 64, 32
    r = rng.standard_normal((n, n, nz))
    z = {}
    for backend in ("cpu", "cuda"):
        s = strata.Solver(n, nz, solver="mg-cg", levels=4, paper=True, backend=backend)
        z[backend] = s.precondition(r)
        res = np.linalg.norm(r - s.apply(z[backend])) / np.linalg.norm(r)
        print(f"precondition {backend}: |r - A P r| / |r| = {res:.3e}")
        ok &= res < 0.5
    diff = np.abs(z["cuda"] - z["cpu"]).max() / np.abs(z["cpu"]).max()
    print(f"precondition cuda against cpu (paper, fp64): max difference {diff:.2e}")
    ok &= diff < 1e-10
    s = strata.Solver(32, 16, geometry="sphere", delta=0.0, project_rhs=True, backend="cuda")
    f = rng.standard_normal(s.shape)
    u = s.solve(f)
    info = s.info
    print(f"singular sphere cuda 6x32^2x16: {info['iterations']} iterations, converged "
          f"{info['converged']}, incompatible part {info['incompatible']:.3e}")
    ok &= bool(info["converged"])
    try:
        strata.Solver(32, 16, geometry="sphere", delta=0.0, backend="cuda").solve(f)
        print("singular sphere without projection: solved (should be refused)")
        ok = False
    except ValueError as e:
        print(f"singular sphere without projection: refused ({str(e)[:60]}...)")
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
