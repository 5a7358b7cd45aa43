"""The exported operator, checked as a SciPy user would (the operator issue's verification (b)):
`strata operator --export` writes A and f as Matrix Market files (the panel, the box, coefficient
fields with advection, the whole sphere, zero-flux and periodic sides, and orography), `strata solve --output` writes
strata's solution u as NetCDF-3; SciPy reads both, checks A u = f, solves A x = f directly and
compares x with u. Run by scripts/test; usage: python3 check_export.py path/to/strata WORKDIR
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse.linalg


def run(*args):
    subprocess.run(args, check=True, capture_output=True)


def coefficient_file(path, n, nz):
    """kx varying in x, a jump of 100 in kz, and an advection vector: a non-symmetric operator."""
    rng = np.random.default_rng(7)
    y, x, z = np.meshgrid(np.arange(n), np.arange(n), np.arange(nz), indexing="ij")
    fields = {
        "kx": 1.0 + 0.5 * np.sin(0.7 * x),
        "kz": np.where(z >= nz // 2, 100.0, 1.0),
        "xi_x": rng.uniform(-1, 1, (n, n, nz)),
        "xi_y": rng.uniform(-1, 1, (n, n, nz)),
        "xi_z": rng.uniform(-1, 1, (n, n, nz)),
    }
    with scipy.io.netcdf_file(str(path), "w", version=2) as nc:
        for d, size in (("y", n), ("x", n), ("z", nz)):
            nc.createDimension(d, size)
        for name, values in fields.items():
            v = nc.createVariable(name, "d", ("y", "x", "z"))
            v[:] = values


def orography_file(path, n):
    """A ridge along y with a hill on it: slopes in both directions (MODEL.md section 23)."""
    y, x = np.meshgrid((np.arange(n) + 0.5) / n, (np.arange(n) + 0.5) / n, indexing="ij")
    h = 0.03 * np.exp(-((x - 0.5) ** 2) / 0.02) * (1.0 + 0.5 * np.sin(2 * np.pi * y))
    with scipy.io.netcdf_file(str(path), "w", version=2) as nc:
        nc.createDimension("y", n)
        nc.createDimension("x", n)
        nc.createVariable("orography", "d", ("y", "x"))[:] = h


def main(strata, work):
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    n, nz = 12, 6
    coeffs = work / "coefficients.nc"
    coefficient_file(coeffs, n, nz)
    oro = work / "orography.nc"
    orography_file(oro, n)
    cases = [
        ("model", [], "mg-cg"),
        ("box-graded", ["--geometry", "box", "--graded", "--cfl", "20"], "mg-cg"),
        ("coefficients-advection", ["--coefficients", str(coeffs)], "bicgstab"),
        ("sphere", ["--geometry", "sphere"], "mg-cg"),
        # Lateral conditions (MODEL.md section 20): periodic rows wrap by index in the file.
        ("box-periodic-neumann", ["--geometry", "box", "--boundary", "x=periodic,y=neumann"],
         "mg-cg"),
        ("panel-neumann-advection",
         ["--boundary", "neumann", "--coefficients", str(coeffs)], "bicgstab"),
        ("box-periodic-advection",
         ["--geometry", "box", "--boundary", "periodic", "--coefficients", str(coeffs)],
         "bicgstab"),
        # Terrain-following coordinates (MODEL.md section 23): the orography from a file, and
        # Schar's mountain with coefficient fields and advection.
        ("box-orography-file",
         ["--geometry", "box", "--boundary", "x=periodic,y=neumann", "--height", "0.1",
          "--orography", str(oro)], "mg-cg"),
        ("box-orography-advection",
         ["--geometry", "box", "--height", "0.1", "--orography", "schaer:slope=0.5",
          "--coefficients", str(coeffs)], "bicgstab"),
    ]
    for name, extra, solver in cases:
        common = ["--n", str(n), "--nz", str(nz), *extra]
        mtx = work / f"{name}.mtx"
        sol = work / f"{name}.nc"
        run(strata, "operator", *common, "--export", str(mtx), "--force")
        run(strata, "solve", *common, "--levels", "2", "--solver", solver, "--rtol", "1e-12",
            "--backend", "cpu", "-q", "--output", str(sol), "--format", "netcdf3", "--force")
        a = scipy.io.mmread(str(mtx)).tocsr()
        f = np.asarray(scipy.io.mmread(str(mtx.with_suffix(".rhs.mtx")))).ravel()
        with scipy.io.netcdf_file(str(sol), "r", mmap=False) as nc:
            u = np.array(nc.variables["u"][:], dtype=float).ravel()  # (y, x, z), z fastest
            f_nc = np.array(nc.variables["rhs"][:], dtype=float).ravel()
        unknowns = (6 if name == "sphere" else 1) * n * n * nz
        assert a.shape == (unknowns, unknowns), a.shape
        if "advection" not in name:
            assert abs(a - a.T).max() == 0.0, f"{name}: A is not symmetric bit for bit"
        assert np.array_equal(f, f_nc), f"{name}: the exported rhs is not the solved one"
        residual = np.abs(a @ u - f).max() / np.abs(f).max()
        assert residual < 1e-9, f"{name}: |A u - f| / |f| = {residual:.2e}"
        x = scipy.sparse.linalg.spsolve(a.tocsc(), f)
        diff = np.abs(x - u).max() / np.abs(x).max()
        assert diff < 1e-8, f"{name}: direct solve differs by {diff:.2e}"
        print(f"{name}: SciPy direct solve = strata's solution to {diff:.1e}, residual {residual:.1e}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
