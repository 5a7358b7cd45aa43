"""Solutions written by `strata solve --output` read with xarray: dimensions, coordinates, CF
attributes, and the values against the Python solver's solution of the same problem."""
import os
import pathlib
import subprocess

import numpy as np
import pytest
import strata

xr = pytest.importorskip("xarray")
ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("STRATA_BIN", ROOT / "target" / "release" / "strata"))


@pytest.mark.skipif(not BIN.exists(), reason="the strata binary is not built (cargo build --release)")
def test_solutions_open_with_xarray(tmp_path):
    path = tmp_path / "u.nc"
    n, nz = 32, 16
    subprocess.run(
        [str(BIN), "solve", "--n", str(n), "--nz", str(nz), "--levels", "4", "--backend", "cpu",
         "--solver", "mg-cg", "--rtol", "1e-10", "--output", str(path), "-q"],
        check=True, capture_output=True,
    )
    ds = xr.open_dataset(path, engine="scipy")
    assert ds["u"].dims == ("y", "x", "z")
    assert ds["u"].shape == (n, n, nz) and ds["rhs"].shape == (n, n, nz)
    assert "units" in ds["u"].attrs and "long_name" in ds["u"].attrs
    assert ds.attrs["Conventions"].startswith("CF")
    assert np.all(np.diff(ds["z"].values) > 0)
    # The same problem solved from Python gives the same field.
    s = strata.Solver(n, nz, solver="mg-cg", levels=4, rtol=1e-10, backend="cpu")
    u = s.solve(ds["rhs"].values.copy())
    scale = np.abs(u).max()
    assert np.abs(u - ds["u"].values).max() <= 1e-8 * scale
    ds.close()
