"""A model calls strata: internal gravity waves in a channel, with a known answer.

The linear Boussinesq equations in a channel periodic in x, with walls in y (free slip: v = 0)
and rigid lids (w = 0 at z = 0 and z = H):

    u_t = -p_x,    w_t = -p_z + b,    b_t = -N^2 w,    u_x + w_z = 0,

advanced by Crank-Nicolson (the pressure at the half step) on a staggered (MAC) grid: u on
the x faces, w and b on the z faces, p at the cell centres. Eliminating b^{n+1} and w^{n+1}
leaves one elliptic problem for the pressure per step,

    -dt (d_xx + d_zz / (1 + a)) P = -div(u^n, W*),   a = (dt N / 2)^2,
    W* = ((1 - a) w^n + dt b^n) / (1 + a),

which is strata's operator on the box with omega^2 = dt, lambda^2 = 1 / (1 + a), delta = 0,
--boundary x=periodic,y=neumann (the lids are strata's zero-flux top and bottom): a singular
problem, solved with the right-hand side projected (project_rhs=True). Then

    u^{n+1} = u^n - dt G_x P,   w^{n+1} = W* - dt / (1 + a) G_z P,
    b^{n+1} = b^n - dt N^2 (w^{n+1} + w^n) / 2.

A normal mode b = b0 cos(k x) sin(m z), u = w = 0 oscillates at the continuous frequency
omega^2 = N^2 k^2 / (k^2 + m^2); the staggered grid's at omega_h^2 = N^2 kh^2 / (kh^2 + mh^2),
kh = (2/dx) sin(k dx / 2), mh = (2/dz) sin(m dz / 2); Crank-Nicolson turns a frequency w into
(2/dt) arctan(w dt / 2) with amplitude exactly 1 (it is a Cayley transform: it conserves the
energy). The run measures the frequency and amplitude of b's projection on the mode and prints
them against the three. Usage: python gravity_wave.py [n ...] (n = nz cells, dt = T / n; the
default 16 32 64), or --check (n = 16, asserting the fully discrete prediction to 1e-6).
"""
import math
import sys
from typing import Dict, List, Tuple

import numpy as np
import strata

N_BV = 1.0  # buoyancy frequency N
HEIGHT = 1.0  # channel depth H (the box is [0, 1]^2 x [0, H])
KX = 2.0 * math.pi  # one wave along the periodic x
MZ = math.pi / HEIGHT  # one half wave between the lids


def frequencies(n: int, nz: int, dt: float) -> Dict[str, float]:
    """The continuous, the staggered grid's, and Crank-Nicolson's frequencies (of both)."""
    dx, dz = 1.0 / n, HEIGHT / nz
    exact = N_BV * KX / math.hypot(KX, MZ)
    kh = 2.0 / dx * math.sin(KX * dx / 2.0)
    mh = 2.0 / dz * math.sin(MZ * dz / 2.0)
    grid = N_BV * kh / math.hypot(kh, mh)

    def cn(w: float) -> float:
        return 2.0 / dt * math.atan(w * dt / 2.0)

    return {"exact": exact, "grid": grid, "cn": cn(exact), "cn_grid": cn(grid)}


def run(n: int, periods: float = 2.0) -> Tuple[Dict[str, float], float, float, int]:
    """Simulates `periods` periods with n = nz cells and dt = T / n; returns the predicted
    frequencies, the measured frequency, the measured amplitude (b0 = 1) and the most solver
    iterations of a step."""
    nz = n
    dx, dz = 1.0 / n, HEIGHT / nz
    period = 2.0 * math.pi / frequencies(n, nz, 1.0)["exact"]
    dt = period / n
    steps = int(round(periods * n))
    alpha = (dt * N_BV / 2.0) ** 2
    # strata's arrays are (y, x, z); the fields do not vary in y (v = 0 walls in y).
    s = strata.Solver(n, nz, geometry="box", boundary="x=periodic,y=neumann", delta=0.0,
                      omega=math.sqrt(dt), lambda_=1.0 / math.sqrt(1.0 + alpha), height=HEIGHT,
                      solver="mg-cg", rtol=1e-11, project_rhs=True, backend="cpu")
    vol = dx * dx * dz
    xc = (np.arange(n) + 0.5) * dx  # cell centres in x (and u's faces at i dx)
    zf = np.arange(nz + 1) * dz  # w's and b's faces, 0 and nz on the lids
    # u[i] on the face west of cell i (periodic), w[k] and b[k] on the face below cell k.
    u = np.zeros((n, nz))
    w = np.zeros((n, nz + 1))
    mode = np.outer(np.cos(KX * xc), np.sin(MZ * zf))
    b = mode.copy()

    def div(u: np.ndarray, w: np.ndarray) -> np.ndarray:
        return (np.roll(u, -1, axis=0) - u) / dx + (w[:, 1:] - w[:, :-1]) / dz

    # strata's operator is this scheme's -dt (L_x + lambda^2 L_z), volume-integrated: checked
    # on a random pressure (a model that calls strata checks its discretisation once).
    rng = np.random.default_rng(1)
    q = rng.standard_normal((n, nz))
    lx = (np.roll(q, -1, axis=0) - 2.0 * q + np.roll(q, 1, axis=0)) / dx**2
    gz = np.zeros((n, nz + 1))
    gz[:, 1:-1] = (q[:, 1:] - q[:, :-1]) / dz
    lz = (gz[:, 1:] - gz[:, :-1]) / dz
    want = -dt * vol * (lx + lz / (1.0 + alpha))
    got = s.apply(np.broadcast_to(q, (n, n, nz)).copy())
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err < 1e-12, f"strata's operator is not the scheme's: {err:.2e}"

    series = [float((b * mode).sum() / (mode * mode).sum())]
    most = 0
    for _ in range(steps):
        wstar = ((1.0 - alpha) * w + dt * b) / (1.0 + alpha)
        wstar[:, 0] = wstar[:, -1] = 0.0
        f = -vol * div(u, wstar)
        p = s.solve(np.broadcast_to(f, (n, n, nz)).copy())
        info = s.info
        assert info is not None and info["converged"], info
        most = max(most, int(info["iterations"]))
        pp = p[0]
        assert np.abs(p - pp).max() <= 1e-9 * np.abs(pp).max(), "the pressure varies in y"
        u = u - dt * (pp - np.roll(pp, 1, axis=0)) / dx
        wn = wstar.copy()
        wn[:, 1:-1] -= dt / (1.0 + alpha) * (pp[:, 1:] - pp[:, :-1]) / dz
        b = b - dt * N_BV**2 * (wn + w) / 2.0
        w = wn
        series.append(float((b * mode).sum() / (mode * mode).sum()))
    a = np.array(series)
    # a_n = A cos(n theta + phi): a_{n+1} + a_{n-1} = 2 cos(theta) a_n (least squares), then the
    # amplitude by least squares on cos and sin.
    cos_t = float((a[1:-1] * (a[2:] + a[:-2])).sum() / (2.0 * (a[1:-1] ** 2).sum()))
    theta = math.acos(cos_t)
    t = np.arange(len(a))
    basis = np.stack([np.cos(theta * t), np.sin(theta * t)], axis=1)
    coef, *_ = np.linalg.lstsq(basis, a, rcond=None)
    return frequencies(n, nz, dt), theta / dt, float(np.hypot(*coef)), most


def main(argv: List[str]) -> None:
    check = "--check" in argv
    sizes = [int(x) for x in argv if x != "--check"] or ([16] if check else [16, 32, 64])
    print("| n = nz | dt = T/n | omega (exact) | CN of it | grid's | CN of the grid's (predicted) "
          "| simulated | sim / predicted - 1 | sim / exact - 1 | amplitude - 1 | its/step |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        fr, measured, amp, its = run(n)
        period = 2.0 * math.pi / fr["exact"]
        print(f"| {n} | {period / n:.4f} | {fr['exact']:.8f} | {fr['cn']:.8f} | {fr['grid']:.8f} "
              f"| {fr['cn_grid']:.8f} | {measured:.8f} | {measured / fr['cn_grid'] - 1:.1e} "
              f"| {measured / fr['exact'] - 1:.2e} | {amp - 1:.1e} | {its} |")
        if check:
            assert abs(measured / fr["cn_grid"] - 1) < 1e-6, (measured, fr)
            assert abs(amp - 1) < 1e-6, amp
            # Second order in dt and dx: the error against the continuous frequency is that of
            # the prediction, and small.
            assert abs(measured / fr["exact"] - 1) < 0.05, (measured, fr)
    if check:
        print("ok")


if __name__ == "__main__":
    main(sys.argv[1:])
