//! Helpers shared by the integration tests.
#![allow(dead_code)]

use strata::field::HostField;

/// A small deterministic generator (xorshift64*), values in [−1, 1).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (v >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// A field of random values everywhere, halo included.
pub fn random_field(nx: usize, ny: usize, nz: usize, rng: &mut Rng) -> HostField {
    let mut f = HostField::zeros(nx, ny, nz);
    f.data.iter_mut().for_each(|v| *v = rng.next());
    f
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
    if m == 0.0 {
        d
    } else {
        d / m
    }
}

/// Whether the assembled matrix equals its transpose bit for bit.
pub fn symmetric_bits(m: &strata::matrix::SparseMatrix) -> bool {
    let mut entries: Vec<(usize, usize, u64)> = m
        .rows
        .iter()
        .zip(&m.cols)
        .zip(&m.values)
        .map(|((&r, &c), v)| (r, c, v.to_bits()))
        .collect();
    let mut transposed: Vec<(usize, usize, u64)> =
        entries.iter().map(|&(r, c, v)| (c, r, v)).collect();
    entries.sort_unstable();
    transposed.sort_unstable();
    entries == transposed
}

/// The 3-point Gauss–Legendre rule on [−1, 1]: (point, weight).
pub const GAUSS3: [(f64, f64); 3] = [
    (-0.774_596_669_241_483_4, 5.0 / 9.0),
    (0.0, 8.0 / 9.0),
    (0.774_596_669_241_483_4, 5.0 / 9.0),
];

/// ∫∫ g over the rectangle `a × b` by the 3 × 3 Gauss rule (the manufactured solutions'
/// face integrals).
pub fn quad2(a: (f64, f64), b: (f64, f64), g: &dyn Fn(f64, f64) -> f64) -> f64 {
    let mut s = 0.0;
    for (xa, wa) in GAUSS3 {
        for (xb, wb) in GAUSS3 {
            let pa = 0.5 * (a.0 + a.1) + 0.5 * (a.1 - a.0) * xa;
            let pb = 0.5 * (b.0 + b.1) + 0.5 * (b.1 - b.0) * xb;
            s += wa * wb * g(pa, pb);
        }
    }
    s * 0.25 * (a.1 - a.0) * (b.1 - b.0)
}

/// y ← A x on the sphere (`k × k` tiles per panel), `x` a host array of the tiles: upload,
/// exchange the halos, apply.
pub fn sphere_apply<B: strata::backend::Backend>(
    b: &B,
    p: &strata::problem::ProblemParams,
    k: usize,
    x: &[f64],
) -> Vec<f64> {
    use strata::backend::prelude::*;
    use strata::comm::Comm;
    let t = strata::backend::tiled::Tiled::new(b);
    let levels = strata::stencil::build_sphere_levels(
        p,
        &strata::grid::sphere::tiles(p.n, k),
        1,
        Default::default(),
    )
    .unwrap();
    let op = t.prepare_level(&levels[0]).unwrap();
    strata::comm::SphereComm.prepare(&t, &op).unwrap();
    let (mut xf, mut yf) = (t.alloc(&op).unwrap(), t.alloc(&op).unwrap());
    t.upload(&op, x, &mut xf).unwrap();
    strata::comm::SphereComm.exchange(&t, &op, &mut xf).unwrap();
    t.apply(&op, &xf, &mut yf).unwrap();
    let mut y = vec![0.0; x.len()];
    t.download(&op, &yf, &mut y).unwrap();
    y
}

/// A sphere host array of `k × k` tiles per panel reordered to whole panels
/// (`[panel][j][i][k]`).
pub fn whole_panels(n: usize, nz: usize, k: usize, u: &[f64]) -> Vec<f64> {
    let mut whole = vec![0.0; 6 * n * n * nz];
    let mut src = u.chunks(nz);
    for t in strata::grid::sphere::tiles(n, k) {
        for j in t.j0..t.j0 + t.ny {
            for i in t.i0..t.i0 + t.nx {
                let o = ((t.panel.unwrap() * n + j) * n + i) * nz;
                whole[o..o + nz].copy_from_slice(src.next().unwrap());
            }
        }
    }
    whole
}

/// A solve of the sphere problem `p` with `cfg` on `k × k` tiles per panel in one process, from
/// the random right-hand side of seed 3: the solution on whole panels, the iteration count and
/// the residual norms the solver reported, one per iteration.
pub fn solve_sphere_tiles<B: strata::backend::Backend>(
    b: &B,
    p: &strata::problem::ProblemParams,
    cfg: &strata::solver::SolverConfig,
    k: usize,
) -> (Vec<f64>, usize, Vec<f64>) {
    let tiles = strata::grid::sphere::tiles(p.n, k);
    let rhs = strata::problem::build_rhs_tiles(p, strata::problem::RhsKind::Random, 3, &tiles);
    let mut history = Vec::new();
    let sol = strata::solve_tiles(
        &strata::backend::tiled::Tiled::new(b),
        &strata::comm::SphereComm,
        p,
        &tiles,
        cfg,
        &rhs,
        &mut |_, r| history.push(r),
    )
    .unwrap();
    assert!(sol.info.reason.converged(), "{:?}", sol.info.reason);
    let whole = whole_panels(p.n, p.nz, k, &sol.u);
    (whole, sol.info.iterations, history)
}

/// Prints the (max, RMS) errors of a refinement at n = 16, 32, 64 and their ratios, and checks
/// second order: both fall by more than 3.4 from 32 to 64.
pub fn assert_second_order(what: &str, e: &[(f64, f64)]) {
    eprintln!("{what}: (max, rms) errors at n = 16, 32, 64: {e:?}");
    for w in e.windows(2) {
        eprintln!(
            "{what}: ratios max {:.2}, rms {:.2}",
            w[0].0 / w[1].0,
            w[0].1 / w[1].1
        );
    }
    let last = (e[1].0 / e[2].0, e[1].1 / e[2].1);
    assert!(
        last.0 > 3.4 && last.1 > 3.4,
        "{what}: not second order from 32 to 64: {last:?}"
    );
}
