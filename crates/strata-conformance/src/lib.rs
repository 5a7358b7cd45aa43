//! # strata-conformance
//!
//! The kernel conformance suite, written once over [`Backend`] (Ginkgo's pattern: kernels
//! declared once, a reference executor, one test source run by every executor). Each check runs
//! a kernel of the backend under test and of the serial [`ReferenceBackend`] on the same random
//! data — halos included, as a neighbouring rank would leave them — on odd, non-power-of-two
//! blocks of whole levels and of subdomains touching none, some and all physical sides, and
//! compares the results. Fields travel through the trait alone (`upload`, `download`, and the
//! halo faces by `face_from_host` + `unpack_face`), so a new backend gets every check by
//! invoking [`conformance_tests!`] in one test file:
//!
//! ```ignore
//! strata_conformance::conformance_tests!(strata::backend::cpu::CpuBackend::new(Some(3)).unwrap());
//! ```
#![warn(missing_docs)]

use strata::backend::prelude::*;
use strata::backend::reference::ReferenceBackend;
use strata::backend::{face_len, Backend};
use strata::field::HostField;
use strata::grid::{Block, Side};
use strata::precision::Storage;
use strata::problem::{Coefficients, Geometry, Grading, ProblemParams, VerticalGrid};
use strata::stencil::LevelStencil;

/// Kernels without a line solve: a few ulps.
pub const TOL: f64 = 1e-13;
/// Kernels with a line solve: the column blocks are nearly singular in the vertical (Neumann
/// ends, ω²λ²/δr² ≫ δ), so a different but equally valid rounding order differs by about
/// eps·κ(A_T).
pub const TOL_SOLVE: f64 = 1e-10;
/// Reductions (sums in another order).
pub const TOL_SUM: f64 = 1e-12;
/// Backward error allowed to the smoothing kernels' line solve where its forward difference is
/// above [`TOL_SOLVE`]: another elimination order (the CUDA backend's cyclic reduction on
/// coarse levels) rounds differently. Plain cyclic reduction was off by 2.3e-11 on the suite's
/// nz = 128 columns (its diagonals shrink to small differences); the backend's row-sum form
/// agrees with the reference to [`TOL_SOLVE`] itself.
pub const TOL_PCR: f64 = 1e-12;

/// A small deterministic generator (xorshift64*), values in [−1, 1).
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next value in [−1, 1).
    pub fn next_value(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (v >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    /// A field of random values everywhere, halo included.
    pub fn field(&mut self, s: &LevelStencil) -> HostField {
        let mut f = HostField::zeros(s.nx(), s.ny(), s.nz);
        f.data.iter_mut().for_each(|v| *v = self.next_value());
        f
    }
}

/// Max |a − b| over the interior, relative to max |b|.
pub fn rel_diff(a: &HostField, b: &HostField) -> f64 {
    let (mut d, mut m) = (0.0f64, 0.0f64);
    for j in 0..a.ny {
        for i in 0..a.nx {
            for (x, y) in a.column(i, j).iter().zip(b.column(i, j)) {
                d = d.max((x - y).abs());
                m = m.max(y.abs());
            }
        }
    }
    d / m.max(1e-300)
}

/// How far the reference's own result moves when `input` moves by a few rounding errors: the
/// forward error any correct implementation may show on an ill-conditioned line solve (nearly
/// singular columns amplify rounding by κ(A_T)). The checks of line solves allow the larger of
/// [`TOL_SOLVE`] and ten times this spread.
pub fn rounding_spread(input: &HostField, run: impl Fn(&HostField) -> HostField) -> f64 {
    let mut rng = Rng::new(99);
    let mut moved = input.clone();
    moved
        .data
        .iter_mut()
        .for_each(|v| *v *= 1.0 + 4.0 * f64::EPSILON * rng.next_value());
    rel_diff(&run(&moved), &run(input))
}

/// The backward error of a line solve `z ≈ M⁻¹ rhs`: ‖M z − rhs‖∞ / (‖M‖∞ ‖z‖∞ + ‖rhs‖∞), with
/// M the columns' tridiagonal blocks (docs/MODEL.md §7) applied on the host. A backward-stable
/// solve has it near the rounding unit however ill-conditioned the columns are, so it tells a
/// correct solver from a wrong one where the forward difference cannot (nearly singular columns
/// amplify any rounding difference by κ(A_T)).
pub fn line_backward_error(s: &LevelStencil, z: &HostField, rhs: &HostField) -> f64 {
    let nz = s.nz;
    let (mut res, mut m_norm, mut z_norm, mut r_norm) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for j in 0..s.ny() {
        for i in 0..s.nx() {
            let (zc, rc) = (z.column(i, j), rhs.column(i, j));
            for k in 0..nz {
                let e = s.row(i, j, k);
                let mut mz = e.diag * zc[k];
                if k + 1 < nz {
                    mz += e.up * zc[k + 1];
                }
                if k > 0 {
                    mz += e.down * zc[k - 1];
                }
                res = res.max((mz - rc[k]).abs());
                m_norm = m_norm.max(e.diag.abs() + e.up.abs() + e.down.abs());
                z_norm = z_norm.max(zc[k].abs());
                r_norm = r_norm.max(rc[k].abs());
            }
        }
    }
    res / (m_norm * z_norm + r_norm).max(1e-300)
}

/// The backward error of a block-Jacobi step `out = x + ρ M⁻¹ (f − A x)`: that of
/// `(out − x)/ρ` as a solution of the column systems with right-hand side `f − A x` (the
/// reference's, in fp64). `s` may be an fp32 level: the residual is taken on its fp64 twin.
pub fn smooth_backward_error(
    s: &LevelStencil,
    f: &HostField,
    x: &HostField,
    out: &HostField,
    rho: f64,
) -> f64 {
    let r = ReferenceBackend;
    let s64 = s.with_storage(Storage::F64);
    let mut rhs = x.clone();
    r.residual(&s64, f, x, &mut rhs).unwrap();
    let mut z = out.clone();
    z.data
        .iter_mut()
        .zip(&x.data)
        .for_each(|(o, x)| *o = (*o - x) / rho);
    line_backward_error(&s64, &z, &rhs)
}

/// The backward error of a quarter sweep's column solves ([`LineKernels::smooth_color`] with
/// colour `color` ≥ 2, over-relaxed by `w`, from `x` to `out`): that of z = (out − (1 − w) x)/w
/// on the swept columns as the solution of T z = f − A x + T x (the cross terms' own part at
/// the old values), the other columns left out.
pub fn quarter_backward_error(
    s: &LevelStencil,
    f: &HostField,
    x: &HostField,
    out: &HostField,
    color: usize,
    w: f64,
) -> f64 {
    let r = ReferenceBackend;
    let mut rhs = x.clone();
    r.residual(s, f, x, &mut rhs).unwrap();
    let (mut z, mut b) = (
        HostField::zeros(s.nx(), s.ny(), s.nz),
        HostField::zeros(s.nx(), s.ny(), s.nz),
    );
    let q = color - 2;
    for j in 0..s.ny() {
        for i in 0..s.nx() {
            if (s.block.i0 + i) % 2 != q & 1 || (s.block.j0 + j) % 2 != q >> 1 {
                continue;
            }
            let (xc, oc, rc) = (x.column(i, j), out.column(i, j), rhs.column(i, j));
            let (zc, bc): (Vec<f64>, Vec<f64>) = (0..s.nz)
                .map(|k| {
                    let e = s.row(i, j, k);
                    let mut tx = e.diag * xc[k];
                    if k + 1 < s.nz {
                        tx += e.up * xc[k + 1];
                    }
                    if k > 0 {
                        tx += e.down * xc[k - 1];
                    }
                    ((oc[k] - (1.0 - w) * xc[k]) / w, rc[k] + tx)
                })
                .unzip();
            z.column_mut(i, j).copy_from_slice(&zc);
            b.column_mut(i, j).copy_from_slice(&bc);
        }
    }
    line_backward_error(s, &z, &b)
}

/// Backward error allowed to a line solve: 100 times the reference's own on the same system,
/// and never less than 1e-14.
fn backward_tol(reference: f64) -> f64 {
    (100.0 * reference).max(1e-14)
}

fn solve_tol(spread: f64) -> f64 {
    TOL_SOLVE.max(10.0 * spread)
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1e-300)
}

/// The stencil of `block` (graded vertical grid, `nz` cells) in geometry `g`.
pub fn level(g: Geometry, block: Block, nz: usize) -> LevelStencil {
    let p = ProblemParams {
        geometry: g,
        grading: Grading::Graded,
        nz,
        n: block.n,
        ..Default::default()
    };
    LevelStencil::new(&p, block, std::sync::Arc::new(VerticalGrid::new(&p)))
}

/// Blocks of `nx × ny` of an `n × n` level: at the south-west corner, at the north-east corner,
/// in the interior; and a whole odd level.
pub fn blocks(n: usize, nx: usize, ny: usize) -> Vec<Block> {
    let at = |i0, j0| block_at(n, (i0, j0), (nx, ny));
    vec![at(0, 0), at(n - nx, n - ny), at(6, 8), Block::whole(13)]
}

/// The block of `nx × ny` columns at `(i0, j0)` of an `n × n` level, walls all round.
fn block_at(n: usize, (i0, j0): (usize, usize), (nx, ny): (usize, usize)) -> Block {
    Block {
        n,
        i0,
        j0,
        nx,
        ny,
        panel: None,
        bc: Default::default(),
    }
}

/// The backend's copy of a host field: the interior by `upload`, the four halo faces by
/// `face_from_host` and `unpack_face`.
pub fn to_backend<B: Backend>(b: &B, op: &B::LevelOp, h: &HostField) -> B::Field {
    let mut d = b.alloc(op).expect("alloc");
    let mut host = vec![0.0; h.nx * h.ny * h.nz];
    h.get_interior(&mut host);
    b.upload(op, &host, &mut d).expect("upload");
    for side in Side::ALL {
        // The halo across `side` of h is what the neighbour there would send.
        let len = face_len(b.stencil(op), side);
        let mut buf = vec![0.0; len];
        h.pack_halo(side, &mut buf);
        let mut face = b.alloc_face(len).expect("alloc_face");
        b.face_from_host(&buf, &mut face).expect("face_from_host");
        b.unpack_face(op, &mut d, side, &face).expect("unpack_face");
    }
    d
}

/// The interior of a backend field on the host.
pub fn to_host<B: Backend>(b: &B, op: &B::LevelOp, d: &B::Field) -> HostField {
    let s = b.stencil(op);
    let mut h = HostField::zeros(s.nx(), s.ny(), s.nz);
    let mut host = vec![0.0; s.cells()];
    b.download(op, d, &mut host).expect("download");
    h.set_interior(&host);
    h
}

/// Every case of the single-level checks: both geometries, nz = 7 and 128, the [`blocks`].
fn cases() -> Vec<LevelStencil> {
    let mut out = vec![];
    for g in [Geometry::Panel, Geometry::Box] {
        for nz in [7, 128] {
            for block in blocks(82, 37, 29) {
                out.push(level(g, block, nz));
            }
        }
    }
    out
}

/// fill, copy, axpy, xpby, dot.
pub fn vector_kernels<B: Backend>(b: &B) {
    let r = ReferenceBackend;
    let mut rng = Rng::new(1);
    for s in cases() {
        let op = b.prepare_level(&s).expect("prepare_level");
        let ctx = format!("{:?} nz={} {:?}", s.block, s.nz, b.name());
        let (x, y, f) = (rng.field(&s), rng.field(&s), rng.field(&s));
        let (dx, df) = (to_backend(b, &op, &x), to_backend(b, &op, &f));
        let (mut hy, mut dy) = (y.clone(), to_backend(b, &op, &y));
        r.axpy(&s, 0.7, &x, &mut hy).unwrap();
        b.axpy(&op, 0.7, &dx, &mut dy).unwrap();
        assert!(rel_diff(&to_host(b, &op, &dy), &hy) <= TOL, "axpy {ctx}");
        r.xpby(&s, &x, -0.3, &mut hy).unwrap();
        b.xpby(&op, &dx, -0.3, &mut dy).unwrap();
        assert!(rel_diff(&to_host(b, &op, &dy), &hy) <= TOL, "xpby {ctx}");
        let (dd, dr) = (b.dot(&op, &dx, &df).unwrap(), r.dot(&s, &x, &f).unwrap());
        assert!(close(dd, dr, TOL_SUM), "dot {ctx}: {dd} vs {dr}");
        // The fused forms: y ← y + a x with ‖y‖², and [⟨x, y⟩, ⟨y, f⟩] in one pass.
        let nh = r.axpy_norm(&s, -0.9, &f, &mut hy).unwrap();
        let nd = b.axpy_norm(&op, -0.9, &df, &mut dy).unwrap();
        assert!(
            rel_diff(&to_host(b, &op, &dy), &hy) <= TOL,
            "axpy_norm {ctx}"
        );
        assert!(close(nd, nh, TOL_SUM), "axpy_norm sum {ctx}: {nd} vs {nh}");
        let (ph, pd) = (
            r.dot_pair(&s, &x, &hy, &f).unwrap(),
            b.dot_pair(&op, &dx, &dy, &df).unwrap(),
        );
        assert!(
            close(pd[0], ph[0], TOL_SUM) && close(pd[1], ph[1], TOL_SUM),
            "dot_pair {ctx}: {pd:?} vs {ph:?}"
        );
        b.copy(&op, &dx, &mut dy).unwrap();
        assert_eq!(rel_diff(&to_host(b, &op, &dy), &x), 0.0, "copy {ctx}");
        b.fill(&op, &mut dy, 2.5).unwrap();
        let filled = to_host(b, &op, &dy);
        assert!(
            (0..s.ny()).all(|j| (0..s.nx()).all(|i| filled.column(i, j).iter().all(|&v| v == 2.5))),
            "fill {ctx}"
        );
    }
}

/// apply, residual, residual_only and residual_norm of `b` on `x`, `f` against the reference on level `s`;
/// returns the reference's residual `f − A x`.
fn check_apply_residual<B: Backend>(
    b: &B,
    s: &LevelStencil,
    op: &B::LevelOp,
    (x, f): (&HostField, &HostField),
    rng: &mut Rng,
    ctx: &str,
) -> HostField {
    let r = ReferenceBackend;
    let y = rng.field(s);
    let (dx, df) = (to_backend(b, op, x), to_backend(b, op, f));
    let (mut ha, mut da) = (rng.field(s), to_backend(b, op, &y));
    r.apply(s, x, &mut ha).unwrap();
    b.apply(op, &dx, &mut da).unwrap();
    assert!(rel_diff(&to_host(b, op, &da), &ha) <= TOL, "apply {ctx}");
    let rr_h = r.residual(s, f, x, &mut ha).unwrap();
    let rr_d = b.residual(op, &df, &dx, &mut da).unwrap();
    assert!(
        rel_diff(&to_host(b, op, &da), &ha) <= TOL && close(rr_d, rr_h, TOL_SUM),
        "residual {ctx}"
    );
    let mut dr = to_backend(b, op, &y);
    b.residual_only(op, &df, &dx, &mut dr).unwrap();
    assert!(
        rel_diff(&to_host(b, op, &dr), &ha) <= TOL,
        "residual_only {ctx}"
    );
    let nn_d = b.residual_norm(op, &df, &dx, &mut dr).unwrap();
    assert!(close(nn_d, rr_h, TOL_SUM), "residual_norm {ctx}");
    check_to_f32(b, s, op, (&dx, &df), (&ha, rr_h), rng, ctx);
    ha
}

/// `residual_to` and `axpy_from` between the fp64 level `s` and its fp32 7-point preparation
/// (the pair of mixed-precision defect correction): `res` (the reference's f − A x, with its
/// norm) rounded once into the fp32 field, the norm that of the unrounded values; an fp32
/// field added into an fp64 one exactly as the fp64 axpy of its values. Each also between two
/// fp64 preparations (the plain kernels).
fn check_to_f32<B: Backend>(
    b: &B,
    s: &LevelStencil,
    op: &B::LevelOp,
    (dx, df): (&B::Field, &B::Field),
    (res, norm): (&HostField, f64),
    rng: &mut Rng,
    ctx: &str,
) {
    let r = ReferenceBackend;
    let s7 = s.seven_point();
    for to_s in [s7.with_storage(Storage::F32), s7] {
        let to = b.prepare_level(&to_s).expect("prepare_level");
        let ctx = format!("{ctx} to {:?}", to_s.storage);
        let y = rounded(&rng.field(&to_s));
        let mut d = to_backend(b, &to, &y);
        let n = b.residual_to(op, df, dx, &to, &mut d).unwrap();
        let want = if to_s.storage == Storage::F32 {
            rounded(res)
        } else {
            res.clone()
        };
        assert!(
            rel_diff(&to_host(b, &to, &d), &want) <= TOL && close(n, norm, TOL_SUM),
            "residual_to {ctx}: {n:e} vs {norm:e}"
        );
        let (x, y) = (rounded(&rng.field(&to_s)), rng.field(s));
        let (mut hy, mut dy) = (y.clone(), to_backend(b, op, &y));
        r.axpy(s, 0.7, &x, &mut hy).unwrap();
        b.axpy_from(op, 0.7, &to, &to_backend(b, &to, &x), &mut dy)
            .unwrap();
        assert!(
            rel_diff(&to_host(b, op, &dy), &hy) <= TOL,
            "axpy_from {ctx}"
        );
    }
}

/// The fused CG SpMV of `b` on `z` against the reference on level `s`; returns the reference's
/// q (`A z + β q`).
fn check_cg_spmv<B: Backend>(
    b: &B,
    s: &LevelStencil,
    op: &B::LevelOp,
    z: &HostField,
    rng: &mut Rng,
    ctx: &str,
) -> HostField {
    let r = ReferenceBackend;
    let dz = to_backend(b, op, z);
    let (u, p, q) = (rng.field(s), rng.field(s), rng.field(s));
    let (mut hu, mut hp, mut hq) = (u.clone(), p.clone(), q.clone());
    let (mut du, mut dp, mut dq) = (
        to_backend(b, op, &u),
        to_backend(b, op, &p),
        to_backend(b, op, &q),
    );
    let sh = r
        .cg_spmv(s, z, &mut hu, &mut hp, &mut hq, 0.4, 0.6)
        .unwrap();
    let sd = b
        .cg_spmv(op, &dz, &mut du, &mut dp, &mut dq, 0.4, 0.6)
        .unwrap();
    assert!(rel_diff(&to_host(b, op, &du), &hu) <= TOL, "spmv u {ctx}");
    assert!(rel_diff(&to_host(b, op, &dp), &hp) <= TOL, "spmv p {ctx}");
    assert!(
        rel_diff(&to_host(b, op, &dq), &hq) <= TOL && close(sd, sh, TOL_SUM),
        "spmv q {ctx}"
    );
    hq
}

/// apply, residual (with its norm), line_solve.
pub fn stencil_kernels<B: Backend>(b: &B) {
    let r = ReferenceBackend;
    let mut rng = Rng::new(2);
    for s in cases() {
        let op = b.prepare_level(&s).expect("prepare_level");
        let ctx = format!("{:?} nz={} {:?}", s.block, s.nz, b.name());
        let (x, f) = (rng.field(&s), rng.field(&s));
        let mut ha = check_apply_residual(b, &s, &op, (&x, &f), &mut rng, &ctx);
        let (df, mut da) = (to_backend(b, &op, &f), to_backend(b, &op, &x));
        let spread = rounding_spread(&f, |f_in| {
            let mut z = f_in.clone();
            r.line_solve(&s, f_in, &mut z).unwrap();
            z
        });
        r.line_solve(&s, &f, &mut ha).unwrap();
        b.line_solve(&op, &df, &mut da).unwrap();
        let hda = to_host(b, &op, &da);
        let d = rel_diff(&hda, &ha);
        let (be, be_ref) = (
            line_backward_error(&s, &hda, &f),
            line_backward_error(&s, &ha, &f),
        );
        if d > solve_tol(spread) {
            eprintln!(
                "note: line_solve {ctx}: forward {d:e}, backward error {be:e} (reference {be_ref:e})"
            );
        }
        assert!(
            d <= solve_tol(spread) || be <= backward_tol(be_ref),
            "line_solve {ctx}: {d:e} (rounding spread {spread:e}), backward error {be:e} (reference {be_ref:e})"
        );
        // The backward check itself can fail: a solution off by 1e-6 is far outside it.
        let mut off = ha.clone();
        off.data.iter_mut().for_each(|v| *v *= 1.0 + 1e-6);
        assert!(
            line_backward_error(&s, &off, &f) > backward_tol(be_ref),
            "{ctx}"
        );
    }
}

/// The fused CG kernels (SpMV and Tridiag with their sums).
pub fn cg_kernels<B: Backend>(b: &B) {
    let r = ReferenceBackend;
    let mut rng = Rng::new(3);
    for s in cases() {
        let op = b.prepare_level(&s).expect("prepare_level");
        let ctx = format!("{:?} nz={} {:?}", s.block, s.nz, b.name());
        let z = rng.field(&s);
        let hq = check_cg_spmv(b, &s, &op, &z, &mut rng, &ctx);
        let dq = to_backend(b, &op, &hq);
        let rr = rng.field(&s);
        let (mut hr, mut dr) = (rr.clone(), to_backend(b, &op, &rr));
        let zz = rng.field(&s);
        let (mut hz, mut dz) = (zz.clone(), to_backend(b, &op, &zz));
        let spread = rounding_spread(&rr, |r_in| {
            let (mut r1, mut z1) = (r_in.clone(), zz.clone());
            r.cg_tridiag(&s, &hq, &mut r1, &mut z1, 0.8).unwrap();
            z1
        });
        let th = r.cg_tridiag(&s, &hq, &mut hr, &mut hz, 0.8).unwrap();
        let td = b.cg_tridiag(&op, &dq, &mut dr, &mut dz, 0.8).unwrap();
        let dr_diff = rel_diff(&to_host(b, &op, &dr), &hr);
        assert!(dr_diff <= TOL, "tridiag r {ctx}: {dr_diff:e}");
        // z = M⁻¹ r_new: the same iterate where the columns allow it; a solution of the same
        // quality (backward error) where they are too ill-conditioned for a forward comparison.
        let hdz = to_host(b, &op, &dz);
        let dz_diff = rel_diff(&hdz, &hz);
        let (be, be_ref) = (
            line_backward_error(&s, &hdz, &hr),
            line_backward_error(&s, &hz, &hr),
        );
        if dz_diff > solve_tol(spread) {
            eprintln!(
                "note: tridiag z {ctx}: forward {dz_diff:e}, backward error {be:e} (reference {be_ref:e})"
            );
        }
        assert!(
            dz_diff <= solve_tol(spread) || be <= backward_tol(be_ref),
            "tridiag z {ctx}: {dz_diff:e} (rounding spread {spread:e}), backward error {be:e} (reference {be_ref:e})"
        );
        assert!(
            close(td[0], th[0], TOL_SUM) && close(td[1], th[1], solve_tol(spread)),
            "tridiag sums {ctx}: {td:?} vs {th:?}"
        );
    }
}

/// The Krylov kernels in their slot form ([`strata::backend::ScalarKernels`]: coefficients read
/// from the solver's scalars, reductions written into them) give exactly what their value
/// form gives on the same backend (itself checked against the reference above), the scalar
/// arithmetic gives the host's values bit for bit, a broken-down curvature gives a zero step,
/// and a slot out of range is refused with an error.
pub fn scalar_kernels<B: Backend>(b: &B) {
    use strata::backend::{host_slots, Coef, ScalarOp};
    let mut rng = Rng::new(5);
    for s in cases() {
        let op = b.prepare_level(&s).expect("prepare_level");
        let ctx = format!("{:?} nz={} {:?}", s.block, s.nz, b.name());
        let fields: Vec<HostField> = (0..4).map(|_| rng.field(&s)).collect();
        let dev = |h: &HostField| to_backend(b, &op, h);
        let mut sc = b.alloc_scalars(8).unwrap();
        let (alpha, beta) = (0.7, -0.3);
        b.write_scalars(&mut sc, 2, &[alpha, beta]).unwrap();
        let (a, bb) = (Coef::slot(1.0, 2), Coef::slot(1.0, 3));
        // CG SpMV.
        let (z, mut u1, mut p1, mut q1) = (
            dev(&fields[0]),
            dev(&fields[1]),
            dev(&fields[2]),
            dev(&fields[3]),
        );
        let (mut u2, mut p2, mut q2) = (dev(&fields[1]), dev(&fields[2]), dev(&fields[3]));
        let pq = b
            .cg_spmv(&op, &z, &mut u1, &mut p1, &mut q1, alpha, beta)
            .unwrap();
        b.cg_spmv_slots(&op, &z, &mut u2, &mut p2, &mut q2, &mut sc, (a, bb), 0)
            .unwrap();
        let same = |x: &B::Field, y: &B::Field| to_host(b, &op, x) == to_host(b, &op, y);
        assert!(
            same(&u1, &u2) && same(&p1, &p2) && same(&q1, &q2),
            "cg_spmv {ctx}"
        );
        assert_eq!(host_slots(b, &sc).unwrap()[0], pq, "cg_spmv sum {ctx}");
        // CG Tridiag, −α q: one value, slot 2 times −1.
        let (mut r1, mut z1) = (dev(&fields[1]), dev(&fields[2]));
        let (mut r2, mut z2) = (dev(&fields[1]), dev(&fields[2]));
        let t = b.cg_tridiag(&op, &q1, &mut r1, &mut z1, alpha).unwrap();
        b.cg_tridiag_slots(&op, &q1, &mut r2, &mut z2, &mut sc, a, 4)
            .unwrap();
        assert!(same(&r1, &r2) && same(&z1, &z2), "cg_tridiag {ctx}");
        assert_eq!(
            host_slots(b, &sc).unwrap()[4..6],
            t,
            "cg_tridiag sums {ctx}"
        );
        // axpy_norm with −α, axpy, dot, dot_pair.
        let yy = b.axpy_norm(&op, -alpha, &q1, &mut r1).unwrap();
        b.axpy_norm_slots(&op, Coef::slot(-1.0, 2), &q1, &mut r2, &mut sc, 1)
            .unwrap();
        assert!(same(&r1, &r2), "axpy_norm {ctx}");
        b.axpy(&op, beta, &p1, &mut u1).unwrap();
        b.axpy_slots(&op, bb, &p1, &mut u2, &sc).unwrap();
        assert!(same(&u1, &u2), "axpy {ctx}");
        let d = b.dot(&op, &r1, &z1).unwrap();
        b.dot_slots(&op, &r1, &z1, &mut sc, 0).unwrap();
        let dp = b.dot_pair(&op, &r1, &z1, &q1).unwrap();
        b.dot_pair_slots(&op, &r1, &z1, &q1, &mut sc, 6).unwrap();
        let v = host_slots(b, &sc).unwrap();
        assert_eq!((v[1], v[0], [v[6], v[7]]), (yy, d, dp), "slot sums {ctx}");
        // Scalar arithmetic: the host's values exactly; a zero curvature gives α = 0.
        let ops = [
            ScalarOp {
                guard: true,
                ..ScalarOp::ratio(2, 0, 1)
            },
            ScalarOp {
                dst: 3,
                sign: -1.0,
                num: 2,
                by: Some(7),
                den: Some(0),
                guard: false,
            },
            ScalarOp::copy(5, 4),
        ];
        let mut want = v.clone();
        for o in &ops {
            want[o.dst] = o.eval(&want);
        }
        b.scalar_ops(&mut sc, &ops).unwrap();
        assert_eq!(host_slots(b, &sc).unwrap(), want, "scalar_ops {ctx}");
        b.write_scalars(&mut sc, 1, &[0.0]).unwrap();
        b.scalar_ops(&mut sc, &ops[..1]).unwrap();
        assert_eq!(host_slots(b, &sc).unwrap()[2], 0.0, "guarded step {ctx}");
        // Out of range: refused, no panic.
        assert!(b.scalar_ops(&mut sc, &[ScalarOp::copy(8, 0)]).is_err());
        assert!(b.write_scalars(&mut sc, 7, &[1.0, 2.0]).is_err());
        assert!(b.dot_pair_slots(&op, &r1, &z1, &q1, &mut sc, 7).is_err());
    }
}

/// Panel 3 of a sphere of `n × n` panels (graded, `nz` cells), with the coefficient fields of
/// [`coefficient_fields`] (advection included) on every panel if `fields`.
fn sphere_panel(n: usize, nz: usize, fields: bool) -> LevelStencil {
    let p = ProblemParams {
        geometry: Geometry::Sphere,
        grading: Grading::Graded,
        nz,
        n,
        ..Default::default()
    };
    let vertical = std::sync::Arc::new(VerticalGrid::new(&p));
    let block = Block::panel(3, n);
    if !fields {
        return LevelStencil::new(&p, block, vertical);
    }
    let one = coefficient_fields(n, nz, 11);
    let six = |v: &Vec<f64>| v.repeat(6);
    let c = Coefficients {
        panels: 6,
        n,
        nz,
        kx: six(&one.kx),
        ky: six(&one.ky),
        kz: six(&one.kz),
        beta: six(&one.beta),
        xi: one
            .xi
            .as_ref()
            .map(|x| [six(&x[0]), six(&x[1]), six(&x[2])]),
        window: None,
    };
    LevelStencil::with_coefficients(&p, block, vertical, Some(&c))
}

/// The kernels that apply the sphere's nine-point operator (docs/MODEL.md §16.1) — apply,
/// residual, residual_only, the CG SpMV — on a whole panel, whose cross terms couple diagonal
/// neighbours; and the relaxations, which take them: block Jacobi (the whole operator's
/// residual), the four quarter colours' sweeps (the diagonal neighbours' values in the columns'
/// right-hand sides, C's own part lagged), which refuse the checkerboard's half-sweeps.
pub fn cross_term_kernels<B: Backend>(b: &B) {
    let r = ReferenceBackend;
    let mut rng = Rng::new(5);
    for (n, nz, fields) in [(16, 7, false), (12, 128, false), (12, 9, true)] {
        let s = sphere_panel(n, nz, fields);
        assert!(s.cross.is_some() && s.cells.is_some() == fields);
        let op = b.prepare_level(&s).expect("prepare_level");
        let ctx = format!("sphere panel n={n} nz={nz} fields {fields} {:?}", b.name());
        let (x, f, y) = (rng.field(&s), rng.field(&s), rng.field(&s));
        let (dx, df) = (to_backend(b, &op, &x), to_backend(b, &op, &f));
        let res = check_apply_residual(b, &s, &op, (&x, &f), &mut rng, &ctx);
        check_cg_spmv(b, &s, &op, &x, &mut rng, &ctx);
        // The cross terms are there: the 7-point part alone differs.
        let mut h7 = rng.field(&s);
        r.residual(&s.seven_point(), &f, &x, &mut h7).unwrap();
        assert!(rel_diff(&h7, &res) > 1e3 * TOL, "cross terms missing {ctx}");
        // Block Jacobi relaxes the whole operator (and the 7-point part's differs).
        let mut hw = HostField::zeros(s.nx(), s.ny(), s.nz);
        r.smooth(&s, &f, &x, &mut hw, 0.7).unwrap();
        let mut dw = to_backend(b, &op, &y);
        b.smooth(&op, &df, &dx, &mut dw, 0.7).unwrap();
        // The nz = 128 columns amplify rounding by κ(A_T): the forward difference within ten
        // times the reference's own spread under rounding-sized changes of f, or the step's
        // backward error at the rounding level.
        let out = to_host(b, &op, &dw);
        let (d, be) = (
            rel_diff(&out, &hw),
            smooth_backward_error(&s, &f, &x, &out, 0.7),
        );
        let spread = rounding_spread(&f, |f_in| {
            let mut o = HostField::zeros(s.nx(), s.ny(), s.nz);
            r.smooth(&s, f_in, &x, &mut o, 0.7).unwrap();
            o
        });
        assert!(
            d <= solve_tol(spread) || be <= TOL_PCR,
            "smooth {ctx}: {d:e} (spread {spread:e}), backward error {be:e}"
        );
        let mut h7 = HostField::zeros(s.nx(), s.ny(), s.nz);
        r.smooth(&s.seven_point(), &f, &x, &mut h7, 0.7).unwrap();
        assert!(
            rel_diff(&h7, &hw) > 1e3 * TOL,
            "diagonal terms not relaxed {ctx}"
        );
        // The quarter sweeps, over-relaxed, each leaving the other quarters alone.
        for color in 2..6 {
            let mut hu = x.clone();
            r.smooth_color(&s, &f, &mut hu, color, 1.1).unwrap();
            let mut du = to_backend(b, &op, &x);
            b.smooth_color(&op, &df, &mut du, color, 1.1).unwrap();
            let got = to_host(b, &op, &du);
            // Forward within TOL_SOLVE, or (another elimination order at nz = 128) each swept
            // column's solve z = (u − (1 − w) x)/w backward stable for its system
            // T z = f − A x + T x (C's own part lagged: x, the old values).
            let d = rel_diff(&got, &hu);
            let be = quarter_backward_error(&s, &f, &x, &got, color, 1.1);
            assert!(
                d <= TOL_SOLVE || be <= TOL_PCR,
                "smooth_color {color} {ctx}: {d:e}, backward error {be:e}"
            );
            let q = color - 2;
            for j in 0..s.ny() {
                for i in 0..s.nx() {
                    let swept = i % 2 == q & 1 && j % 2 == q >> 1;
                    let (a, c) = (got.column(i, j), x.column(i, j));
                    assert_eq!(a == c, !swept, "quarter {q} at ({i}, {j}) {ctx}");
                }
            }
        }
        // A checkerboard half-sweep would write diagonal neighbours together: refused.
        let mut out = to_backend(b, &op, &y);
        for color in [0, 1, 6] {
            let e = b.smooth_color(&op, &df, &mut out, color, 1.0).unwrap_err();
            assert!(e.to_string().contains("colour"), "{ctx}: {e}");
        }
    }
}

/// The kernels that apply the terrain-following operator over orography (docs/MODEL.md §23) —
/// apply, residual, residual_only, the CG SpMV — with its slant couplings to the
/// lateral neighbours' cells above and below, on whole boxes and panels (walls, periodic sides)
/// and on blocks with neighbours on every side (random halos), with and without coefficient
/// fields; and
/// the relaxations, which take the slant couplings into their columns' right-hand sides. For
/// backends that take coefficient fields.
pub fn terrain_kernels<B: Backend>(b: &B) {
    use std::sync::Arc;
    use strata::grid::Boundaries;
    use strata::problem::Orography;
    let mut rng = Rng::new(23);
    let n = 16;
    let hill = Orography::new(
        n,
        (0..n * n)
            .map(|c| {
                let (x, y) = (
                    ((c % n) as f64 + 0.5) / n as f64,
                    ((c / n) as f64 + 0.5) / n as f64,
                );
                0.006 * (-((x - 0.4).powi(2) + (y - 0.55).powi(2)) / 0.05).exp()
            })
            .collect(),
    )
    .unwrap();
    // Even, so that it coarsens (the restriction onto the next level is checked too).
    let inner = Block {
        n,
        i0: 4,
        j0: 6,
        nx: 10,
        ny: 6,
        panel: None,
        bc: Default::default(),
    };
    for (geometry, bc, fields, block) in [
        (Geometry::Box, "dirichlet", false, None),
        (Geometry::Box, "x=periodic,y=neumann", true, None),
        (Geometry::Box, "periodic", false, Some(inner)),
        (Geometry::Box, "dirichlet", true, Some(inner)),
        (Geometry::Panel, "x=neumann", false, None),
        (Geometry::Panel, "dirichlet", true, Some(inner)),
    ] {
        let p = ProblemParams {
            geometry,
            grading: Grading::Graded,
            n,
            nz: 9,
            boundaries: Boundaries::parse(bc).unwrap(),
            orography: Some(Arc::new(hill.clone())),
            coefficients: fields.then(|| Arc::new(coefficient_fields(n, 9, 4))),
            ..Default::default()
        };
        let mut p = p;
        if let Some(c) = p.coefficients.as_mut() {
            Arc::make_mut(c).xi = None;
        }
        let block = block.unwrap_or(p.whole_block()).with_bc(p.boundaries);
        let levels = strata::stencil::build_levels(&p, block, 2).unwrap();
        let ctx = format!(
            "orography {geometry:?} {bc} fields {fields} {block:?} {:?}",
            b.name()
        );
        terrain_level(b, &levels, &mut rng, &ctx);
    }
    // The sphere (docs/MODEL.md §23.6): a tile of panel 1 (2 × 2 tiles per panel) with random
    // halos, its operator the nine-point one's diagonal couplings with the slant ones.
    for fields in [false, true] {
        let oro = Orography::with_panels(
            6,
            n,
            (0..6 * n * n)
                .map(|c| hill.h[c % (n * n)] * (1.0 + 0.1 * (c / (n * n)) as f64))
                .collect(),
        )
        .unwrap();
        let mut p = ProblemParams {
            geometry: Geometry::Sphere,
            grading: Grading::Graded,
            n,
            nz: 9,
            orography: Some(Arc::new(oro)),
            ..Default::default()
        };
        if fields {
            let mut c = strata::problem::Coefficients::smooth_sphere(n, 9, 4.0);
            c.xi = None;
            p.coefficients = Some(Arc::new(c));
        }
        let levels = sphere_tile_levels(&p);
        assert!(levels[0].cross.is_some());
        let ctx = format!("orography on the sphere, fields {fields}, {:?}", b.name());
        terrain_level(b, &levels, &mut rng, &ctx);
    }
}

/// The first two levels of a tile of panel 1 of the sphere problem `p` (2 × 2 tiles per panel),
/// each on its own: a block with neighbours on every side, across two panel edges.
fn sphere_tile_levels(p: &ProblemParams) -> Vec<LevelStencil> {
    let tiles = strata::grid::sphere::tiles(p.n, 2);
    strata::stencil::build_sphere_levels(p, &tiles, 2, Default::default())
        .unwrap()
        .iter()
        .map(|l| l.tiles.as_ref().unwrap()[5].clone())
        .collect()
}

/// [`terrain_kernels`] on the fine level of `levels` (its next level the coarse one).
fn terrain_level<B: Backend>(b: &B, levels: &[LevelStencil], rng: &mut Rng, ctx: &str) {
    let r = ReferenceBackend;
    {
        let s = levels[0].clone();
        assert!(s.slant.is_some() && s.cells.is_some() && levels[1].slant.is_some());
        let op = b.prepare_level(&s).expect("prepare_level");
        let (mut x, mut f, y) = (rng.field(&s), rng.field(&s), rng.field(&s));
        for side in Side::ALL.into_iter().filter(|side| s.block.periodic(*side)) {
            x.wrap_halo(side);
            f.wrap_halo(side);
        }
        let (dx, df) = (to_backend(b, &op, &x), to_backend(b, &op, &f));
        let res = check_apply_residual(b, &s, &op, (&x, &f), rng, ctx);
        check_cg_spmv(b, &s, &op, &x, rng, ctx);
        // The slant couplings are there: the 7-point part alone differs.
        let mut h7 = rng.field(&s);
        r.residual(&s.seven_point(), &f, &x, &mut h7).unwrap();
        assert!(rel_diff(&h7, &res) > 1e3 * TOL, "slant terms missing {ctx}");
        // The relaxations take the slant couplings into the columns' right-hand sides
        // (docs/MODEL.md §23.3): block Jacobi and both red-black half-sweeps.
        let mut hw = HostField::zeros(s.nx(), s.ny(), s.nz);
        r.smooth(&s, &f, &x, &mut hw, 0.7).unwrap();
        let mut dw = to_backend(b, &op, &y);
        b.smooth(&op, &df, &dx, &mut dw, 0.7).unwrap();
        let d = rel_diff(&to_host(b, &op, &dw), &hw);
        assert!(d <= TOL_SOLVE, "smooth {ctx}: {d:e}");
        // The V-cycle's residual restricted onto the coarse level (averaged orography) and
        // smoothed there: the fused form (CUDA) and the two kernels alike.
        let cs = &levels[1];
        let co = b.prepare_level(cs).expect("prepare_level");
        check_residual_restrict(
            b,
            (&s, &op),
            (cs, &co),
            (&f, &x),
            rng,
            (TOL, TOL_SOLVE, TOL_PCR),
            ctx,
        );
        // ... which change it: the 7-point part's relaxation differs.
        let mut h7 = HostField::zeros(s.nx(), s.ny(), s.nz);
        r.smooth(&s.seven_point(), &f, &x, &mut h7, 0.7).unwrap();
        assert!(
            rel_diff(&h7, &hw) > 1e3 * TOL,
            "slant terms not relaxed {ctx}"
        );
        // The checkerboard's halves, or on a level with diagonal couplings the quarters.
        let colours = if s.has_diagonals() { 2..6 } else { 0..2 };
        for color in colours {
            let mut hu = x.clone();
            r.smooth_color(&s, &f, &mut hu, color, 1.1).unwrap();
            let mut du = to_backend(b, &op, &x);
            b.smooth_color(&op, &df, &mut du, color, 1.1).unwrap();
            let d = rel_diff(&to_host(b, &op, &du), &hu);
            assert!(d <= TOL_SOLVE, "smooth_color {color} {ctx}: {d:e}");
        }
    }
}

/// The multigrid kernels: Smooth on one level, RestrictSmooth and Prolongate between a fine
/// block and its (odd-sized) coarse block.
pub fn multigrid_kernels<B: Backend>(b: &B) {
    let r = ReferenceBackend;
    let mut rng = Rng::new(4);
    for s in cases() {
        let op = b.prepare_level(&s).expect("prepare_level");
        let ctx = format!("{:?} nz={} {:?}", s.block, s.nz, b.name());
        let (x, f, y) = (rng.field(&s), rng.field(&s), rng.field(&s));
        let (mut ha, mut da) = (y.clone(), to_backend(b, &op, &y));
        let spread = rounding_spread(&f, |f_in| {
            let mut out = y.clone();
            r.smooth(&s, f_in, &x, &mut out, 2.0 / 3.0).unwrap();
            out
        });
        r.smooth(&s, &f, &x, &mut ha, 2.0 / 3.0).unwrap();
        let (dx, df) = (to_backend(b, &op, &x), to_backend(b, &op, &f));
        b.smooth(&op, &df, &dx, &mut da, 2.0 / 3.0).unwrap();
        let out = to_host(b, &op, &da);
        let d = rel_diff(&out, &ha);
        // Another elimination order (cyclic reduction on a GPU's coarse levels) rounds
        // differently: then (u_out − x)/ρ must solve the column systems to TOL_PCR.
        let be = smooth_backward_error(&s, &f, &x, &out, 2.0 / 3.0);
        if d > solve_tol(spread) {
            eprintln!("note: smooth {ctx}: forward {d:e}, backward error {be:e}");
        }
        assert!(
            d <= solve_tol(spread) || be <= TOL_PCR,
            "smooth {ctx}: {d:e} (rounding spread {spread:e}), backward error {be:e}"
        );
        red_black_sweep(b, &s, &op, &f, &x, &ctx);
    }
    for g in [Geometry::Panel, Geometry::Box] {
        // Fine blocks 74 × 58 of a 148 level (even offsets); coarse blocks 37 × 29 (odd).
        for fine_block in blocks(148, 74, 58).into_iter().take(3) {
            let fine_block = Block {
                i0: fine_block.i0 & !1,
                j0: fine_block.j0 & !1,
                ..fine_block
            };
            let (fs, cs) = (level(g, fine_block, 9), level(g, fine_block.coarsen(), 9));
            let (fo, co) = (b.prepare_level(&fs).unwrap(), b.prepare_level(&cs).unwrap());
            let rf = rng.field(&fs);
            let (mut hf, mut hu) = (rng.field(&cs), rng.field(&cs));
            let (mut df, mut du) = (to_backend(b, &co, &hf), to_backend(b, &co, &hu));
            r.restrict_smooth(&fs, &cs, &rf, &mut hf, &mut hu, 0.6, 1.0)
                .unwrap();
            let drf = to_backend(b, &fo, &rf);
            b.restrict_smooth(&fo, &co, &drf, &mut df, &mut du, 0.6, 1.0)
                .unwrap();
            assert!(
                rel_diff(&to_host(b, &co, &df), &hf) <= TOL,
                "restrict f {fine_block:?}"
            );
            // u_c = ρ M⁻¹ f_c: the same iterate, or (another elimination order) u_c/ρ solving
            // the column systems to TOL_PCR.
            let du_h = to_host(b, &co, &du);
            let fwd = rel_diff(&du_h, &hu);
            let mut zc = du_h.clone();
            zc.data.iter_mut().for_each(|v| *v /= 0.6);
            let be = line_backward_error(&cs, &zc, &hf);
            if fwd > TOL_SOLVE {
                eprintln!(
                    "note: restrict u {fine_block:?}: forward {fwd:e}, backward error {be:e}"
                );
            }
            assert!(
                fwd <= TOL_SOLVE || be <= TOL_PCR,
                "restrict u {fine_block:?}: forward {fwd:e}, backward error {be:e}"
            );
            let (f, u) = (rng.field(&fs), rng.field(&fs));
            check_residual_restrict(
                b,
                (&fs, &fo),
                (&cs, &co),
                (&f, &u),
                &mut rng,
                (TOL, TOL_SOLVE, TOL_PCR),
                &format!("{g:?} {fine_block:?}"),
            );
            let (uc, uf) = (rng.field(&cs), rng.field(&fs));
            let (mut hp, mut dp) = (uf.clone(), to_backend(b, &fo, &uf));
            r.prolongate(&cs, &fs, &uc, &mut hp).unwrap();
            let duc = to_backend(b, &co, &uc);
            b.prolongate(&co, &fo, &duc, &mut dp).unwrap();
            assert!(
                rel_diff(&to_host(b, &fo, &dp), &hp) <= TOL,
                "prolongate {fine_block:?}"
            );
        }
    }
    // The sphere's nine-point levels (a tile of panel 1, 2 × 2 tiles per panel, random halos):
    // the residual restricted with the diagonal couplings, with the model problem's per-column
    // operator and with coefficient fields (per-cell entries).
    for fields in [false, true] {
        let p = ProblemParams {
            geometry: Geometry::Sphere,
            grading: Grading::Graded,
            n: 16,
            nz: 9,
            coefficients: fields.then(|| {
                std::sync::Arc::new(strata::problem::Coefficients::smooth_sphere(16, 9, 10.0))
            }),
            ..Default::default()
        };
        let levels = sphere_tile_levels(&p);
        let (fs, cs) = (&levels[0], &levels[1]);
        assert!(fs.cross.is_some() && fs.cells.is_some() == fields);
        let (fo, co) = (b.prepare_level(fs).unwrap(), b.prepare_level(cs).unwrap());
        let (f, u) = (rng.field(fs), rng.field(fs));
        check_residual_restrict(
            b,
            (fs, &fo),
            (cs, &co),
            (&f, &u),
            &mut rng,
            (TOL, TOL_SOLVE, TOL_PCR),
            &format!("sphere nine-point tile, fields {fields} {:?}", b.name()),
        );
    }
    prolongated_halos(b);
}

/// `prolongate_faces`: on a block of a decomposition, the halo cells it prolongates are bit for
/// bit what each neighbouring block's `prolongate` computes for those cells (its interior
/// layer), when every block's coarse and fine fields hold the same global values, halos and
/// coarse corners included — so that the exchange after a prolongation can be left out — and
/// the halos are the reference's to `TOL`. Blocks in the middle of the level and at a corner (ghost parents
/// outside the physical boundary), sides with and without a neighbour asked for.
fn prolongated_halos<B: Backend>(b: &B) {
    let r = ReferenceBackend;
    let n = 48;
    // One global value per coarse or fine cell, halos included (the same on every block).
    let global = |level: u64, i: isize, j: isize, k: usize| {
        let h = (level * 1_000_003 + (i + 7) as u64 * 7919 + (j + 7) as u64 * 104_729 + k as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let field = |blk: Block, level: u64, nz: usize| {
        let mut h = HostField::zeros(blk.nx, blk.ny, nz);
        for jh in 0..blk.ny + 2 {
            for ih in 0..blk.nx + 2 {
                let o = h.offset(ih, jh);
                let (i, j) = (
                    blk.i0 as isize + ih as isize - 1,
                    blk.j0 as isize + jh as isize - 1,
                );
                for k in 0..nz {
                    h.data[o + k] = global(level, i, j, k);
                }
            }
        }
        h
    };
    let blk = |i0, j0, nx, ny| Block {
        n,
        i0,
        j0,
        nx,
        ny,
        panel: None,
        bc: Default::default(),
    };
    for g in [Geometry::Panel, Geometry::Box] {
        for nz in [7, 16] {
            for (a, sides) in [
                (blk(16, 8, 20, 24), [true; 4]),
                (blk(0, 0, 20, 24), [false, true, false, true]),
                (blk(28, 24, 20, 24), [true, false, true, false]),
                (blk(16, 8, 20, 24), [false, true, true, false]),
            ] {
                let ctx = format!("{g:?} nz={nz} {a:?} sides {sides:?} {:?}", b.name());
                // Prolongated here: A's own fields, then its halo faces.
                let (fs, cs) = (level(g, a, nz), level(g, a.coarsen(), nz));
                let (fo, co) = (b.prepare_level(&fs).unwrap(), b.prepare_level(&cs).unwrap());
                let (hc, hf) = (field(a.coarsen(), 1, nz), field(a, 0, nz));
                let (mut dc, mut df) = (to_backend(b, &co, &hc), to_backend(b, &fo, &hf));
                // The face cells at a face's ends read the coarse halo's corners (unless the
                // side across is physical): here they hold the diagonal blocks' values too.
                let (cx, cy) = (a.nx / 2 + 1, a.ny / 2 + 1);
                for at in [(0, 0), (cx, 0), (0, cy), (cx, cy)] {
                    let o = hc.offset(at.0, at.1);
                    let mut buf = b.alloc_face(nz).unwrap();
                    b.face_from_host(&hc.data[o..o + nz], &mut buf).unwrap();
                    b.unpack_column(&co, &mut dc, at, &buf).unwrap();
                }
                b.prolongate(&co, &fo, &dc, &mut df).unwrap();
                b.prolongate_faces(&co, &fo, &dc, &mut df, sides).unwrap();

                let mut want = hf.clone();
                r.prolongate(&cs, &fs, &hc, &mut want).unwrap();
                r.prolongate_faces(&cs, &fs, &hc, &mut want, sides).unwrap();
                for side in Side::ALL {
                    let len = face_len(&fs, side);
                    let cols = len / nz;
                    // For t along the face, A's halo column and the neighbour's column of the
                    // same cell (halo-inclusive).
                    let cell = |t: usize| match side {
                        Side::West => ((0, t + 1), (4, t + 1)),
                        Side::East => ((a.nx + 1, t + 1), (1, t + 1)),
                        Side::South => ((t + 1, 0), (t + 1, 4)),
                        Side::North => ((t + 1, a.ny + 1), (t + 1, 1)),
                    };
                    let column = |d: &B::Field, op: &B::LevelOp, at: (usize, usize)| {
                        let mut buf = b.alloc_face(nz).unwrap();
                        b.pack_column(op, d, at, &mut buf).unwrap();
                        let mut v = vec![0.0; nz];
                        b.face_to_host(&buf, &mut v).unwrap();
                        v
                    };
                    if !sides[side.index()] {
                        // Not asked for: the halo keeps what it held.
                        for t in 0..cols {
                            let (ih, jh) = cell(t).0;
                            let o = hf.offset(ih, jh);
                            assert_eq!(
                                column(&df, &fo, (ih, jh)),
                                hf.data[o..o + nz],
                                "{side:?} kept, {ctx}"
                            );
                        }
                        continue;
                    }
                    // The neighbour across `side` (only where one was asked for: at the
                    // level's edge it would lie outside).
                    let nb = match side {
                        Side::West => blk(a.i0 - 4, a.j0, 4, a.ny),
                        Side::East => blk(a.i0 + a.nx, a.j0, 4, a.ny),
                        Side::South => blk(a.i0, a.j0 - 4, a.nx, 4),
                        Side::North => blk(a.i0, a.j0 + a.ny, a.nx, 4),
                    };
                    // The neighbour's own prolongation of the cells across the side.
                    let (ns, ncs) = (level(g, nb, nz), level(g, nb.coarsen(), nz));
                    let (no, nco) = (
                        b.prepare_level(&ns).unwrap(),
                        b.prepare_level(&ncs).unwrap(),
                    );
                    let (ndc, mut ndf) = (
                        to_backend(b, &nco, &field(nb.coarsen(), 1, nz)),
                        to_backend(b, &no, &field(nb, 0, nz)),
                    );
                    b.prolongate(&nco, &no, &ndc, &mut ndf).unwrap();
                    for t in 0..cols {
                        let (ih, jh) = cell(t).0;
                        let got = column(&df, &fo, (ih, jh));
                        assert_eq!(
                            got,
                            column(&ndf, &no, cell(t).1),
                            "{side:?} halo column {t}, {ctx}"
                        );
                        let o = want.offset(ih, jh);
                        let d = got
                            .iter()
                            .zip(&want.data[o..o + nz])
                            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
                        assert!(
                            d <= TOL,
                            "{side:?} halo column {t} against the reference: {d:e}, {ctx}"
                        );
                    }
                }
            }
        }
    }
}

/// `residual_restrict_smooth` (the V-cycle's residual and the next level's RestrictSmooth in
/// one call, which a backend may fuse) against the reference's residual, then its
/// RestrictSmooth, from fine fields `f` and `u` (halo included): f_c to `tol`; u_c = ρ M⁻¹ f_c
/// to `tol_solve`, or (another elimination order) u_c/ρ solving the backend's own f_c's column
/// systems to `tol_backward`.
#[allow(clippy::too_many_arguments)]
fn check_residual_restrict<B: Backend>(
    b: &B,
    (fs, fo): (&LevelStencil, &B::LevelOp),
    (cs, co): (&LevelStencil, &B::LevelOp),
    (f, u): (&HostField, &HostField),
    rng: &mut Rng,
    (tol, tol_solve, tol_backward): (f64, f64, f64),
    ctx: &str,
) {
    let r = ReferenceBackend;
    let (rho, scale) = (0.6, 0.25);
    let mut hr = rng.field(fs);
    let (mut hf, mut hu) = (rng.field(cs), rng.field(cs));
    let (mut dr, mut df, mut du) = (
        to_backend(b, fo, &hr),
        to_backend(b, co, &hf),
        to_backend(b, co, &hu),
    );
    r.residual_only(fs, f, u, &mut hr).unwrap();
    r.restrict_smooth(fs, cs, &hr, &mut hf, &mut hu, rho, scale)
        .unwrap();
    let (dfine, dufine) = (to_backend(b, fo, f), to_backend(b, fo, u));
    b.residual_restrict_smooth(
        fo, co, &dfine, &dufine, &mut dr, &mut df, &mut du, rho, scale,
    )
    .unwrap();
    let got_f = to_host(b, co, &df);
    let d = rel_diff(&got_f, &hf);
    assert!(d <= tol, "residual_restrict f {ctx}: {d:e}");
    let got_u = to_host(b, co, &du);
    let fwd = rel_diff(&got_u, &hu);
    let mut zc = got_u.clone();
    zc.data.iter_mut().for_each(|v| *v /= rho);
    let be = line_backward_error(cs, &zc, &got_f);
    assert!(
        fwd <= tol_solve || be <= tol_backward,
        "residual_restrict u {ctx}: forward {fwd:e}, backward error {be:e}"
    );
}

/// A red then a black half-sweep of `smooth_color` from `x` (halo included) against the
/// reference's; and, on the reference, what the half-sweeps promise: a swept column satisfies
/// its rows of A u = f exactly after its own half-sweep (the black ones after both), and the
/// other colour is untouched.
fn red_black_sweep<B: Backend>(
    b: &B,
    s: &LevelStencil,
    op: &B::LevelOp,
    f: &HostField,
    x: &HostField,
    ctx: &str,
) {
    let r = ReferenceBackend;
    let (mut hu, mut du) = (x.clone(), to_backend(b, op, x));
    let df = to_backend(b, op, f);
    // The backend's state with x's halo (which no half-sweep changes).
    let state = |du: &B::Field| {
        let mut host = vec![0.0; s.cells()];
        b.download(op, du, &mut host).expect("download");
        let mut h = x.clone();
        h.set_interior(&host);
        h
    };
    let mut prev = x.clone();
    for color in [0, 1] {
        let before = hu.clone();
        r.smooth_color(s, f, &mut hu, color, 1.0).unwrap();
        b.smooth_color(op, &df, &mut du, color, 1.0).unwrap();
        let got = state(&du);
        let mut worst = 0.0f64;
        for j in 0..s.ny() {
            for i in 0..s.nx() {
                let swept = (s.block.i0 + i + s.block.j0 + j) % 2 == color;
                if !swept {
                    assert_eq!(hu.column(i, j), before.column(i, j), "other colour {ctx}");
                    assert_eq!(got.column(i, j), prev.column(i, j), "other colour {ctx}");
                }
                for (a, c) in got.column(i, j).iter().zip(hu.column(i, j)) {
                    worst = worst.max((a - c).abs());
                }
            }
        }
        let scale = max_abs(&hu);
        // Forward, where the column solves are well conditioned; else backward: the swept
        // columns satisfy their rows given the backend's own neighbours.
        if worst > TOL_SOLVE * scale.max(1.0) {
            assert_rows_solved(
                s,
                f,
                &got,
                color,
                (1e-12, RowNorm::Row),
                &format!("smooth_color {color} {ctx}"),
            );
        }
        prev = got;
    }
    assert_rows_solved(
        s,
        f,
        &hu,
        1,
        (1e-12, RowNorm::Row),
        &format!("reference {ctx}"),
    );
    // Over-relaxed: the swept columns (1 − w) x + w (the plain half-sweep's), the others x.
    let relax = 1.15;
    let (mut d1, mut dw) = (to_backend(b, op, x), to_backend(b, op, x));
    b.smooth_color(op, &df, &mut d1, 0, 1.0).unwrap();
    b.smooth_color(op, &df, &mut dw, 0, relax).unwrap();
    let (g1, gw) = (state(&d1), state(&dw));
    let scale = g1.data.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    for j in 0..s.ny() {
        for i in 0..s.nx() {
            let swept = (s.block.i0 + i + s.block.j0 + j).is_multiple_of(2);
            for k in 0..s.nz {
                let (x0, z1, zw) = (x.column(i, j)[k], g1.column(i, j)[k], gw.column(i, j)[k]);
                let want = if swept {
                    (1.0 - relax) * x0 + relax * z1
                } else {
                    x0
                };
                assert!(
                    (zw - want).abs() <= 1e-13 * scale,
                    "smooth_color with relax {relax} at ({i}, {j}, {k}) {ctx}: {zw} vs {want}"
                );
            }
        }
    }
}

/// How [`assert_rows_solved`] measures a row's residual.
#[derive(Clone, Copy)]
enum RowNorm {
    /// Each row against its own terms (Σ |a · u| + |f|): what an exact fp64 column solve leaves,
    /// backward stable row by row.
    Row,
    /// Each row against the largest row's terms: an fp32 solve by cyclic reduction is accurate
    /// normwise, not row by row (a row whose terms are small against its column's gets the
    /// column's rounding).
    Largest,
}

/// Asserts that the columns of `color` satisfy their rows of A u = f given their neighbours,
/// each row's residual at most `tol` times its terms or the largest row's ([`RowNorm`]).
fn assert_rows_solved(
    s: &LevelStencil,
    f: &HostField,
    u: &HostField,
    color: usize,
    (tol, norm): (f64, RowNorm),
    ctx: &str,
) {
    let nz = s.nz;
    let at = |i: usize, j: usize, k: usize| u.data[u.offset(i, j) + k];
    let mut rows = vec![];
    for j in 0..s.ny() {
        for i in 0..s.nx() {
            if (s.block.i0 + i + s.block.j0 + j) % 2 != color {
                continue;
            }
            let (ih, jh) = (i + 1, j + 1);
            for k in 0..nz {
                let e = s.row(i, j, k);
                let mut terms = vec![
                    e.diag * at(ih, jh, k),
                    e.east * at(ih + 1, jh, k),
                    e.west * at(ih - 1, jh, k),
                    e.north * at(ih, jh + 1, k),
                    e.south * at(ih, jh - 1, k),
                ];
                if k + 1 < nz {
                    terms.push(e.up * at(ih, jh, k + 1));
                }
                if k > 0 {
                    terms.push(e.down * at(ih, jh, k - 1));
                }
                let fk = f.column(i, j)[k];
                let res = fk - terms.iter().sum::<f64>();
                let size = terms.iter().map(|t| t.abs()).sum::<f64>() + fk.abs();
                rows.push(((i, j, k), res, size));
            }
        }
    }
    let largest = rows.iter().fold(0.0f64, |m, r| m.max(r.2));
    for ((i, j, k), res, size) in rows {
        let scale = match norm {
            RowNorm::Row => size,
            RowNorm::Largest => largest,
        };
        assert!(
            res.abs() <= tol * scale,
            "{ctx}: row ({i}, {j}, {k}) {res:e} of {size:e} (largest row {largest:e})"
        );
    }
}

/// pack_face sends the interior layer next to a side, exactly; a face unpacked into the
/// opposite halo of another field and packed back is the same face.
pub fn halo_faces<B: Backend>(b: &B) {
    let mut rng = Rng::new(5);
    for s in cases() {
        let op = b.prepare_level(&s).expect("prepare_level");
        let x = rng.field(&s);
        let dx = to_backend(b, &op, &x);
        for side in Side::ALL {
            let len = face_len(&s, side);
            let mut face = b.alloc_face(len).unwrap();
            b.pack_face(&op, &dx, side, &mut face).unwrap();
            let mut got = vec![0.0; len];
            b.face_to_host(&face, &mut got).unwrap();
            let mut want = vec![0.0; len];
            x.pack_face(side, &mut want);
            assert_eq!(got, want, "pack {side:?} {:?}", s.block);
            // Reversed in place, columns kept in order.
            b.reverse_face(&op, &mut face).unwrap();
            b.face_to_host(&face, &mut got).unwrap();
            strata::field::reverse_columns(&mut want, s.nz);
            assert_eq!(got, want, "reverse {side:?} {:?}", s.block);
        }
    }
    copy_halos(b, &mut rng);
    batched_halos(b, &mut rng);
    columns(b, &mut rng);
    halo_parts(b, &mut rng);
    halo_blocks(b, &mut rng);
}

/// Every face and corner of blocks `0..blocks`, every other one (alternating from block to
/// block) read backwards when unpacked: the halo parts of the pack and unpack tests.
pub fn every_part(blocks: usize) -> Vec<strata::backend::BlockPart> {
    use strata::backend::{BlockPart, HaloPart};
    (0..blocks)
        .flat_map(|block| {
            Side::ALL
                .into_iter()
                .map(HaloPart::Face)
                .chain((0..4).map(HaloPart::Corner))
                .enumerate()
                .map(move |(m, part)| BlockPart {
                    block,
                    part,
                    reversed: (m + block) % 2 == 1,
                })
        })
        .collect()
}

/// pack_blocks and unpack_blocks (the remote halos of a rank's tiles at once, more parts than
/// one launch takes on a GPU) move what pack_halo and unpack_halo move block by block, a
/// reversed part's columns the other way; a block out of range is refused.
fn halo_blocks<B: Backend>(b: &B, rng: &mut Rng) {
    use strata::backend::{BlockPart, HaloPart};
    let s = level(Geometry::Panel, Block::whole(7), 5);
    let blocks = 5;
    let ops: Vec<B::LevelOp> = (0..blocks).map(|_| b.prepare_level(&s).unwrap()).collect();
    let host: Vec<HostField> = (0..blocks).map(|_| rng.field(&s)).collect();
    let mut dev: Vec<B::Field> = host.iter().map(|h| to_backend(b, &ops[0], h)).collect();
    let parts = every_part(blocks);
    let mut bufs: Vec<B::FaceBuffer> = parts
        .iter()
        .map(|p| b.alloc_face(p.part.len(&s)).unwrap())
        .collect();
    let mut list: Vec<(BlockPart, &mut B::FaceBuffer)> =
        parts.iter().copied().zip(bufs.iter_mut()).collect();
    b.pack_blocks(&ops, &dev, &mut list).expect("pack_blocks");
    for (p, buf) in parts.iter().zip(&bufs) {
        let len = p.part.len(&s);
        let (mut got, mut want) = (vec![0.0; len], vec![0.0; len]);
        b.face_to_host(buf, &mut got).unwrap();
        match (p.part, p.part.corner_cells(&s)) {
            (HaloPart::Face(side), _) => host[p.block].pack_face(side, &mut want),
            (_, Some((own, _))) => host[p.block].pack_column(own, &mut want),
            _ => unreachable!("a corner has cells"),
        }
        assert_eq!(got, want, "pack_blocks {p:?}");
    }
    // New values into every part, unpacked at once: each block's halo as the host unpacks
    // them one by one (reversed where the part says so), its interior unchanged.
    let mut want = host.clone();
    for (p, buf) in parts.iter().zip(bufs.iter_mut()) {
        let mut v: Vec<f64> = (0..p.part.len(&s)).map(|_| rng.next_value()).collect();
        b.face_from_host(&v, buf).unwrap();
        if p.reversed {
            strata::field::reverse_columns(&mut v, s.nz);
        }
        match (p.part, p.part.corner_cells(&s)) {
            (HaloPart::Face(side), _) => want[p.block].unpack_face(side, &v),
            (_, Some((_, halo))) => want[p.block].unpack_column(halo, &v),
            _ => unreachable!("a corner has cells"),
        }
    }
    let mut list: Vec<(BlockPart, &mut B::FaceBuffer)> =
        parts.iter().copied().zip(bufs.iter_mut()).collect();
    b.unpack_blocks(&ops, &mut dev, &mut list)
        .expect("unpack_blocks");
    let (nx, ny) = (s.nx(), s.ny());
    for (t, (d, w)) in dev.iter().zip(&want).enumerate() {
        let (mut got, mut host) = (vec![0.0; s.cells()], vec![0.0; s.cells()]);
        b.download(&ops[t], d, &mut got).unwrap();
        w.get_interior(&mut host);
        assert_eq!(got, host, "unpack_blocks changed block {t}'s interior");
        let ring = (0..nx + 2)
            .flat_map(|i| [(i, 0), (i, ny + 1)])
            .chain((1..ny + 1).flat_map(|j| [(0, j), (nx + 1, j)]));
        for at in ring {
            let mut buf = b.alloc_face(s.nz).unwrap();
            b.pack_column(&ops[t], d, at, &mut buf).unwrap();
            let (mut got, mut wc) = (vec![0.0; s.nz], vec![0.0; s.nz]);
            b.face_to_host(&buf, &mut got).unwrap();
            w.pack_column(at, &mut wc);
            assert_eq!(got, wc, "unpack_blocks: block {t} at {at:?}");
        }
    }
    // A block out of range: refused.
    let mut buf = b.alloc_face(s.nz).unwrap();
    let stray = BlockPart {
        block: blocks,
        part: HaloPart::Corner(0),
        reversed: false,
    };
    assert!(b.pack_blocks(&ops, &dev, &mut [(stray, &mut buf)]).is_err());
    assert!(b
        .unpack_blocks(&ops, &mut dev, &mut [(stray, &mut buf)])
        .is_err());
}

/// pack_halo and unpack_halo (a rank's faces and corner columns at once) move what pack_face,
/// pack_column, unpack_face and unpack_column move one part at a time, exactly, on blocks of
/// several shapes; a buffer of the wrong length is refused.
fn halo_parts<B: Backend>(b: &B, rng: &mut Rng) {
    use strata::backend::HaloPart;
    let parts: Vec<HaloPart> = Side::ALL
        .into_iter()
        .map(HaloPart::Face)
        .chain((0..4).map(HaloPart::Corner))
        .collect();
    for s in cases().into_iter().filter(|s| s.nz == 7) {
        let op = b.prepare_level(&s).expect("prepare_level");
        let ctx = format!("{:?}", s.block);
        let (x, y) = (rng.field(&s), rng.field(&s));
        let (dx, mut dy) = (to_backend(b, &op, &x), to_backend(b, &op, &y));
        let mut bufs: Vec<B::FaceBuffer> = parts
            .iter()
            .map(|p| b.alloc_face(p.len(&s)).unwrap())
            .collect();
        let mut list: Vec<(HaloPart, &mut B::FaceBuffer)> =
            parts.iter().copied().zip(bufs.iter_mut()).collect();
        b.pack_halo(&op, &dx, &mut list).unwrap();
        for (p, buf) in parts.iter().zip(&bufs) {
            let mut got = vec![0.0; p.len(&s)];
            b.face_to_host(buf, &mut got).unwrap();
            let mut want = vec![0.0; p.len(&s)];
            match (p, p.corner_cells(&s)) {
                (HaloPart::Face(side), _) => x.pack_face(*side, &mut want),
                (_, Some((own, _))) => x.pack_column(own, &mut want),
                _ => unreachable!("a corner has cells"),
            }
            assert_eq!(got, want, "pack_halo {p:?} {ctx}");
        }
        // New values into every part, unpacked at once on the backend and one by one on the
        // host: every halo cell (faces and corners) and the interior equal.
        let mut want = y.clone();
        for (p, buf) in parts.iter().zip(bufs.iter_mut()) {
            let v: Vec<f64> = (0..p.len(&s)).map(|_| rng.next_value()).collect();
            b.face_from_host(&v, buf).unwrap();
            match (p, p.corner_cells(&s)) {
                (HaloPart::Face(side), _) => want.unpack_face(*side, &v),
                (_, Some((_, halo))) => want.unpack_column(halo, &v),
                _ => unreachable!("a corner has cells"),
            }
        }
        let list: Vec<(HaloPart, &B::FaceBuffer)> = parts.iter().copied().zip(&bufs).collect();
        b.unpack_halo(&op, &mut dy, &list).unwrap();
        let (nx, ny) = (s.nx(), s.ny());
        let ring = (0..nx + 2)
            .flat_map(|i| [(i, 0), (i, ny + 1)])
            .chain((1..ny + 1).flat_map(|j| [(0, j), (nx + 1, j)]));
        let mut interior = vec![0.0; s.cells()];
        b.download(&op, &dy, &mut interior).unwrap();
        let mut host = vec![0.0; s.cells()];
        want.get_interior(&mut host);
        assert_eq!(interior, host, "unpack_halo changed the interior {ctx}");
        for at in ring {
            let mut buf = b.alloc_face(s.nz).unwrap();
            b.pack_column(&op, &dy, at, &mut buf).unwrap();
            let (mut got, mut w) = (vec![0.0; s.nz], vec![0.0; s.nz]);
            b.face_to_host(&buf, &mut got).unwrap();
            want.pack_column(at, &mut w);
            assert_eq!(got, w, "unpack_halo at {at:?} {ctx}");
        }
        // A buffer of the wrong length: refused.
        let mut short = b.alloc_face(s.nz - 1).unwrap();
        let mut wrong = [(HaloPart::Corner(0), &mut short)];
        assert!(b.pack_halo(&op, &dx, &mut wrong).is_err(), "{ctx}");
    }
}

/// pack_column, unpack_column and copy_column (the tile corners of the sphere's nine-point
/// operator): exact, between an interior corner cell and a halo corner.
fn columns<B: Backend>(b: &B, rng: &mut Rng) {
    let s = level(Geometry::Panel, Block::whole(7), 5);
    let op = b.prepare_level(&s).expect("prepare_level");
    let (x, y) = (rng.field(&s), rng.field(&s));
    let (dx, mut dy) = (to_backend(b, &op, &x), to_backend(b, &op, &y));
    let host_column = |f: &HostField, at: (usize, usize)| {
        let mut v = vec![0.0; s.nz];
        f.pack_column(at, &mut v);
        v
    };
    let device_column = |d: &B::Field, at: (usize, usize)| {
        let mut buf = b.alloc_face(s.nz).unwrap();
        b.pack_column(&op, d, at, &mut buf).unwrap();
        let mut v = vec![0.0; s.nz];
        b.face_to_host(&buf, &mut v).unwrap();
        v
    };
    let m = s.nx();
    for (own, halo) in [
        ((1, 1), (0, 0)),
        ((m, 1), (m + 1, 0)),
        ((1, m), (0, m + 1)),
        ((m, m), (m + 1, m + 1)),
    ] {
        assert_eq!(
            device_column(&dx, own),
            host_column(&x, own),
            "pack_column {own:?}"
        );
        b.copy_column(&op, &dx, own, &op, &mut dy, halo).unwrap();
        assert_eq!(
            device_column(&dy, halo),
            host_column(&x, own),
            "copy_column {own:?} -> {halo:?}"
        );
        let mut buf = b.alloc_face(s.nz).unwrap();
        let want: Vec<f64> = (0..s.nz).map(|k| k as f64 + 0.5).collect();
        b.face_from_host(&want, &mut buf).unwrap();
        b.unpack_column(&op, &mut dy, halo, &buf).unwrap();
        assert_eq!(device_column(&dy, halo), want, "unpack_column {halo:?}");
    }
    // Outside the block and its halo: refused.
    let mut buf = b.alloc_face(s.nz).unwrap();
    assert!(b.pack_column(&op, &dx, (m + 2, 0), &mut buf).is_err());
    column_rectangles(b, rng);
}

/// copy_columns (a rank's block placed into the whole level gathered onto every rank, and taken
/// back out with its halo: docs/MODEL.md §24), in fp64 and fp32: every column of the rectangle
/// is the source's, bit for bit, and nothing else of the destination changes; a rectangle
/// outside a block and its halo, or between levels of two nz, is refused.
fn column_rectangles<B: Backend>(b: &B, rng: &mut Rng) {
    use strata::precision::Storage;
    for storage in [Storage::F64, Storage::F32] {
        let whole = level(Geometry::Panel, Block::whole(9), 4).with_storage(storage);
        let part = Block {
            i0: 3,
            j0: 2,
            nx: 5,
            ny: 3,
            ..Block::whole(9)
        };
        let block = level(Geometry::Panel, part, 4).with_storage(storage);
        let (wop, bop) = (
            b.prepare_level(&whole).unwrap(),
            b.prepare_level(&block).unwrap(),
        );
        let (w, x) = (rng.field(&whole), rng.field(&block));
        let (mut dw, dx) = (to_backend(b, &wop, &w), to_backend(b, &bop, &x));
        let column = |op: &B::LevelOp, d: &B::Field, at: (usize, usize)| {
            let mut buf = b.alloc_face(4).unwrap();
            b.pack_column(op, d, at, &mut buf).unwrap();
            let mut v = vec![0.0; 4];
            b.face_to_host(&buf, &mut v).unwrap();
            v
        };
        let snapshot = |op: &B::LevelOp, d: &B::Field, n: (usize, usize)| {
            let mut all = Vec::new();
            for j in 0..n.1 + 2 {
                for i in 0..n.0 + 2 {
                    all.push(((i, j), column(op, d, (i, j))));
                }
            }
            all
        };
        let ctx = format!("{storage:?}");
        // The block's interior into the whole level at its place.
        let before = snapshot(&wop, &dw, (9, 9));
        b.copy_columns(&bop, &dx, (1, 1), &wop, &mut dw, (4, 3), (5, 3))
            .unwrap();
        for ((i, j), was) in before {
            let inside = (4..9).contains(&i) && (3..6).contains(&j);
            let want = if inside {
                column(&bop, &dx, (i - 3, j - 2))
            } else {
                was
            };
            assert_eq!(column(&wop, &dw, (i, j)), want, "{ctx}: whole ({i}, {j})");
        }
        // The block with its halo back out of the whole level.
        let mut dy = to_backend(b, &bop, &rng.field(&block));
        b.copy_columns(&wop, &dw, (3, 2), &bop, &mut dy, (0, 0), (7, 5))
            .unwrap();
        for j in 0..5 {
            for i in 0..7 {
                assert_eq!(
                    column(&bop, &dy, (i, j)),
                    column(&wop, &dw, (i + 3, j + 2)),
                    "{ctx}: block ({i}, {j})"
                );
            }
        }
        // Refused: past the halo, and between levels of two nz.
        assert!(b
            .copy_columns(&wop, &dw, (5, 2), &bop, &mut dy, (0, 0), (7, 5))
            .is_err());
        let other = level(Geometry::Panel, part, 3).with_storage(storage);
        let oop = b.prepare_level(&other).unwrap();
        let mut dz = b.alloc(&oop).unwrap();
        assert!(b
            .copy_columns(&bop, &dx, (1, 1), &oop, &mut dz, (1, 1), (1, 1))
            .is_err());
    }
}

/// The kernels on levels with zero-flux and periodic sides (docs/MODEL.md §20): a periodic
/// halo filled by `wrap_halo` from the block's own far side; apply (whose edge rows read it),
/// the line relaxations and the prolongation (a zero-flux wall's ghost is +u, a periodic
/// side's the coarse halo) agree with the reference.
pub fn lateral_boundaries<B: Backend>(b: &B) {
    use strata::grid::Boundaries;
    let r = ReferenceBackend;
    let mut rng = Rng::new(11);
    for (g, bc) in [
        (Geometry::Box, "neumann"),
        (Geometry::Box, "x=periodic,y=neumann"),
        (Geometry::Box, "periodic"),
        (Geometry::Box, "x=dirichlet,y=periodic"),
        (Geometry::Panel, "x=neumann"),
    ] {
        let p = ProblemParams {
            geometry: g,
            grading: Grading::Graded,
            nz: 7,
            n: 12,
            boundaries: Boundaries::parse(bc).unwrap(),
            ..Default::default()
        };
        let ctx = format!("{g:?} {bc}");
        let levels = strata::stencil::build_levels(&p, p.whole_block(), 2).unwrap();
        let (fs, cs) = (&levels[0], &levels[1]);
        let fo = b.prepare_level(fs).expect("prepare_level");
        let co = b.prepare_level(cs).expect("prepare_level");
        // Halos: the periodic ones wrapped, the walls' random (a wall's α is 0 or its
        // ghost's; the kernels must not read them otherwise).
        let (x, f) = (rng.field(fs), rng.field(fs));
        let (mut hx, mut dx) = (x.clone(), to_backend(b, &fo, &x));
        let periodic = Side::ALL.map(|s| fs.block.periodic(s));
        b.wrap_halos(&fo, &mut dx, periodic).expect("wrap_halos");
        for side in Side::ALL.into_iter().filter(|s| periodic[s.index()]) {
            hx.wrap_halo(side);
        }
        let df = to_backend(b, &fo, &f);
        let mut want = HostField::zeros(fs.nx(), fs.ny(), fs.nz);
        r.apply(fs, &hx, &mut want).unwrap();
        let mut got = b.alloc(&fo).unwrap();
        b.apply(&fo, &dx, &mut got).unwrap();
        let d = rel_diff(&to_host(b, &fo, &got), &want);
        assert!(d <= TOL, "apply after wrap_halo {ctx}: {d:e}");
        // Block-Jacobi and red-black line relaxation read the wrapped halos.
        let mut hw = HostField::zeros(fs.nx(), fs.ny(), fs.nz);
        r.smooth(fs, &f, &hx, &mut hw, 0.7).unwrap();
        let mut dw = b.alloc(&fo).unwrap();
        b.smooth(&fo, &df, &dx, &mut dw, 0.7).unwrap();
        let d = rel_diff(&to_host(b, &fo, &dw), &hw);
        assert!(d <= TOL_SOLVE, "smooth {ctx}: {d:e}");
        for color in [0, 1] {
            let mut hu = hx.clone();
            r.smooth_color(fs, &f, &mut hu, color, 1.1).unwrap();
            let mut du = to_backend(b, &fo, &hx);
            b.smooth_color(&fo, &df, &mut du, color, 1.1).unwrap();
            let d = rel_diff(&to_host(b, &fo, &du), &hu);
            assert!(d <= TOL_SOLVE, "smooth_color {color} {ctx}: {d:e}");
        }
        // The prolongation from a coarse field whose periodic halos are wrapped.
        let (mut uc, uf) = (rng.field(cs), rng.field(fs));
        let mut duc = to_backend(b, &co, &uc);
        for side in Side::ALL.into_iter().filter(|s| cs.block.periodic(*s)) {
            b.wrap_halo(&co, &mut duc, side).expect("wrap_halo");
            uc.wrap_halo(side);
        }
        let (mut hp, mut dp) = (uf.clone(), to_backend(b, &fo, &uf));
        r.prolongate(cs, fs, &uc, &mut hp).unwrap();
        b.prolongate(&co, &fo, &duc, &mut dp).unwrap();
        let d = rel_diff(&to_host(b, &fo, &dp), &hp);
        assert!(d <= TOL, "prolongate {ctx}: {d:e}");
    }
    // A rank's block alone in its row of a domain periodic in x (its own neighbour there, not
    // square): both x halos in one call, as one wrap_halo each.
    let p = ProblemParams {
        geometry: Geometry::Box,
        nz: 5,
        n: 12,
        boundaries: Boundaries::parse("x=periodic,y=neumann").unwrap(),
        ..Default::default()
    };
    let block = Block {
        ny: 5,
        j0: 4,
        ..p.whole_block()
    };
    let s = LevelStencil::new(&p, block, std::sync::Arc::new(VerticalGrid::new(&p)));
    let op = b.prepare_level(&s).expect("prepare_level");
    let x = rng.field(&s);
    let (mut hx, mut dx) = (x.clone(), to_backend(b, &op, &x));
    b.wrap_halos(&op, &mut dx, [true, true, false, false])
        .expect("wrap_halos");
    hx.wrap_halo(Side::West);
    hx.wrap_halo(Side::East);
    let mut want = HostField::zeros(s.nx(), s.ny(), s.nz);
    r.apply(&s, &hx, &mut want).unwrap();
    let mut got = b.alloc(&op).unwrap();
    b.apply(&op, &dx, &mut got).unwrap();
    let d = rel_diff(&to_host(b, &op, &got), &want);
    assert!(d <= TOL, "apply after wrap_halos on a 12 x 5 block: {d:e}");
}

/// copy_halos fills several blocks' halos from each other at once (every side of every block,
/// both directions along faces), as copy_halo does one at a time: checked through `apply`.
fn batched_halos<B: Backend>(b: &B, rng: &mut Rng) {
    use strata::backend::HaloLink;
    let s = level(Geometry::Panel, Block::whole(6), 4);
    let ops: Vec<B::LevelOp> = (0..3).map(|_| b.prepare_level(&s).unwrap()).collect();
    let mut host: Vec<HostField> = (0..3).map(|_| rng.field(&s)).collect();
    let mut dev: Vec<B::Field> = host.iter().map(|h| to_backend(b, &ops[0], h)).collect();
    let mut links = Vec::new();
    for dst in 0..3 {
        for (m, side) in Side::ALL.into_iter().enumerate() {
            links.push(HaloLink {
                dst,
                side,
                src: (dst + 1 + m % 2) % 3,
                src_side: Side::ALL[(m + dst) % 4],
                reversed: (m + dst) % 2 == 1,
            });
        }
    }
    b.copy_halos(&ops, &mut dev, &links).expect("copy_halos");
    for l in &links {
        let src = host[l.src].clone();
        host[l.dst].copy_halo_from(l.side, &src, l.src_side, l.reversed);
    }
    for (t, (h, d)) in host.iter().zip(&dev).enumerate() {
        let mut want = HostField::zeros(s.nx(), s.ny(), s.nz);
        ReferenceBackend.apply(&s, h, &mut want).unwrap();
        let mut got = b.alloc(&ops[t]).unwrap();
        b.apply(&ops[t], d, &mut got).unwrap();
        let diff = rel_diff(&to_host(b, &ops[t], &got), &want);
        assert!(diff < 1e-12, "block {t}: {diff:e}");
    }
}

/// copy_halo fills a halo from another field's interior layer on any side, either way along
/// it (the sphere's tiles): checked through `apply`, whose edge rows read that halo.
fn copy_halos<B: Backend>(b: &B, rng: &mut Rng) {
    for g in [Geometry::Panel, Geometry::Box] {
        let s = level(g, Block::whole(7), 5);
        let op = b.prepare_level(&s).expect("prepare_level");
        for src_side in Side::ALL {
            for side in Side::ALL {
                for reversed in [false, true] {
                    let (x, mut y) = (rng.field(&s), rng.field(&s));
                    let (dx, mut dy) = (to_backend(b, &op, &x), to_backend(b, &op, &y));
                    b.copy_halo(&op, &dx, src_side, &op, &mut dy, side, reversed)
                        .expect("copy_halo");
                    y.copy_halo_from(side, &x, src_side, reversed);
                    let mut want = HostField::zeros(s.nx(), s.ny(), s.nz);
                    ReferenceBackend.apply(&s, &y, &mut want).unwrap();
                    let mut got = b.alloc(&op).unwrap();
                    b.apply(&op, &dy, &mut got).unwrap();
                    let d = rel_diff(&to_host(b, &op, &got), &want);
                    assert!(
                        d < 1e-12,
                        "{src_side:?} -> {side:?} reversed {reversed}: {d:e}"
                    );
                }
            }
        }
    }
}

/// Coefficient fields of an `n × n × nz` level: smooth variation with a contrast of about 10
/// (`exp` of a smooth field) times a random factor in [0.5, 1.5), so that neighbouring cells
/// differ as a model's do.
pub fn coefficient_fields(n: usize, nz: usize, seed: u64) -> Coefficients {
    let mut rng = Rng::new(seed);
    let mut field = |phase: f64| -> Vec<f64> {
        let mut v = Vec::with_capacity(n * n * nz);
        for j in 0..n {
            for i in 0..n {
                for k in 0..nz {
                    let (x, y, z) = (
                        i as f64 / n as f64,
                        j as f64 / n as f64,
                        k as f64 / nz as f64,
                    );
                    let smooth = (1.2 * (6.0 * x + phase).sin() * (4.0 * y).cos()
                        + 1.1 * (5.0 * z).sin())
                    .exp();
                    v.push(smooth * (1.0 + 0.5 * rng.next_value()));
                }
            }
        }
        v
    };
    Coefficients {
        panels: 1,
        n,
        nz,
        kx: field(0.0),
        ky: field(1.0),
        kz: field(2.0),
        beta: field(3.0),
        // An advection vector of either sign: the non-symmetric part of the operator.
        xi: Some([0, 1, 2].map(|_| (0..n * n * nz).map(|_| rng.next_value()).collect())),
        window: None,
    }
}

/// Every operator kernel on levels with per-cell coefficients (docs/MODEL.md §15): apply,
/// residual, line solve, the fused CG kernels, Smooth, RestrictSmooth.
pub fn cell_coefficient_kernels<B: Backend>(b: &B) {
    let r = ReferenceBackend;
    let mut rng = Rng::new(6);
    for g in [Geometry::Panel, Geometry::Box] {
        let p = ProblemParams {
            geometry: g,
            grading: Grading::Graded,
            nz: 9,
            n: 28,
            ..Default::default()
        };
        let coeffs = coefficient_fields(28, 9, 11);
        let coarse_coeffs = coeffs.coarsen();
        let v = std::sync::Arc::new(VerticalGrid::new(&p));
        for block in [
            Block::whole(28),
            Block {
                n: 28,
                i0: 6,
                j0: 8,
                nx: 14,
                ny: 10,
                panel: None,
                bc: Default::default(),
            },
        ] {
            let s = LevelStencil::with_coefficients(&p, block, v.clone(), Some(&coeffs));
            let cs = LevelStencil::with_coefficients(
                &p,
                block.coarsen(),
                v.clone(),
                Some(&coarse_coeffs),
            );
            let op = b.prepare_level(&s).expect("prepare_level");
            let cop = b.prepare_level(&cs).expect("prepare_level");
            let ctx = format!("{g:?} {block:?} {:?}", b.name());
            let (x, f, y) = (rng.field(&s), rng.field(&s), rng.field(&s));
            let (dx, df) = (to_backend(b, &op, &x), to_backend(b, &op, &f));
            let (mut ha, mut da) = (y.clone(), to_backend(b, &op, &y));
            r.apply(&s, &x, &mut ha).unwrap();
            b.apply(&op, &dx, &mut da).unwrap();
            assert!(rel_diff(&to_host(b, &op, &da), &ha) <= TOL, "apply {ctx}");
            let rr_h = r.residual(&s, &f, &x, &mut ha).unwrap();
            let rr_d = b.residual(&op, &df, &dx, &mut da).unwrap();
            assert!(
                rel_diff(&to_host(b, &op, &da), &ha) <= TOL && close(rr_d, rr_h, TOL_SUM),
                "residual {ctx}"
            );
            let mut dw = to_backend(b, &op, &y);
            let nn_d = b.residual_norm(&op, &df, &dx, &mut dw).unwrap();
            assert!(close(nn_d, rr_h, TOL_SUM), "residual_norm {ctx}");
            check_to_f32(b, &s, &op, (&dx, &df), (&ha, rr_h), &mut rng, &ctx);
            r.line_solve(&s, &f, &mut ha).unwrap();
            b.line_solve(&op, &df, &mut da).unwrap();
            let hda = to_host(b, &op, &da);
            let be = line_backward_error(&s, &hda, &f);
            assert!(
                rel_diff(&hda, &ha) <= TOL_SOLVE
                    || be <= backward_tol(line_backward_error(&s, &ha, &f)),
                "line_solve {ctx}"
            );
            // Fused CG.
            let (u, pp, q) = (rng.field(&s), rng.field(&s), rng.field(&s));
            let (mut hu, mut hp, mut hq) = (u.clone(), pp.clone(), q.clone());
            let (mut du, mut dp, mut dq) = (
                to_backend(b, &op, &u),
                to_backend(b, &op, &pp),
                to_backend(b, &op, &q),
            );
            let sh = r
                .cg_spmv(&s, &x, &mut hu, &mut hp, &mut hq, 0.4, 0.6)
                .unwrap();
            let sd = b
                .cg_spmv(&op, &dx, &mut du, &mut dp, &mut dq, 0.4, 0.6)
                .unwrap();
            assert!(
                rel_diff(&to_host(b, &op, &dq), &hq) <= TOL
                    && rel_diff(&to_host(b, &op, &dp), &hp) <= TOL
                    && rel_diff(&to_host(b, &op, &du), &hu) <= TOL
                    && close(sd, sh, TOL_SUM),
                "cg_spmv {ctx}"
            );
            let (mut hr, mut dr) = (f.clone(), to_backend(b, &op, &f));
            let (mut hz, mut dz) = (y.clone(), to_backend(b, &op, &y));
            let th = r.cg_tridiag(&s, &hq, &mut hr, &mut hz, 0.8).unwrap();
            let td = b.cg_tridiag(&op, &dq, &mut dr, &mut dz, 0.8).unwrap();
            let hdz = to_host(b, &op, &dz);
            assert!(
                rel_diff(&to_host(b, &op, &dr), &hr) <= TOL,
                "tridiag r {ctx}"
            );
            assert!(
                rel_diff(&hdz, &hz) <= TOL_SOLVE
                    || line_backward_error(&s, &hdz, &hr)
                        <= backward_tol(line_backward_error(&s, &hz, &hr)),
                "tridiag z {ctx}"
            );
            assert!(close(td[0], th[0], TOL_SUM), "tridiag sums {ctx}");
            // Smoother and the fused restriction + smoother.
            let (mut hs, mut ds) = (y.clone(), to_backend(b, &op, &y));
            r.smooth(&s, &f, &x, &mut hs, 2.0 / 3.0).unwrap();
            b.smooth(&op, &df, &dx, &mut ds, 2.0 / 3.0).unwrap();
            assert!(
                rel_diff(&to_host(b, &op, &ds), &hs) <= TOL_SOLVE,
                "smooth {ctx}"
            );
            red_black_sweep(b, &s, &op, &f, &x, &ctx);
            let (mut hf, mut hu) = (rng.field(&cs), rng.field(&cs));
            let (mut cf, mut cu) = (to_backend(b, &cop, &hf), to_backend(b, &cop, &hu));
            r.restrict_smooth(&s, &cs, &f, &mut hf, &mut hu, 0.6, 1.0)
                .unwrap();
            b.restrict_smooth(&op, &cop, &df, &mut cf, &mut cu, 0.6, 1.0)
                .unwrap();
            assert!(
                rel_diff(&to_host(b, &cop, &cf), &hf) <= TOL
                    && rel_diff(&to_host(b, &cop, &cu), &hu) <= TOL_SOLVE,
                "restrict_smooth {ctx}"
            );
            check_residual_restrict(
                b,
                (&s, &op),
                (&cs, &cop),
                (&f, &x),
                &mut rng,
                (TOL, TOL_SOLVE, TOL_PCR),
                &ctx,
            );
        }
    }
}

/// Kernels on fp32 levels, relative to the largest value: the reference rounds fp64 arithmetic
/// to fp32 on every store, a backend may compute in fp32 too (the CUDA backend does), which
/// leaves errors of a few fp32 ulps of the largest term. Line solves amplify them by κ(A_T):
/// they are checked by their backward error where the forward difference exceeds this.
pub const TOL_F32: f64 = 1e-5;

/// The backward error allowed to a line solve on an fp32 level computed in fp32 (where the
/// forward difference exceeds [`TOL_F32`]): a few fp32 ulps for a line solve (2–5e-8
/// measured); more for cyclic reduction in fp32 (the CUDA backend's coarse levels), whose
/// right-hand side accumulates rounding over log₂ nz elimination steps, and for a smoothing
/// step, whose right-hand side f − A x is itself rounded in fp32 with the large vertical terms
/// (3.4e-5 measured); a wrong solve is off by O(1).
pub const TOL_F32_SOLVE: f64 = 1e-4;

/// `h` rounded to fp32, halo included (what an fp32 field holds).
fn rounded(h: &HostField) -> HostField {
    let mut r = h.clone();
    r.data.iter_mut().for_each(|v| *v = Storage::F32.round(*v));
    r
}

/// Every kernel of a level prepared in single precision against the reference's (which rounds
/// every stored value to fp32): fields really hold fp32 (a value that fp32 cannot represent
/// comes back rounded), conversions between fp64 and fp32 fields round once and copy the halo,
/// and each kernel agrees with the reference to [`TOL_F32`] (line solves: or a backward error
/// of fp32 size on the same stored input).
pub fn single_precision_kernels<B: Backend>(b: &B) {
    let r = ReferenceBackend;
    let mut rng = Rng::new(11);
    let mut cases = vec![];
    for g in [Geometry::Panel, Geometry::Box] {
        for nz in [7, 128] {
            for block in blocks(82, 37, 29).into_iter().skip(2) {
                cases.push(level(g, block, nz));
            }
        }
    }
    for s64 in cases {
        let s = s64.with_storage(Storage::F32);
        let (op, op64) = (
            b.prepare_level(&s).expect("prepare_level"),
            b.prepare_level(&s64).expect("prepare_level"),
        );
        let ctx = format!("fp32 {:?} nz={} {:?}", s.block, s.nz, b.name());
        // Storage: 0.1 is not an fp32 number.
        let mut d = b.alloc(&op).unwrap();
        b.upload(&op, &vec![0.1; s.cells()], &mut d).unwrap();
        let back = to_host(b, &op, &d);
        assert_eq!(back.column(0, 0)[0], 0.1f32 as f64, "fp32 storage {ctx}");
        // convert: fp64 → fp32 rounds (halo too), fp32 → fp64 is exact.
        let x64 = rng.field(&s64);
        let dx64 = to_backend(b, &op64, &x64);
        let mut dx32 = b.alloc(&op).unwrap();
        b.convert(&op64, &dx64, &op, &mut dx32).unwrap();
        let mut back64 = b.alloc(&op64).unwrap();
        b.convert(&op, &dx32, &op64, &mut back64).unwrap();
        let x = rounded(&x64);
        assert_eq!(
            rel_diff(&to_host(b, &op64, &back64), &x),
            0.0,
            "convert {ctx}"
        );
        // The halo came along: A applied to the converted field reads it.
        let (mut ha, mut da) = (x.clone(), b.alloc(&op64).unwrap());
        r.apply(&s64, &x, &mut ha).unwrap();
        b.apply(&op64, &back64, &mut da).unwrap();
        assert!(
            rel_diff(&to_host(b, &op64, &da), &ha) <= TOL,
            "convert halo {ctx}"
        );
        // The kernels, on fp32 inputs (halos included).
        let (f, y) = (rounded(&rng.field(&s)), rounded(&rng.field(&s)));
        let (dx, df) = (to_backend(b, &op, &x), to_backend(b, &op, &f));
        let check = |name: &str, d: &B::Field, h: &HostField| {
            let e = rel_diff(&to_host(b, &op, d), h);
            assert!(e <= TOL_F32, "{name} {ctx}: {e:e}");
        };
        let (mut hy, mut dy) = (y.clone(), to_backend(b, &op, &y));
        r.axpy(&s, 0.7, &x, &mut hy).unwrap();
        b.axpy(&op, 0.7, &dx, &mut dy).unwrap();
        check("axpy", &dy, &hy);
        let (dd, dr) = (b.dot(&op, &dx, &df).unwrap(), r.dot(&s, &x, &f).unwrap());
        assert!(close(dd, dr, TOL_SUM), "dot {ctx}: {dd} vs {dr}");
        let (mut ha, mut da) = (y.clone(), to_backend(b, &op, &y));
        r.apply(&s, &x, &mut ha).unwrap();
        b.apply(&op, &dx, &mut da).unwrap();
        check("apply", &da, &ha);
        let rr_h = r.residual(&s, &f, &x, &mut ha).unwrap();
        let rr_d = b.residual(&op, &df, &dx, &mut da).unwrap();
        check("residual", &da, &ha);
        assert!(close(rr_d, rr_h, TOL_F32), "residual norm {ctx}");
        let mut dw = to_backend(b, &op, &y);
        let nn_d = b.residual_norm(&op, &df, &dx, &mut dw).unwrap();
        assert!(close(nn_d, rr_h, TOL_F32), "residual_norm {ctx}");
        let (u, p, q) = (
            rounded(&rng.field(&s)),
            rounded(&rng.field(&s)),
            rounded(&rng.field(&s)),
        );
        let (mut hu, mut hp, mut hq) = (u.clone(), p.clone(), q.clone());
        let (mut du, mut dp, mut dq) = (
            to_backend(b, &op, &u),
            to_backend(b, &op, &p),
            to_backend(b, &op, &q),
        );
        let sh = r
            .cg_spmv(&s, &x, &mut hu, &mut hp, &mut hq, 0.4, 0.6)
            .unwrap();
        let sd = b
            .cg_spmv(&op, &dx, &mut du, &mut dp, &mut dq, 0.4, 0.6)
            .unwrap();
        check("spmv u", &du, &hu);
        check("spmv p", &dp, &hp);
        check("spmv q", &dq, &hq);
        assert!(close(sd, sh, TOL_F32), "spmv sum {ctx}");
        // Line solves: forward agreement, or a backward error of fp32 size.
        let solved = |name: &str, d: &B::Field, h: &HostField, rhs: &HostField| {
            let hd = to_host(b, &op, d);
            let fwd = rel_diff(&hd, h);
            let be = line_backward_error(&s, &hd, rhs);
            if fwd > TOL_F32 {
                eprintln!("note: {name} {ctx}: forward {fwd:e}, backward error {be:e}");
            }
            assert!(
                fwd <= TOL_F32 || be <= TOL_F32_SOLVE,
                "{name} {ctx}: forward {fwd:e}, backward error {be:e}"
            );
        };
        r.line_solve(&s, &f, &mut ha).unwrap();
        b.line_solve(&op, &df, &mut da).unwrap();
        solved("line_solve", &da, &ha, &f);
        let (mut hr, mut dr) = (y.clone(), to_backend(b, &op, &y));
        let (mut hz, mut dz) = (u.clone(), to_backend(b, &op, &u));
        r.cg_tridiag(&s, &hq, &mut hr, &mut hz, 0.8).unwrap();
        b.cg_tridiag(&op, &dq, &mut dr, &mut dz, 0.8).unwrap();
        check("tridiag r", &dr, &hr);
        solved("tridiag z", &dz, &hz, &hr);
        // Smooth: u_out = x + ρ T⁻¹ (f − A x); where the forward difference is above TOL_F32,
        // (u_out − x)/ρ must solve the column systems to an fp32 backward error.
        let rho = 2.0 / 3.0;
        let (mut hs, mut ds) = (y.clone(), to_backend(b, &op, &y));
        r.smooth(&s, &f, &x, &mut hs, rho).unwrap();
        b.smooth(&op, &df, &dx, &mut ds, rho).unwrap();
        let out = to_host(b, &op, &ds);
        let fwd = rel_diff(&out, &hs);
        let be = smooth_backward_error(&s, &f, &x, &out, rho);
        if fwd > TOL_F32 {
            eprintln!("note: smooth {ctx}: forward {fwd:e}, backward error {be:e}");
        }
        assert!(
            fwd <= TOL_F32 || be <= TOL_F32_SOLVE,
            "smooth {ctx}: forward {fwd:e}, backward error {be:e}"
        );
        // Red-black: the swept columns solve their rows given their neighbours, to an fp32
        // solve's accuracy, normwise (the CUDA backend's cyclic reduction in fp32 left 6.3e-5
        // in a top row whose terms sum to 0.44, 1.4e-4 of them: it is accurate against the
        // column's largest rows, not row by row).
        let mut dc = to_backend(b, &op, &x);
        b.smooth_color(&op, &df, &mut dc, 0, 1.0).unwrap();
        let mut swept = x.clone();
        let mut host = vec![0.0; s.cells()];
        b.download(&op, &dc, &mut host).unwrap();
        swept.set_interior(&host);
        assert_rows_solved(
            &s,
            &f,
            &swept,
            0,
            (TOL_F32_SOLVE, RowNorm::Largest),
            &format!("smooth_color {ctx}"),
        );
    }
    // Between levels: RestrictSmooth and Prolongate on fp32 levels.
    let fine_block = Block {
        n: 148,
        i0: 6,
        j0: 8,
        nx: 74,
        ny: 58,
        panel: None,
        bc: Default::default(),
    };
    let fs = level(Geometry::Panel, fine_block, 9).with_storage(Storage::F32);
    let cs = level(Geometry::Panel, fine_block.coarsen(), 9).with_storage(Storage::F32);
    let (fo, co) = (b.prepare_level(&fs).unwrap(), b.prepare_level(&cs).unwrap());
    let rf = rounded(&rng.field(&fs));
    let (mut hf, mut hu) = (rounded(&rng.field(&cs)), rounded(&rng.field(&cs)));
    let (mut df, mut du) = (to_backend(b, &co, &hf), to_backend(b, &co, &hu));
    r.restrict_smooth(&fs, &cs, &rf, &mut hf, &mut hu, 0.6, 1.0)
        .unwrap();
    let drf = to_backend(b, &fo, &rf);
    b.restrict_smooth(&fo, &co, &drf, &mut df, &mut du, 0.6, 1.0)
        .unwrap();
    assert!(
        rel_diff(&to_host(b, &co, &df), &hf) <= TOL_F32,
        "fp32 restrict f"
    );
    assert!(
        rel_diff(&to_host(b, &co, &du), &hu) <= TOL_F32,
        "fp32 restrict u"
    );
    let (f, u) = (rounded(&rng.field(&fs)), rounded(&rng.field(&fs)));
    check_residual_restrict(
        b,
        (&fs, &fo),
        (&cs, &co),
        (&f, &u),
        &mut rng,
        (TOL_F32, TOL_F32, TOL_F32_SOLVE),
        "fp32",
    );
    let (uc, uf) = (rounded(&rng.field(&cs)), rounded(&rng.field(&fs)));
    let (mut hp, mut dp) = (uf.clone(), to_backend(b, &fo, &uf));
    r.prolongate(&cs, &fs, &uc, &mut hp).unwrap();
    let duc = to_backend(b, &co, &uc);
    b.prolongate(&co, &fo, &duc, &mut dp).unwrap();
    assert!(
        rel_diff(&to_host(b, &fo, &dp), &hp) <= TOL_F32,
        "fp32 prolongate"
    );
}

/// The levels of the half-sweep checks: the model panel's at each of `nzs` levels on each of
/// `blocks` (of an 82² panel), then per-cell coefficient fields at nz = 32 on a whole 28² block
/// and on a block inside it.
fn relaxation_cases(nzs: &[usize], blocks: &[Block]) -> Vec<LevelStencil> {
    let mut cases = vec![];
    for &nz in nzs {
        for &block in blocks {
            cases.push(level(Geometry::Panel, block, nz));
        }
    }
    let p = ProblemParams {
        nz: 32,
        n: 28,
        ..Default::default()
    };
    let v = std::sync::Arc::new(VerticalGrid::new(&p));
    let coeffs = coefficient_fields(28, 32, 5);
    for block in [Block::whole(28), block_at(28, (5, 8), (13, 9))] {
        cases.push(LevelStencil::with_coefficients(
            &p,
            block,
            v.clone(),
            Some(&coeffs),
        ));
    }
    cases
}

/// [`LineKernels::smooth_color_correct`], mixed-precision defect correction's last half-sweep
/// with its correction, on fp32 levels beside their fp64 preparation (the model problem's
/// columns and per-cell entries; nz = 128 for the GPU's split kernels; blocks of odd widths and
/// both parities, so that a row's last column may lie alone; w = 1 and 1.15): the outer
/// iterate equals, bit for bit, what the backend's own two kernels give
/// ([`LineKernels::smooth_color`], then [`strata::backend::VectorKernels::axpy_from`]); what
/// was added to it is the other colour's z (to fp64 rounding), unwritten, and on the colour's
/// columns values that solve their rows to an fp32 solve's accuracy given those (w = 1, as
/// the half-sweep's own check).
pub fn correction_kernels<B: Backend>(b: &B) {
    let mut rng = Rng::new(17);
    let blocks = [
        block_at(82, (7, 8), (37, 29)),
        block_at(82, (6, 8), (37, 29)),
        Block::whole(13),
    ];
    for s64 in relaxation_cases(&[7, 128], &blocks) {
        let s = s64.clone().with_storage(Storage::F32);
        let (op, op64) = (
            b.prepare_level(&s).expect("prepare_level"),
            b.prepare_level(&s64).expect("prepare_level"),
        );
        for (color, relax) in [(0, 1.0), (1, 1.0), (0, 1.15), (1, 1.15)] {
            let ctx = format!(
                "colour {color} w {relax} {:?} nz={} {:?}",
                s.block,
                s.nz,
                b.name()
            );
            let (f, z, u) = (
                rounded(&rng.field(&s)),
                rounded(&rng.field(&s)),
                rng.field(&s64),
            );
            let df = to_backend(b, &op, &f);
            let (mut dz, mut du) = (to_backend(b, &op, &z), to_backend(b, &op64, &u));
            b.smooth_color_correct(&op, &df, &mut dz, color, relax, &op64, &mut du)
                .unwrap();
            let fused = to_host(b, &op64, &du);
            let (mut tz, mut tu) = (to_backend(b, &op, &z), to_backend(b, &op64, &u));
            b.smooth_color(&op, &df, &mut tz, color, relax).unwrap();
            b.axpy_from(&op64, 1.0, &op, &tz, &mut tu).unwrap();
            let two = to_host(b, &op64, &tu);
            assert!(
                fused.data == two.data,
                "smooth_color_correct {ctx}: not the two kernels' u bit for bit ({:e})",
                rel_diff(&fused, &two)
            );
            // What was added: the other colour's z as it was, and on the colour's columns
            // values that solve their rows given those (w = 1).
            let after = to_host(b, &op, &dz);
            let mut added = z.clone();
            let (b0, scale) = (s.block.i0 + s.block.j0, 1e-13 * (1.0 + max_abs(&u)));
            for j in 0..s.ny() {
                for i in 0..s.nx() {
                    let (o, g) = (fused.offset(i + 1, j + 1), u.offset(i + 1, j + 1));
                    let sum: Vec<f64> = (0..s.nz)
                        .map(|k| fused.data[o + k] - u.data[g + k])
                        .collect();
                    if (b0 + i + j) % 2 == color {
                        added.column_mut(i, j).copy_from_slice(&sum);
                        continue;
                    }
                    assert_eq!(
                        after.column(i, j),
                        z.column(i, j),
                        "smooth_color_correct {ctx}: z's column ({i}, {j}) of the other colour"
                    );
                    for (k, (a, w)) in sum.iter().zip(z.column(i, j)).enumerate() {
                        assert!(
                            (a - w).abs() <= scale,
                            "smooth_color_correct {ctx}: u + z at ({i}, {j}, {k}): added {a}, z {w}"
                        );
                    }
                }
            }
            if relax == 1.0 {
                assert_rows_solved(
                    &s,
                    &f,
                    &added,
                    color,
                    (TOL_F32_SOLVE, RowNorm::Largest),
                    &format!("smooth_color_correct {ctx}"),
                );
            }
        }
    }
}

/// Red-black's step from zero in its two calls, [`LineKernels::line_solve_color`] then
/// [`LineKernels::smooth_color_after_solve`] (the backend's own forms, or the defaults): the
/// first colour's columns solve their rows with zero neighbours (T u = r), the second colour's
/// solve theirs given the first colour's values scaled by w (T u = r − w H u), on the model
/// problem's columns and per-cell entries, fp64 and fp32 levels, nz = 7, 32 and 128 (the GPU's
/// split kernels from 16 levels), blocks of both parities, both colour orders, w = 1 and 1.15;
/// and on coarse levels with the restriction before it (`red_black_from_zero_coarse`).
pub fn red_black_from_zero_kernels<B: Backend>(b: &B) {
    let mut rng = Rng::new(29);
    let blocks = [Block::whole(13), block_at(82, (7, 8), (37, 29))];
    for s64 in relaxation_cases(&[7, 32, 128], &blocks) {
        for storage in [Storage::F64, Storage::F32] {
            let s = s64.clone().with_storage(storage);
            let op = b.prepare_level(&s).expect("prepare_level");
            // Normwise: the GPU's split solves are accurate against the column's largest row,
            // not row by row (a row whose terms are small gets the column's rounding).
            let tol = match storage {
                Storage::F64 => (1e-12, RowNorm::Largest),
                _ => (TOL_F32_SOLVE, RowNorm::Largest),
            };
            for ([c0, c1], relax) in [([0, 1], 1.15), ([1, 0], 1.15), ([0, 1], 1.0)] {
                let ctx = format!(
                    "colours {c0}, {c1} w {relax} {:?} nz={} {storage:?} {:?}",
                    s.block,
                    s.nz,
                    b.name()
                );
                let (r, u) = (rounded(&rng.field(&s)), rounded(&rng.field(&s)));
                let dr = to_backend(b, &op, &r);
                let mut du = to_backend(b, &op, &u);
                b.line_solve_color(&op, &dr, &mut du, c0).unwrap();
                b.smooth_color_after_solve(&op, &dr, &mut du, c1, relax)
                    .unwrap();
                let got = interior_over(b, &op, &du, &u);
                assert_step_from_zero(&s, &r, &got, [c0, c1], relax, tol, &ctx);
            }
        }
    }
    red_black_from_zero_coarse(b, &mut rng);
}

/// `halo`'s field with the interior of the backend's `d` (the kernels that wrote `d` do not
/// write its halo).
fn interior_over<B: Backend>(b: &B, op: &B::LevelOp, d: &B::Field, halo: &HostField) -> HostField {
    let mut got = halo.clone();
    let mut host = vec![0.0; got.nx * got.ny * got.nz];
    b.download(op, d, &mut host).expect("download");
    got.set_interior(&host);
    got
}

/// What red-black's step from zero promises (`u` read back, halo included): the columns of
/// colour `c0` solve their rows of A u = r with zero neighbours, those of `c1` theirs given
/// `c0`'s values scaled by `relax`.
fn assert_step_from_zero(
    s: &LevelStencil,
    r: &HostField,
    u: &HostField,
    [c0, c1]: [usize; 2],
    relax: f64,
    tol: (f64, RowNorm),
    ctx: &str,
) {
    // Every cell (halo included) of colour c scaled by `by`.
    let scaled = |c: usize, by: f64| {
        let mut x = u.clone();
        let parity = s.block.i0 + s.block.j0;
        for jh in 0..s.ny() + 2 {
            for ih in 0..s.nx() + 2 {
                if (parity + ih + jh) % 2 == c {
                    let o = x.offset(ih, jh);
                    x.data[o..o + s.nz].iter_mut().for_each(|v| *v *= by);
                }
            }
        }
        x
    };
    let first = format!("first half-sweep {ctx}");
    assert_rows_solved(s, r, &scaled(c1, 0.0), c0, tol, &first);
    let second = format!("smooth_color_after_solve {ctx}");
    assert_rows_solved(s, r, &scaled(c0, relax), c1, tol, &second);
}

/// Red-black's step from zero on a coarse level: [`LineKernels::residual_restrict_solve_color`]
/// then [`LineKernels::smooth_color_after_solve`] of the other colour. The coarse right-hand
/// side is the reference's residual restricted (`TOL`; `TOL_F32` on fp32 levels), and the two
/// colours solve their rows as [`red_black_from_zero_kernels`] asks, on the backend's own
/// right-hand side: whole levels and blocks whose coarse blocks have both parities, the model
/// problem's columns at nz = 7, 32 and 128 and per-cell entries at nz = 32, fp64 and fp32, both
/// colour orders.
fn red_black_from_zero_coarse<B: Backend>(b: &B, rng: &mut Rng) {
    let r = ReferenceBackend;
    let mut pairs = vec![];
    for nz in [7, 32, 128] {
        let fines = [
            Block::whole(26),
            block_at(164, (14, 16), (74, 58)),
            block_at(164, (12, 16), (74, 58)),
        ];
        for fine in fines {
            let g = Geometry::Panel;
            pairs.push((level(g, fine, nz), level(g, fine.coarsen(), nz)));
        }
    }
    let p = ProblemParams {
        nz: 32,
        n: 28,
        coefficients: Some(std::sync::Arc::new(coefficient_fields(28, 32, 5))),
        ..Default::default()
    };
    let levels = strata::stencil::build_levels(&p, Block::whole(28), 2).expect("levels");
    pairs.push((levels[0].clone(), levels[1].clone()));
    let scale = 0.25;
    for (fs64, cs64) in pairs {
        for storage in [Storage::F64, Storage::F32] {
            let (fs, cs) = (fs64.with_storage(storage), cs64.with_storage(storage));
            let (fo, co) = (b.prepare_level(&fs).unwrap(), b.prepare_level(&cs).unwrap());
            let (tol_f, tol) = match storage {
                Storage::F64 => (TOL, (1e-12, RowNorm::Largest)),
                _ => (TOL_F32, (TOL_F32_SOLVE, RowNorm::Largest)),
            };
            for ([c0, c1], relax) in [([0, 1], 1.15), ([1, 0], 1.15)] {
                let ctx = format!(
                    "coarse, colours {c0}, {c1} w {relax} {:?} nz={} fields {} {storage:?} {:?}",
                    cs.block,
                    cs.nz,
                    cs.cells.is_some(),
                    b.name()
                );
                let (f, u) = (rounded(&rng.field(&fs)), rounded(&rng.field(&fs)));
                let (fc, uc) = (rounded(&rng.field(&cs)), rounded(&rng.field(&cs)));
                let (mut hr, mut hf, mut hu) = (rng.field(&fs), fc.clone(), uc.clone());
                r.residual_only(&fs, &f, &u, &mut hr).unwrap();
                r.restrict_smooth(&fs, &cs, &hr, &mut hf, &mut hu, 1.0, scale)
                    .unwrap();
                let (df, du) = (to_backend(b, &fo, &f), to_backend(b, &fo, &u));
                let mut dr = to_backend(b, &fo, &hr);
                let (mut dfc, mut duc) = (to_backend(b, &co, &fc), to_backend(b, &co, &uc));
                b.residual_restrict_solve_color(
                    &fo, &co, &df, &du, &mut dr, &mut dfc, &mut duc, scale, c0,
                )
                .unwrap();
                b.smooth_color_after_solve(&co, &dfc, &mut duc, c1, relax)
                    .unwrap();
                let got_f = interior_over(b, &co, &dfc, &fc);
                let d = rel_diff(&got_f, &hf);
                assert!(d <= tol_f, "residual_restrict_solve_color f {ctx}: {d:e}");
                let got = interior_over(b, &co, &duc, &uc);
                assert_step_from_zero(&cs, &got_f, &got, [c0, c1], relax, tol, &ctx);
            }
        }
    }
}

/// The largest |value| of `h` (halo included).
fn max_abs(h: &HostField) -> f64 {
    h.data.iter().fold(0.0, |m: f64, v| m.max(v.abs()))
}

/// Declares the `#[test]` of the per-cell coefficient kernels for `$backend` (for backends that
/// take coefficient fields; see [`cell_coefficient_kernels`]).
#[macro_export]
macro_rules! cell_coefficient_tests {
    ($backend:expr $(, #[$attr:meta])*) => {
        #[test]
        $(#[$attr])*
        fn cell_coefficient_kernels_match_the_reference() {
            $crate::cell_coefficient_kernels(&$backend);
        }

        #[test]
        $(#[$attr])*
        fn terrain_kernels_match_the_reference() {
            $crate::terrain_kernels(&$backend);
        }
    };
}

/// Declares one `#[test]` per check of the suite for the backend `$backend` (an expression
/// evaluated in each test), with optional attributes (e.g. `#[ignore = "needs a GPU"]`).
#[macro_export]
macro_rules! conformance_tests {
    ($backend:expr $(, #[$attr:meta])*) => {
        #[test]
        $(#[$attr])*
        fn vector_kernels_match_the_reference() {
            $crate::vector_kernels(&$backend);
        }

        #[test]
        $(#[$attr])*
        fn stencil_kernels_match_the_reference() {
            $crate::stencil_kernels(&$backend);
        }

        #[test]
        $(#[$attr])*
        fn fused_cg_kernels_match_the_reference() {
            $crate::cg_kernels(&$backend);
        }

        #[test]
        $(#[$attr])*
        fn multigrid_kernels_match_the_reference() {
            $crate::multigrid_kernels(&$backend);
        }

        #[test]
        $(#[$attr])*
        fn halo_faces_are_exact() {
            $crate::halo_faces(&$backend);
        }

        #[test]
        $(#[$attr])*
        fn kernels_on_zero_flux_and_periodic_sides_match_the_reference() {
            $crate::lateral_boundaries(&$backend);
        }

        #[test]
        $(#[$attr])*
        fn single_precision_kernels_match_the_reference() {
            $crate::single_precision_kernels(&$backend);
        }

        #[test]
        $(#[$attr])*
        fn cross_term_kernels_match_the_reference() {
            $crate::cross_term_kernels(&$backend);
        }

        #[test]
        $(#[$attr])*
        fn slot_kernels_match_their_value_forms() {
            $crate::scalar_kernels(&$backend);
        }

        #[test]
        $(#[$attr])*
        fn fused_correction_matches_its_two_kernels() {
            $crate::correction_kernels(&$backend);
        }

        #[test]
        $(#[$attr])*
        fn red_black_steps_from_zero_solve_their_rows() {
            $crate::red_black_from_zero_kernels(&$backend);
        }
    };
}
