"""strata.Solver on the GPU from Python: CuPy arrays in and out with no host round trip, any
strides, warm starts, the operator on the device, PyTorch tensors, errors. Skipped where CuPy or
a GPU is missing (the GPU check script runs them on the GPU machine)."""
import numpy as np
import pytest
import strata

cp = pytest.importorskip("cupy")
try:
    if cp.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no GPU", allow_module_level=True)
except Exception:  # no driver
    pytest.skip("no GPU", allow_module_level=True)


def rhs(shape, seed=1):
    return np.random.default_rng(seed).uniform(-1e-6, 1e-6, shape)


def test_cupy_in_cupy_out_equals_the_numpy_solve():
    s = strata.Solver(64, 32, solver="mg-cg", levels=4, rtol=1e-9, backend="cuda")
    assert s.backend == "cuda"
    f = rhs(s.shape)
    host = s.solve(f)
    fd = cp.asarray(f)
    ud = s.solve(fd)
    assert isinstance(ud, cp.ndarray) and ud.shape == s.shape
    assert np.array_equal(cp.asnumpy(ud), host)
    r = cp.linalg.norm(s.apply(ud) - fd) / cp.linalg.norm(fd)
    assert float(r) < 1e-8
    # out= in place, warm start from it
    out = cp.zeros(s.shape)
    assert s.solve(fd, out=out) is out
    cold = s.info["initial_residual"]
    s.solve(fd, out=out, x0=out)
    assert s.info["initial_residual"] < 1e-4 * cold


def test_any_strides_on_the_device():
    s = strata.Solver(32, 16, solver="mg", levels=4, rtol=1e-9, backend="cuda")
    f = rhs(s.shape, 2)
    want = s.solve(f)
    # x fastest: a (nz, n, n) array viewed as (y, x, z)
    fx = cp.ascontiguousarray(cp.asarray(f).transpose(2, 0, 1))
    ux = cp.zeros_like(fx)
    s.solve(fx.transpose(1, 2, 0), out=ux.transpose(1, 2, 0))
    assert np.array_equal(cp.asnumpy(ux.transpose(1, 2, 0)), want)
    # Fortran order (y fastest), and a padded slice
    ff = cp.asfortranarray(cp.asarray(f))
    assert np.array_equal(cp.asnumpy(s.solve(ff)), want)
    big = cp.zeros((32, 40, 16))
    big[:, :32, :] = cp.asarray(f)
    assert np.array_equal(cp.asnumpy(s.solve(big[:, :32, :])), want)


def test_torch_tensors_pass_too():
    torch = pytest.importorskip("torch")
    s = strata.Solver(32, 16, solver="mg", levels=4, rtol=1e-9, backend="cuda")
    f = rhs(s.shape, 3)
    t = torch.tensor(f, device="cuda")
    out = torch.zeros_like(t)
    s.solve(t, out=out)
    assert np.array_equal(out.cpu().numpy(), s.solve(f))


def test_device_errors():
    s = strata.Solver(16, 8, levels=3, backend="cuda")
    with pytest.raises(ValueError, match="shape"):
        s.solve(cp.zeros((16, 16, 9)))
    with pytest.raises(ValueError, match="float64"):
        s.solve(cp.zeros(s.shape, dtype=cp.float32))
    with pytest.raises(ValueError, match="out must be a device array"):
        s.solve(cp.zeros(s.shape), out=np.zeros(s.shape))
    c = strata.Solver(16, 8, levels=3, backend="cpu")
    with pytest.raises(ValueError, match="runs on the CPU"):
        c.solve(cp.zeros(c.shape))


def test_coefficients_from_device_arrays():
    s = strata.Solver(32, 16, solver="bicgstab", levels=4, rtol=1e-9, backend="cuda")
    c = strata.Solver(32, 16, solver="bicgstab", levels=4, rtol=1e-9, backend="cpu")
    kz = np.ones(s.shape)
    kz[:, :, 8:] = 100.0
    xi = tuple(np.random.default_rng(d).uniform(-1, 1, s.shape) for d in range(3))
    s.set_coefficients(kz=cp.asarray(kz), xi=tuple(cp.asarray(x) for x in xi))
    c.set_coefficients(kz=kz, xi=xi)
    f = rhs(s.shape, 4)
    ug = cp.asnumpy(s.solve(cp.asarray(f)))
    uc = c.solve(f)
    assert s.info["iterations"] == c.info["iterations"]
    assert np.abs(ug - uc).max() <= 1e-9 * np.abs(uc).max()


def test_coefficients_kept_on_the_device():
    # Without xi, CuPy fields stay on the GPU: the same operator as NumPy fields, bit for bit,
    # in either memory order; a bad value is refused as on the host; a new omega asks for the
    # fields again.
    s = strata.Solver(32, 16, solver="mg-cg", levels=4, rtol=1e-9, backend="cuda")
    h = strata.Solver(32, 16, solver="mg-cg", levels=4, rtol=1e-9, backend="cuda")
    rng = np.random.default_rng(5)
    kz = np.exp(rng.uniform(0, 3, s.shape))
    beta = rng.uniform(0.5, 2, s.shape)
    h.set_coefficients(kz=kz, beta=beta)
    f = rhs(s.shape, 6)
    want = h.solve(f)
    for order in ("C", "F"):
        s.set_coefficients(kz=cp.asarray(kz, order=order), beta=cp.asarray(beta, order=order))
        assert np.array_equal(cp.asnumpy(s.solve(cp.asarray(f))), want)
        assert s.info["residuals"] == h.info["residuals"]
    bad = kz.copy()
    bad[3, 4, 5] = -1.0
    with pytest.raises(ValueError, match=r"kz must be finite and positive, but is -1 at \(y=3, x=4, z=5\)"):
        s.set_coefficients(kz=cp.asarray(bad))
    s.set_omega(0.5)
    with pytest.raises(ValueError, match="set them again"):
        s.solve(f)
    s.set_coefficients(kz=cp.asarray(kz), beta=cp.asarray(beta))
    h.set_omega(0.5)
    assert np.array_equal(s.solve(f), h.solve(f))
    # With the advection vector (gcr): the same, and mg-cg refuses it.
    xi = tuple(rng.uniform(-1, 1, s.shape) for _ in range(3))
    g = strata.Solver(32, 16, solver="gcr", levels=4, rtol=1e-9, backend="cuda")
    gh = strata.Solver(32, 16, solver="gcr", levels=4, rtol=1e-9, backend="cuda")
    g.set_coefficients(kz=cp.asarray(kz), xi=tuple(cp.asarray(x) for x in xi))
    gh.set_coefficients(kz=kz, xi=xi)
    assert np.array_equal(g.solve(f), gh.solve(f))
    with pytest.raises(ValueError, match="needs a symmetric operator"):
        s.set_coefficients(xi=tuple(cp.asarray(x) for x in xi))


def test_the_sphere_with_cupy_arrays():
    # Six panels, (6, n, n, nz): the device solve is the host solve, also for a padded view
    # (panels further apart than n rows), and for the deprecated stacked shape (6 n, n, nz).
    s = strata.Solver(32, 16, geometry="sphere", solver="mg-cg", levels=3, rtol=1e-9,
                      backend="cuda")
    f = rhs(s.shape, 4)
    host = s.solve(f)
    ud = s.solve(cp.asarray(f))
    assert isinstance(ud, cp.ndarray) and ud.shape == (6, 32, 32, 16)
    assert np.array_equal(cp.asnumpy(ud), host)
    big = cp.zeros((6, 40, 32, 16))
    big[:, :32] = cp.asarray(f)
    assert np.array_equal(cp.asnumpy(s.solve(big[:, :32])), host)
    with pytest.warns(DeprecationWarning):
        old = s.solve(cp.asarray(f).reshape(6 * 32, 32, 16))
    assert old.shape == (6 * 32, 32, 16)
    assert np.array_equal(cp.asnumpy(old).reshape(host.shape), host)
    r = cp.linalg.norm(s.apply(ud) - cp.asarray(f)) / np.linalg.norm(f)
    assert float(r) < 1e-8
