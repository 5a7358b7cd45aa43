"""strata's NetCDF files and xarray's, both ways: solutions written by `strata solve --output`
(NetCDF-4 and NetCDF-3) read with xarray — dimensions, coordinates, CF attributes, and the values
against the Python solver's solution of the same problem — and a right-hand side and a
coefficient field written by xarray (NetCDF-4, as models and xarray write by default) read and
solved by strata."""
import os
import pathlib
import subprocess

import numpy as np
import pytest
import strata

xr = pytest.importorskip("xarray")
ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("STRATA_BIN", ROOT / "target" / "release" / "strata"))
needs_bin = pytest.mark.skipif(
    not BIN.exists(), reason="the strata binary is not built (cargo build --release)"
)


def netcdf4_built():
    """Whether the strata binary writes NetCDF-4 (built with the `netcdf4` feature)."""
    probe = subprocess.run(
        [str(BIN), "solve", "--n", "8", "--nz", "4", "--levels", "1", "-q", "--format", "netcdf4",
         "--output", "/nonexistent-folder/probe.nc"],
        capture_output=True, text=True,
    )
    return "built without NetCDF-4" not in probe.stderr


def solve_cli(n, nz, *extra):
    subprocess.run(
        [str(BIN), "solve", "--n", str(n), "--nz", str(nz), "--levels", "4", "--backend", "cpu",
         "--solver", "mg-cg", "--rtol", "1e-10", "-q", *map(str, extra)],
        check=True, capture_output=True,
    )


@needs_bin
@pytest.mark.parametrize("fmt,engine", [("netcdf3", "scipy"), ("netcdf4", "netcdf4")])
def test_solutions_open_with_xarray(tmp_path, fmt, engine):
    if fmt == "netcdf4":
        pytest.importorskip("netCDF4")
        if not netcdf4_built():
            pytest.skip("strata built without NetCDF-4")
    path = tmp_path / "u.nc"
    n, nz = 32, 16
    solve_cli(n, nz, "--output", path, "--format", fmt)
    ds = xr.open_dataset(path, engine=engine)
    assert ds["u"].dims == ("y", "x", "z")
    assert ds["u"].shape == (n, n, nz) and ds["rhs"].shape == (n, n, nz)
    assert "units" in ds["u"].attrs and "long_name" in ds["u"].attrs
    assert ds.attrs["Conventions"].startswith("CF")
    assert np.all(np.diff(ds["z"].values) > 0)
    if fmt == "netcdf4":
        # Deflated with the shuffle filter, chunked by rows of columns.
        enc = ds["u"].encoding
        assert enc.get("zlib") and enc.get("shuffle") and enc["chunksizes"] == (1, n, nz)
    # The same problem solved from Python gives the same field.
    s = strata.Solver(n, nz, solver="mg-cg", levels=4, rtol=1e-10, backend="cpu")
    u = s.solve(ds["rhs"].values.copy())
    scale = np.abs(u).max()
    assert np.abs(u - ds["u"].values).max() <= 1e-8 * scale
    ds.close()


@needs_bin
def test_strata_reads_what_xarray_writes(tmp_path):
    """xarray's default NetCDF-4 file (float64 right-hand side with a NaN _FillValue attribute,
    a float32 coefficient field, no coordinate variables) read by strata: the solution equals
    the Python solver's with the same right-hand side and coefficients."""
    pytest.importorskip("netCDF4")
    if not netcdf4_built():
        pytest.skip("strata built without NetCDF-4")
    n, nz = 32, 16
    rng = np.random.default_rng(3)
    rhs = rng.standard_normal((n, n, nz))
    kz = (1.0 + rng.random((n, n, nz))).astype(np.float32)
    inp = tmp_path / "from_xarray.nc"
    xr.Dataset(
        {"f": (("y", "x", "z"), rhs), "kz": (("y", "x", "z"), kz)}
    ).to_netcdf(inp)
    assert inp.read_bytes()[:4] == b"\x89HDF"  # NetCDF-4, as xarray writes by default
    out = tmp_path / "u.nc"
    solve_cli(n, nz, "--rhs-file", inp, "--rhs-var", "f", "--coefficients", inp,
              "--output", out)
    with xr.open_dataset(out, engine="netcdf4") as ds:
        u_cli = ds["u"].values
        np.testing.assert_array_equal(ds["rhs"].values, rhs)
    s = strata.Solver(n, nz, solver="mg-cg", levels=4, rtol=1e-10, backend="cpu")
    s.set_coefficients(kz=kz.astype(np.float64))
    u = s.solve(rhs.copy())
    assert np.abs(u - u_cli).max() <= 1e-8 * np.abs(u).max()
