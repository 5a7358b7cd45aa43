"""strata.Solver from Python: NumPy arrays in and out, residuals, warm starts, coefficient
updates, errors as exceptions, the GIL released during solves."""
import threading

import numpy as np
import pytest
import strata


def random_rhs(shape, seed=1):
    return np.random.default_rng(seed).uniform(-1e-6, 1e-6, shape)


@pytest.mark.parametrize("solver", ["cg", "mg", "mg-cg", "gcr", "bicgstab"])
def test_solutions_satisfy_the_equation(solver):
    s = strata.Solver(32, 16, solver=solver, levels=4, rtol=1e-8)
    f = random_rhs(s.shape)
    u = s.solve(f)
    assert u.shape == (32, 32, 16) and u.dtype == np.float64
    assert s.info["converged"], s.info
    r = np.linalg.norm(s.apply(u) - f) / np.linalg.norm(f)
    assert r < 1e-7, r


def test_out_and_warm_start_reuse_the_callers_array():
    s = strata.Solver(32, 16, solver="mg-cg", levels=4)
    f = random_rhs(s.shape)
    u = np.zeros(s.shape)
    same = s.solve(f, out=u)
    assert same is u
    cold = s.info["initial_residual"]
    s.solve(f, out=u, x0=u)  # warm start from the last step
    assert s.info["initial_residual"] < 1e-4 * cold


def test_coefficients_and_omega_update_in_place():
    s = strata.Solver(32, 16, solver="bicgstab", levels=4, rtol=1e-9)
    f = random_rhs(s.shape, 2)
    u0 = s.solve(f).copy()
    kz = np.ones(s.shape)
    kz[:, :, 8:] = 100.0
    xi = tuple(np.random.default_rng(d).uniform(-1, 1, s.shape) for d in range(3))
    s.set_coefficients(kz=kz, xi=xi)
    u1 = s.solve(f)
    assert s.info["converged"]
    assert np.linalg.norm(s.apply(u1) - f) < 1e-8 * np.linalg.norm(f)
    assert not np.allclose(u0, u1)
    s.set_coefficients()  # back to the model problem
    assert np.allclose(s.solve(f), u0, rtol=0, atol=1e-9 * np.abs(u0).max())
    s.set_omega(0.02)
    s.solve(f)
    assert s.info["converged"]


def test_errors_are_exceptions():
    with pytest.raises(ValueError, match="levels"):
        strata.Solver(30, 16, levels=4)
    with pytest.raises(ValueError, match="solver must be one of"):
        strata.Solver(32, 16, solver="sor")
    # A negative count is a ValueError naming its parameter (not an unnamed OverflowError).
    for name in ["n", "levels", "max_it", "threads", "device", "pre_smooth", "post_smooth"]:
        args = {"n": 16, "nz": 8, "levels": 3, name: -1}
        with pytest.raises(ValueError, match=f"{name} must not be negative"):
            strata.Solver(args.pop("n"), args.pop("nz"), **args)
    s = strata.Solver(16, 8, levels=3)
    with pytest.raises(ValueError, match=r"shape \(16, 16, 8\)|needs \[16, 16, 8\]"):
        s.solve(np.zeros((16, 16, 7)))
    with pytest.raises(ValueError, match="kx must be finite and positive"):
        s.set_coefficients(kx=-np.ones(s.shape))
    with pytest.raises(ValueError, match="needs a symmetric operator"):
        strata.Solver(16, 8, solver="cg").set_coefficients(xi=(np.ones((16, 16, 8)),) * 3)
    assert s.info is None


def test_the_gil_is_released_while_solving():
    s = strata.Solver(128, 64, solver="cg", rtol=1e-12, max_it=400)
    f = random_rhs(s.shape)
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    t = threading.Thread(target=count)
    t.start()
    s.solve(f)
    done.set()
    t.join()
    # Python code ran during the solve (the GIL would starve it otherwise).
    assert ticks > 1000, ticks


def test_aliasing_rhs_and_out_is_an_error_not_a_crash():
    s = strata.Solver(16, 8, levels=3)
    f = random_rhs(s.shape)
    with pytest.raises(ValueError, match="other than rhs"):
        s.solve(f, out=f)


def test_the_example_time_loop_runs():
    import pathlib
    import subprocess
    import sys

    example = pathlib.Path(__file__).resolve().parents[1] / "examples" / "timesteps.py"
    out = subprocess.run([sys.executable, str(example), "cpu"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")


def test_smoother_choices_take_fewer_cycles():
    f = random_rhs((64, 64, 32), 5)
    its = {}
    for name, kwargs in [
        ("jacobi", {"smoother": "jacobi"}),
        ("rho 0.8", {"smoother": "jacobi", "rho": 0.8}),
        ("red-black", {"smoother": "red-black"}),
        ("default", {}),
        ("paper", {"paper": True}),
    ]:
        s = strata.Solver(64, 32, solver="mg", levels=4, backend="cpu", **kwargs)
        u = s.solve(f)
        assert s.info["converged"], name
        assert np.linalg.norm(s.apply(u) - f) < 1e-4 * np.linalg.norm(f)
        its[name] = s.info["iterations"]
    assert its["rho 0.8"] < its["jacobi"] and its["red-black"] < its["jacobi"], its
    # The default is red-black smoothing with mixed precision (the same fp64 answer to rtol, as
    # checked above), at most 5 V-cycles here; paper=True is the paper's Jacobi in fp64.
    assert its["default"] <= 5 and its["default"] < its["jacobi"], its
    assert its["paper"] == its["jacobi"], its
    with pytest.raises(ValueError, match="smoother must be"):
        strata.Solver(16, 8, levels=3, smoother="sor")
    with pytest.raises(ValueError, match="rho"):
        strata.Solver(16, 8, levels=3, rho=2.5)


def test_relaxation_reaches_the_red_black_smoother():
    f = random_rhs((64, 64, 32), 7)
    runs = {}
    for w in [1.0, None]:
        s = strata.Solver(64, 32, solver="mg", levels=4, backend="cpu", smoother="red-black", rtol=1e-8, relaxation=w)
        u = s.solve(f)
        assert s.info["converged"], w
        assert np.linalg.norm(s.apply(u) - f) < 1e-7 * np.linalg.norm(f)
        runs[w] = (s.info["iterations"], s.info["relative_residual"])
    # The default (1.15) over-relaxes: another residual history, and no more cycles.
    assert runs[1.0] != runs[None] and runs[None][0] <= runs[1.0][0], runs
    with pytest.raises(ValueError, match="relaxation"):
        strata.Solver(16, 8, levels=3, smoother="red-black", relaxation=2.5)


@pytest.mark.parametrize("solver", ["mg", "mg-cg", "bicgstab"])
def test_mixed_precision_meets_rtol_in_the_fp64_iterations(solver):
    f = random_rhs((64, 64, 32), 6)
    runs = {}
    for precision in ["f64", "mixed"]:
        s = strata.Solver(64, 32, solver=solver, levels=4, backend="cpu", rtol=1e-8, precision=precision)
        u = s.solve(f)
        assert s.info["converged"], precision
        # The true fp64 residual, by the solver's own operator.
        assert np.linalg.norm(s.apply(u) - f) <= 1.001e-8 * np.linalg.norm(f)
        runs[precision] = s.info["iterations"]
    assert runs["mixed"] <= runs["f64"] + 1, runs
    with pytest.raises(ValueError, match="precision must be"):
        strata.Solver(16, 8, levels=3, precision="fp16")
    with pytest.raises(ValueError, match="precision"):
        strata.Solver(16, 8, solver="cg", precision="mixed")


@pytest.mark.parametrize("solver", ["cg", "mg", "mg-cg"])
def test_the_whole_sphere(solver):
    # Six panels of 16 x 16 columns, (panel, y, x, z) as in the files and the C API.
    s = strata.Solver(16, 8, geometry="sphere", solver=solver, levels=3, rtol=1e-9)
    assert s.shape == (6, 16, 16, 8)
    f = random_rhs(s.shape, 3)
    u = s.solve(f)
    assert s.info["converged"], s.info
    r = np.linalg.norm(s.apply(u) - f) / np.linalg.norm(f)
    assert r < 1e-8, r
    # The panels are joined: a right-hand side on panel 0 alone moves every panel's solution
    # near its edges with panel 0 (panels 1-5 all touch panel 0's edges but one, the opposite).
    g = np.zeros(s.shape)
    g[0] = 1e-6
    v = s.solve(g)
    assert v.shape == (6, 16, 16, 8)
    assert all(np.abs(v[p]).max() > 0 for p in (1, 3, 4, 5))
    assert np.abs(v[2]).max() < np.abs(v[1]).max()
    # Coefficient fields on the six panels, in the same (6, n, n, nz) arrays.
    y = np.linspace(1.0, 3.0, 6 * 16).reshape(6, 16, 1, 1)
    s.set_coefficients(kx=np.ones(s.shape) * y, kz=np.full(s.shape, 5.0))
    u = s.solve(f)
    assert s.info["converged"], s.info
    assert np.linalg.norm(s.apply(u) - f) / np.linalg.norm(f) < 1e-8
    # An advection vector (in each panel's frame): cg and mg-cg refuse it, bicgstab solves it.
    if solver in ("cg", "mg-cg"):
        with pytest.raises(ValueError, match="symmetric"):
            s.set_coefficients(xi=(np.ones(s.shape), np.ones(s.shape), np.ones(s.shape)))
    g = strata.Solver(16, 8, geometry="sphere", solver="bicgstab", levels=3, rtol=1e-9)
    g.set_coefficients(xi=(y * np.ones(g.shape), np.ones(g.shape), np.zeros(g.shape)))
    u = g.solve(f)
    assert g.info["converged"], g.info
    assert np.linalg.norm(g.apply(u) - f) / np.linalg.norm(f) < 1e-8
    # delta = 0: singular; f with a component along the constants is refused unless projected,
    # and the answer has zero volume-weighted mean (MODEL.md §19).
    with pytest.raises(ValueError, match="singular"):
        strata.Solver(16, 8, geometry="sphere", delta=0.0, levels=3).solve(f)
    z = strata.Solver(16, 8, geometry="sphere", delta=0.0, levels=3, project_rhs=True)
    z.solve(f)
    assert z.info["converged"] and z.info["incompatible"] > 1e-5, z.info
    assert s.info["incompatible"] is None
    # The paper's two-point stencil is another operator: another solution of the same f.
    t = strata.Solver(16, 8, geometry="sphere", solver=solver, levels=3, rtol=1e-9,
                      sphere_stencil="two-point")
    w = t.solve(f)
    assert t.info["converged"], t.info
    assert np.linalg.norm(t.apply(w) - f) / np.linalg.norm(f) < 1e-8
    x = strata.Solver(16, 8, geometry="sphere", solver=solver, levels=3, rtol=1e-9).solve(f)
    assert np.linalg.norm(w - x) > 1e-3 * np.linalg.norm(x)
    with pytest.raises(ValueError, match="sphere_stencil must be one of"):
        strata.Solver(16, 8, geometry="sphere", sphere_stencil="five-point")


@pytest.mark.parametrize("boundary", ["x=periodic,y=neumann", "neumann", "periodic"])
def test_lateral_boundaries(boundary):
    # A box with zero-flux and periodic sides (MODEL.md section 20): the solution meets rtol on
    # the assembled matrix, whose periodic rows wrap by index.
    sp = pytest.importorskip("scipy.sparse")
    s = strata.Solver(16, 8, geometry="box", boundary=boundary, solver="mg-cg", levels=3,
                      rtol=1e-9, backend="cpu")
    f = random_rhs(s.shape, 5)
    u = s.solve(f)
    assert s.info["converged"], s.info
    indptr, indices, data = s.matrix()
    a = sp.csr_matrix((data, indices, indptr))
    r = f.ravel() - a @ u.ravel()
    assert np.linalg.norm(r) / np.linalg.norm(f) < 1e-8
    assert np.allclose(s.apply(u).ravel(), a @ u.ravel(), rtol=0, atol=1e-12 * np.abs(f).max())
    # With no Dirichlet side and delta = 0 the problem is singular: refused, then projected.
    with pytest.raises(ValueError, match="singular"):
        strata.Solver(16, 8, geometry="box", boundary=boundary, delta=0.0, levels=3).solve(f)
    z = strata.Solver(16, 8, geometry="box", boundary=boundary, delta=0.0, levels=3,
                      project_rhs=True, backend="cpu")
    w = z.solve(f)
    assert z.info["converged"] and z.info["incompatible"] > 1e-5, z.info
    assert abs(w.mean()) < 1e-10 * np.abs(w).max()
    with pytest.raises(ValueError, match="boundary"):
        strata.Solver(16, 8, geometry="panel", boundary="x=periodic")
    with pytest.raises(ValueError, match="boundary"):
        strata.Solver(16, 8, geometry="box", boundary="x=sticky")


def test_orography():
    # Terrain-following coordinates over a hill (MODEL.md section 23): the solution meets rtol
    # on the assembled matrix (symmetric bit for bit, 15 entries in an inner row), the singular
    # periodic box's answer has zero volume-weighted mean (cells of volume J h^2 dz), and bad
    # orography is a ValueError naming what is wrong.
    sp = pytest.importorskip("scipy.sparse")
    n, nz, top = 16, 8, 0.1
    y, x = np.meshgrid((np.arange(n) + 0.5) / n, (np.arange(n) + 0.5) / n, indexing="ij")
    h = 0.04 * np.exp(-((x - 0.5) ** 2 + (y - 0.4) ** 2) / 0.03)
    s = strata.Solver(n, nz, geometry="box", boundary="periodic", height=top, orography=h,
                      solver="mg-cg", levels=3, rtol=1e-9, backend="cpu")
    f = random_rhs(s.shape, 6)
    u = s.solve(f)
    assert s.info["converged"], s.info
    indptr, indices, data = s.matrix()
    a = sp.csr_matrix((data, indices, indptr))
    assert abs(a - a.T).max() == 0.0
    assert np.linalg.norm(f.ravel() - a @ u.ravel()) / np.linalg.norm(f) < 1e-8
    assert np.diff(indptr).max() == 15
    z = strata.Solver(n, nz, geometry="box", boundary="periodic", height=top, orography=h,
                      delta=0.0, project_rhs=True, levels=3, backend="cpu")
    w = z.solve(f)
    assert z.info["converged"], z.info
    volume = (1.0 - h / top)[:, :, None] * np.ones((n, n, nz))
    assert abs((volume * w).sum()) < 1e-10 * np.abs(w).sum()
    with pytest.raises(ValueError, match="model top"):
        strata.Solver(n, nz, geometry="box", height=top, orography=h + 0.1)
    with pytest.raises(ValueError, match=r"shape \[8, 16\]"):
        strata.Solver(n, nz, geometry="box", height=top, orography=h[:8])
    with pytest.raises(ValueError, match=r"\(panel, y, x\)"):
        strata.Solver(n, nz, geometry="sphere", orography=h * 0.01)
    # The sphere takes six panels of heights (MODEL.md section 23.6): its assembled matrix is
    # symmetric bit for bit with 19 entries in a row inside a panel.
    hs = np.stack([h * (1.0 + 0.1 * q) for q in range(6)])
    q = strata.Solver(8, 4, geometry="sphere", height=top, orography=hs[:, ::2, ::2],
                      levels=2, rtol=1e-9, backend="cpu")
    g = random_rhs(q.shape, 7)
    v = q.solve(g)
    assert q.info["converged"], q.info
    indptr, indices, data = q.matrix()
    a = sp.csr_matrix((data, indices, indptr))
    assert abs(a - a.T).max() == 0.0
    assert np.diff(indptr).max() == 19
    assert np.linalg.norm(g.ravel() - a @ v.ravel()) / np.linalg.norm(g) < 1e-8
    # The panel takes it too (heights in Earth radii, below its lid H = 0.01).
    p = strata.Solver(n, nz, geometry="panel", orography=h * 0.01, backend="cpu")
    p.solve(f)
    assert p.info["converged"], p.info


def test_coarse_cg_makes_the_count_independent_of_the_levels():
    # The coarsest level solved by CG (MODEL.md section 9.4): 2 to 4 levels, the same count.
    f = random_rhs((16, 16, 8), 4)
    counts = []
    for levels in (2, 3, 4):
        s = strata.Solver(16, 8, levels=levels, coarse_solve="cg", backend="cpu")
        s.solve(f)
        assert s.info["converged"], s.info
        counts.append(s.info["iterations"])
    assert max(counts) - min(counts) <= 1, counts
    with pytest.raises(ValueError, match="coarse_solve must be one of"):
        strata.Solver(16, 8, coarse_solve="direct")
    with pytest.raises(ValueError, match="coarse_rtol"):
        strata.Solver(16, 8, coarse_solve="cg", coarse_rtol=1.5)


def test_smoothing_steps_per_level():
    # mg-cg's default cycle is V(2,2): fewer iterations than V(1,1), and one count given sets
    # both of its symmetric cycle; mg takes V(2,1) when asked; mg-cg's symmetric cycle refuses
    # unequal counts, and counts outside 1..16 are refused.
    f = random_rhs((64, 64, 64), 1)
    its = {}
    for name, kw in [
        ("v22", {}),
        ("v11", {"pre_smooth": 1, "post_smooth": 1}),
        ("v11-given-once", {"post_smooth": 1}),
    ]:
        s = strata.Solver(64, 64, solver="mg-cg", backend="cpu", **kw)
        s.solve(f)
        assert s.info["converged"], s.info
        its[name] = s.info["iterations"]
    assert its["v22"] < its["v11"] == its["v11-given-once"], its
    s = strata.Solver(64, 64, solver="mg", backend="cpu", pre_smooth=2)
    s.solve(f)
    assert s.info["converged"] and s.info["iterations"] == 3, s.info
    with pytest.raises(ValueError, match="pre_smooth"):
        strata.Solver(16, 8, solver="mg-cg", pre_smooth=2, post_smooth=1)
    with pytest.raises(ValueError, match="post_smooth"):
        strata.Solver(16, 8, post_smooth=0)


def test_config_gives_the_resolved_defaults():
    # What None resolved to: mg-cg's red-black V(2,2) cycle in mixed precision; what was given
    # stays; the config of one solver makes another that takes its iterations.
    s = strata.Solver(32, 16, solver="mg-cg", levels=3, backend="cpu")
    c = s.config
    assert (c["solver"], c["smoother"], c["precision"]) == ("mg-cg", "red-black", "mixed"), c
    assert (c["pre_smooth"], c["post_smooth"], c["levels"]) == (2, 2, 3), c
    assert strata.Solver(32, 16, paper=True, levels=3).config["smoother"] == "jacobi"
    again = strata.Solver(32, 16, backend="cpu", **c)
    assert again.config == c
    f = random_rhs((32, 32, 16), 2)
    s.solve(f)
    again.solve(f)
    assert s.info["iterations"] == again.info["iterations"]


def test_one_process_owns_the_whole_grid_and_comm_must_be_a_communicator():
    s = strata.Solver(16, 8, levels=3, backend="cpu")
    assert s.block == (0, 0, 16, 16)
    assert s.tiles == [(None, 0, 0, 16, 16)]
    sphere = strata.Solver(8, 4, geometry="sphere", levels=2, backend="cpu")
    assert sphere.tiles == [(p, 0, 0, 8, 8) for p in range(6)]
    # A wrong dtype is named with the shape this solver takes.
    with pytest.raises(ValueError, match=r"float64 NumPy array of shape \[6, 8, 8, 4\]"):
        sphere.solve(np.zeros(sphere.shape, dtype=np.float32))
    # Without MPI built in, or with an object that is no mpi4py communicator: a ValueError that
    # says what comm needs (python/tests/check_ranks.py runs the ranks under mpirun).
    with pytest.raises(ValueError, match="comm"):
        strata.Solver(16, 8, levels=3, backend="cpu", comm=object())


def test_every_backend_and_names_from_one_table():
    # The serial reference backend is reachable as from C; its answer is the CPU's.
    f = random_rhs((16, 16, 8), 3)
    u = {}
    for backend in ("reference", "cpu"):
        s = strata.Solver(16, 8, levels=3, backend=backend)
        assert s.backend == backend
        u[backend] = s.solve(f)
        assert s.info["converged"]
    # Both meet rtol 1e-5 (mixed precision: fp32 V-cycles on either backend).
    assert np.linalg.norm(u["reference"] - u["cpu"]) <= 1e-4 * np.linalg.norm(u["cpu"])
    with pytest.raises(ValueError, match="halo must be one of 'auto', 'mpi', 'nccl'"):
        strata.Solver(16, 8, levels=3, halo="carrier-pigeon")
    with pytest.raises(ValueError, match="backend must be one of 'auto', 'cpu', 'cuda', 'reference'"):
        strata.Solver(16, 8, levels=3, backend="tpu")


def test_input_that_is_not_finite_raises_with_its_cell():
    s = strata.Solver(16, 8, levels=3, backend="cpu")
    f = random_rhs((16, 16, 8), 4)
    f[5, 3, 2] = np.nan  # (y, x, z): cell (i, j, k) = (3, 5, 2)
    with pytest.raises(ValueError, match=r"rhs holds NaN at \(i, j, k\) = \(3, 5, 2\)"):
        s.solve(f)
    f[5, 3, 2] = 0.0
    s.solve(f)
    assert s.info["converged"]


def test_the_package_version_is_the_crates():
    from importlib.metadata import version

    assert version("strata") == strata.__version__


def test_non_convergence_raises_only_when_asked():
    f = random_rhs((16, 16, 8), 5)
    s = strata.Solver(16, 8, levels=3, backend="cpu", max_it=1, rtol=1e-12)
    s.solve(f)
    assert not s.info["converged"] and s.info["iterations"] == 1
    strict = strata.Solver(
        16, 8, levels=3, backend="cpu", max_it=1, rtol=1e-12, error_if_not_converged=True
    )
    u = np.zeros(strict.shape)
    with pytest.raises(strata.NotConvergedError, match="did not converge .* in 1 iterations"):
        strict.solve(f, out=u)
    assert isinstance(strata.NotConvergedError("x"), RuntimeError)
    assert np.any(u != 0.0), "out holds the last iterate"


def test_the_spheres_stacked_shape_is_deprecated_and_still_taken():
    s = strata.Solver(8, 4, geometry="sphere", levels=2, backend="cpu", rtol=1e-9)
    f = random_rhs(s.shape, 6)
    u = s.solve(f)
    # The shape before 0.2, the panels stacked along y: the same answer, in that shape, warned.
    with pytest.warns(DeprecationWarning, match=r"pass shape \[6, 8, 8, 4\]"):
        old = s.solve(f.reshape(48, 8, 4))
    assert old.shape == (48, 8, 4) and np.array_equal(old.reshape(u.shape), u)
    with pytest.warns(DeprecationWarning):
        assert s.apply(u.reshape(48, 8, 4)).shape == (48, 8, 4)
    # out= in the 4D layout must be C-contiguous (it is written in place).
    with pytest.raises(ValueError, match="out must be C-contiguous"):
        s.solve(f, out=np.zeros((6, 8, 8, 8))[..., ::2])
    with pytest.raises(ValueError, match=r"needs \[6, 8, 8, 4\] \(tile, y, x, z\)"):
        s.solve(np.zeros((6, 8, 4, 8)))
