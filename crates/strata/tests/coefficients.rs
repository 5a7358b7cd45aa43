//! The general operator with per-cell coefficient fields (docs/MODEL.md §15): equal to the model
//! problem's with kx = ky = kz = 1 and β = δ, symmetric, second order on a manufactured solution,
//! and solved by every solver.

use std::sync::Arc;
use strata::backend::cpu::CpuBackend;
use strata::backend::prelude::*;
use strata::backend::reference::ReferenceBackend;
use strata::field::HostField;
use strata::grid::{max_levels, Block, RankGrid};
use strata::problem::{
    build_rhs, cell_centre, Coefficients, Geometry, Grading, ProblemParams, RhsKind, VerticalGrid,
};
use strata::solver::{SolverConfig, SolverKind};
use strata::stencil::LevelStencil;

fn random_field(nx: usize, ny: usize, nz: usize, seed: u64) -> HostField {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut f = HostField::zeros(nx, ny, nz);
    for v in f.data.iter_mut() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        *v = (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    }
    f
}

fn interior_dot(a: &HostField, b: &HostField) -> f64 {
    let mut s = 0.0;
    for j in 0..a.ny {
        for i in 0..a.nx {
            for (x, y) in a.column(i, j).iter().zip(b.column(i, j)) {
                s += x * y;
            }
        }
    }
    s
}

/// A field with zero halo (the Dirichlet boundary of a whole level).
fn with_zero_halo(mut f: HostField) -> HostField {
    let inner: Vec<f64> = {
        let mut v = vec![0.0; f.nx * f.ny * f.nz];
        f.get_interior(&mut v);
        v
    };
    f.data.iter_mut().for_each(|v| *v = 0.0);
    f.set_interior(&inner);
    f
}

#[test]
fn unit_coefficients_give_the_model_operator_to_rounding() {
    for geometry in [Geometry::Panel, Geometry::Box] {
        let p = ProblemParams {
            geometry,
            grading: Grading::Graded,
            n: 24,
            nz: 12,
            delta: 0.7,
            ..Default::default()
        };
        let v = Arc::new(VerticalGrid::new(&p));
        let unit = Coefficients::constant(24, 12, 0.7);
        for block in [
            Block::whole(24),
            Block {
                n: 24,
                i0: 4,
                j0: 6,
                nx: 10,
                ny: 8,
                panel: None,
                bc: Default::default(),
            },
        ] {
            let model = LevelStencil::new(&p, block, v.clone());
            let general = LevelStencil::with_coefficients(&p, block, v.clone(), Some(&unit));
            let x = random_field(block.nx, block.ny, 12, 3);
            let (mut a, mut b) = (x.clone(), x.clone());
            ReferenceBackend.apply(&model, &x, &mut a).unwrap();
            ReferenceBackend.apply(&general, &x, &mut b).unwrap();
            let cpu = CpuBackend::new(Some(2)).unwrap();
            let mut c = x.clone().into();
            cpu.apply(&general, &x.clone().into(), &mut c).unwrap();
            for (name, other) in [("reference", &b), ("cpu", c.as_double())] {
                let (mut d, mut m) = (0.0f64, 0.0f64);
                for j in 0..block.ny {
                    for i in 0..block.nx {
                        for (p, q) in a.column(i, j).iter().zip(other.column(i, j)) {
                            d = d.max((p - q).abs());
                            m = m.max(p.abs());
                        }
                    }
                }
                assert!(d <= 1e-13 * m, "{geometry:?} {block:?} {name}: {:e}", d / m);
            }
        }
    }
}

#[test]
fn unit_coefficients_solve_like_the_model_problem() {
    let p = ProblemParams {
        n: 32,
        nz: 16,
        ..Default::default()
    };
    let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(32));
    let general = ProblemParams {
        coefficients: Some(Arc::new(Coefficients::constant(32, 16, p.delta))),
        ..p.clone()
    };
    let b = CpuBackend::new(Some(2)).unwrap();
    for kind in [SolverKind::Cg, SolverKind::Mg, SolverKind::MgCg] {
        let cfg = SolverConfig::paper(kind).with_levels(4);
        let a = strata::solve(&b, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
        let g = strata::solve(&b, &general, &cfg, &rhs, &mut |_, _| {}).unwrap();
        assert_eq!(a.info.iterations, g.info.iterations, "{kind:?}");
        let scale = a.u.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff =
            a.u.iter()
                .zip(&g.u)
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(diff <= 1e-10 * scale, "{kind:?}: {:e}", diff / scale);
    }
}

#[test]
fn the_general_operator_is_symmetric_and_positive() {
    for geometry in [Geometry::Panel, Geometry::Box] {
        let p = ProblemParams {
            geometry,
            n: 16,
            nz: 10,
            ..Default::default()
        };
        let c = Coefficients::smooth(16, 10, 1000.0);
        let s = LevelStencil::with_coefficients(
            &p,
            Block::whole(16),
            Arc::new(VerticalGrid::new(&p)),
            Some(&c),
        );
        let x = with_zero_halo(random_field(16, 16, 10, 1));
        let y = with_zero_halo(random_field(16, 16, 10, 2));
        let (mut ax, mut ay) = (x.clone(), y.clone());
        ReferenceBackend.apply(&s, &x, &mut ax).unwrap();
        ReferenceBackend.apply(&s, &y, &mut ay).unwrap();
        let (yax, xay) = (interior_dot(&y, &ax), interior_dot(&x, &ay));
        assert!(
            (yax - xay).abs() <= 1e-13 * yax.abs().max(xay.abs()),
            "{yax} vs {xay}"
        );
        assert!(interior_dot(&x, &ax) > 0.0);
    }
}

/// Max error of the manufactured solution u* = sin(πx) sin(πy) cos(πz/H) on the box with
/// kx = 1 + x, ky = 1 + y, kz = 1 + z/H, β = 1 + xy, fixed ω² = 0.1, λ = 1, H = 0.1, nz = n/2;
/// with `advect`, also ξ = (2(1 + y), −(1 + x), ½ sin(πz/H)) in −ω² ∇·(ξ u) (no flow through
/// ground and lid), solved by BiCGStab.
fn box_error(n: usize, advect: bool) -> f64 {
    use std::f64::consts::PI;
    let (h, w2) = (0.1f64, 0.1f64);
    let mut p = ProblemParams {
        geometry: Geometry::Box,
        n,
        nz: n / 2,
        height: h,
        omega: Some(w2.sqrt()),
        ..Default::default()
    };
    let v = VerticalGrid::new(&p);
    let nz = p.nz;
    let mut c = Coefficients::constant(n, nz, 1.0);
    let mut rhs = vec![0.0; n * n * nz];
    let mut exact = vec![0.0; n * n * nz];
    for j in 0..n {
        for i in 0..n {
            let (x, y) = cell_centre(Geometry::Box, n, i, j);
            for k in 0..nz {
                let z = v.centres[k];
                let at = (j * n + i) * nz + k;
                c.kx[at] = 1.0 + x;
                c.ky[at] = 1.0 + y;
                c.kz[at] = 1.0 + z / h;
                c.beta[at] = 1.0 + x * y;
                let (sx, cx) = ((PI * x).sin(), (PI * x).cos());
                let (sy, cy) = ((PI * y).sin(), (PI * y).cos());
                let (sz, cz) = ((PI * z / h).sin(), (PI * z / h).cos());
                let u = sx * sy * cz;
                // ∂x((1 + x) ∂x u), ∂y((1 + y) ∂y u), ∂z((1 + z/H) ∂z u).
                let dxx = (PI * cx - (1.0 + x) * PI * PI * sx) * sy * cz;
                let dyy = (PI * cy - (1.0 + y) * PI * PI * sy) * sx * cz;
                let dzz = (-(PI / h) * sz / h - (1.0 + z / h) * (PI / h) * (PI / h) * cz) * sx * sy;
                let mut f = -w2 * (dxx + dyy + dzz) + (1.0 + x * y) * u;
                if advect {
                    let (ux, uy, uz) = (
                        PI * cx * sy * cz,
                        PI * sx * cy * cz,
                        -(PI / h) * sx * sy * sz,
                    );
                    // ξ_z vanishes at ground and lid (no flow through them), so the
                    // conservative form adds −ω² (∂z ξ_z) u.
                    let (xiz, dxiz) = (0.5 * sz, 0.5 * (PI / h) * cz);
                    f -= w2 * (2.0 * (1.0 + y) * ux - (1.0 + x) * uy + xiz * uz + dxiz * u);
                    let xi = c.xi.get_or_insert_with(|| {
                        [
                            vec![0.0; n * n * nz],
                            vec![0.0; n * n * nz],
                            vec![0.0; n * n * nz],
                        ]
                    });
                    xi[0][at] = 2.0 * (1.0 + y);
                    xi[1][at] = -(1.0 + x);
                    xi[2][at] = 0.5 * sz;
                }
                let volume = (1.0 / n as f64).powi(2) * v.vol[k];
                rhs[at] = volume * f;
                exact[at] = u;
            }
        }
    }
    p.coefficients = Some(Arc::new(c));
    let kind = if advect {
        SolverKind::BiCgStab
    } else {
        SolverKind::MgCg
    };
    let cfg = SolverConfig::paper(kind)
        .with_levels(max_levels(n, RankGrid::single()))
        .with_rtol(1e-12)
        .with_max_it(300);
    let b = CpuBackend::new(None).unwrap();
    let sol = strata::solve(&b, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
    assert!(sol.info.reason.converged(), "{:?}", sol.info.reason);
    sol.u
        .iter()
        .zip(&exact)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
}

#[test]
fn manufactured_solution_with_varying_coefficients_is_second_order() {
    for advect in [false, true] {
        let errs: Vec<f64> = [16, 32, 64].iter().map(|&n| box_error(n, advect)).collect();
        for w in errs.windows(2) {
            let order = (w[0] / w[1]).log2();
            assert!(
                (1.8..2.3).contains(&order),
                "advection {advect}: errors {errs:?}: order {order}"
            );
        }
    }
}

#[test]
fn advection_makes_the_operator_non_symmetric_and_only_gcr_bicgstab_take_it() {
    let n = 16;
    let mut c = Coefficients::smooth(n, 8, 10.0);
    c.xi = Some([0usize, 1, 2].map(|d| {
        (0..n * n * 8)
            .map(|i| ((i * (d + 3)) % 11) as f64 / 5.0 - 1.0)
            .collect()
    }));
    let p = ProblemParams {
        n,
        nz: 8,
        coefficients: Some(Arc::new(c)),
        ..Default::default()
    };
    let s = LevelStencil::new(&p, Block::whole(n), Arc::new(VerticalGrid::new(&p)));
    let x = with_zero_halo(random_field(n, n, 8, 1));
    let y = with_zero_halo(random_field(n, n, 8, 2));
    let (mut ax, mut ay) = (x.clone(), y.clone());
    ReferenceBackend.apply(&s, &x, &mut ax).unwrap();
    ReferenceBackend.apply(&s, &y, &mut ay).unwrap();
    let (yax, xay) = (interior_dot(&y, &ax), interior_dot(&x, &ay));
    assert!(
        (yax - xay).abs() > 1e-6 * yax.abs(),
        "{yax} vs {xay}: still symmetric"
    );
    let rhs = build_rhs(&p, RhsKind::Random, 3, &Block::whole(n));
    let b = CpuBackend::new(Some(2)).unwrap();
    for kind in [SolverKind::Cg, SolverKind::MgCg] {
        let cfg = SolverConfig::paper(kind).with_levels(3);
        let e = strata::solve(&b, &p, &cfg, &rhs, &mut |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("needs a symmetric operator") && e.contains("gcr"),
            "{e}"
        );
    }
    let a = strata::matrix::assemble(&p).unwrap();
    let mut solutions = vec![];
    for kind in [SolverKind::Gcr, SolverKind::BiCgStab, SolverKind::Mg] {
        let cfg = SolverConfig::paper(kind)
            .with_levels(3)
            .with_rtol(1e-10)
            .with_max_it(500);
        let sol = strata::solve(&b, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
        assert!(
            sol.info.reason.converged(),
            "{kind:?}: {:?}",
            sol.info.reason
        );
        // The solution satisfies the assembled non-symmetric system.
        let au = a.apply(&sol.u);
        let fs = rhs.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let res = au
            .iter()
            .zip(&rhs)
            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(res <= 1e-8 * fs, "{kind:?}: residual {:e}", res / fs);
        solutions.push(sol.u);
    }
    let scale = solutions[0].iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for u in &solutions[1..] {
        let d = u
            .iter()
            .zip(&solutions[0])
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(d <= 1e-7 * scale, "{:e}", d / scale);
    }
}

/// Coefficients with a jump of `contrast` in kz and β across a layer (as at a tropopause).
fn layered_coefficients(n: usize, nz: usize, contrast: f64) -> Coefficients {
    let mut c = Coefficients::constant(n, nz, 1.0);
    for j in 0..n {
        for i in 0..n {
            for k in nz / 2..nz {
                let at = (j * n + i) * nz + k;
                c.kz[at] = contrast;
                c.kx[at] = contrast.sqrt();
                c.ky[at] = contrast.sqrt();
            }
        }
    }
    c
}

#[test]
fn every_solver_solves_the_general_operator() {
    let n = 32;
    for (name, coeffs) in [
        ("smooth 10x", Coefficients::smooth(n, 16, 10.0)),
        ("layer 1000x", layered_coefficients(n, 16, 1000.0)),
    ] {
        let p = ProblemParams {
            n,
            nz: 16,
            coefficients: Some(Arc::new(coeffs)),
            ..Default::default()
        };
        let rhs = build_rhs(&p, RhsKind::Random, 5, &Block::whole(n));
        let b = CpuBackend::new(Some(2)).unwrap();
        let mut solutions = vec![];
        for (kind, pc) in [
            (SolverKind::MgCg, strata::solver::Preconditioner::Multigrid),
            (SolverKind::Gcr, strata::solver::Preconditioner::Multigrid),
            (
                SolverKind::BiCgStab,
                strata::solver::Preconditioner::Multigrid,
            ),
            (SolverKind::Gcr, strata::solver::Preconditioner::Line),
            (SolverKind::BiCgStab, strata::solver::Preconditioner::Line),
            (SolverKind::Cg, strata::solver::Preconditioner::Line),
        ] {
            let cfg = SolverConfig::paper(kind)
                .with_levels(4)
                .with_preconditioner(pc)
                .with_rtol(1e-10)
                .with_max_it(2000);
            let sol = strata::solve(&b, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
            assert!(
                sol.info.reason.converged(),
                "{name} {kind:?} {pc:?}: {:?} after {}",
                sol.info.reason,
                sol.info.iterations
            );
            solutions.push(sol.u);
        }
        let scale = solutions[0].iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (s, u) in solutions.iter().enumerate().skip(1) {
            let diff = u
                .iter()
                .zip(&solutions[0])
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(
                diff <= 1e-6 * scale,
                "{name}, solver {s}: {:e}",
                diff / scale
            );
        }
    }
}

/// Dense Gaussian elimination with partial pivoting (small systems only).
fn dense_solve(a: &strata::matrix::SparseMatrix, b: &[f64]) -> Vec<f64> {
    let n = a.size;
    let mut m = vec![vec![0.0; n + 1]; n];
    for ((&r, &c), &v) in a.rows.iter().zip(&a.cols).zip(&a.values) {
        m[r][c] += v;
    }
    for (r, row) in m.iter_mut().enumerate() {
        row[n] = b[r];
    }
    for col in 0..n {
        let piv = (col..n)
            .max_by(|&x, &y| m[x][col].abs().total_cmp(&m[y][col].abs()))
            .unwrap();
        m.swap(col, piv);
        let (top, rest) = m.split_at_mut(col + 1);
        let pivot = &top[col];
        for row in rest.iter_mut() {
            let f = row[col] / pivot[col];
            if f != 0.0 {
                for (x, p) in row[col..].iter_mut().zip(&pivot[col..]) {
                    *x -= f * p;
                }
            }
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|c| m[r][c] * x[c]).sum();
        x[r] = (m[r][n] - s) / m[r][r];
    }
    x
}

#[test]
fn the_assembled_matrix_is_the_operator_the_solvers_use() {
    for (geometry, coeffs) in [
        (Geometry::Panel, None),
        (Geometry::Box, Some(Coefficients::smooth(8, 6, 100.0))),
        (Geometry::Panel, Some(layered_coefficients(8, 6, 1000.0))),
    ] {
        let p = ProblemParams {
            geometry,
            n: 8,
            nz: 6,
            cfl: 2.0,
            coefficients: coeffs.map(Arc::new),
            ..Default::default()
        };
        let a = strata::matrix::assemble(&p).unwrap();
        assert!(a.values.len() <= 7 * a.size);
        // A x from the matrix equals the reference kernel's (zero halo: the Dirichlet boundary).
        let s = LevelStencil::new(&p, Block::whole(8), Arc::new(VerticalGrid::new(&p)));
        let x = with_zero_halo(random_field(8, 8, 6, 9));
        let mut ax = x.clone();
        ReferenceBackend.apply(&s, &x, &mut ax).unwrap();
        let mut xv = vec![0.0; a.size];
        x.get_interior(&mut xv);
        let mut want = vec![0.0; a.size];
        ax.get_interior(&mut want);
        let got = a.apply(&xv);
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-13 * scale, "{geometry:?}: {g} vs {w}");
        }
        // A direct solve of the exported system equals strata's solution.
        let rhs = build_rhs(&p, RhsKind::Random, 2, &Block::whole(8));
        let direct = dense_solve(&a, &rhs);
        let cfg = SolverConfig::paper(SolverKind::MgCg)
            .with_levels(3)
            .with_rtol(1e-13)
            .with_max_it(200);
        let b = CpuBackend::new(Some(1)).unwrap();
        let sol = strata::solve(&b, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
        let scale = direct.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = sol
            .u
            .iter()
            .zip(&direct)
            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(diff <= 1e-8 * scale, "{geometry:?}: {:e}", diff / scale);
        // A u = f for strata's solution, in the matrix's terms.
        let au = a.apply(&sol.u);
        let fscale = rhs.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let res = au
            .iter()
            .zip(&rhs)
            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(
            res <= 1e-9 * fscale,
            "{geometry:?}: residual {:e}",
            res / fscale
        );
    }
}

/// The fields a caller gives, copied; the others the model problem's (κ = 1, β = δ, ξ only when a
/// component is given, the others 0); a field of the wrong length named in the error.
#[test]
fn given_fields_are_copied_and_the_others_are_the_model_problems() {
    let (n, nz, delta) = (5, 3, 0.25);
    let len = n * n * nz;
    let ky: Vec<f64> = (0..len).map(|v| 1.0 + v as f64 / 7.0).collect();
    let xi_z: Vec<f64> = (0..len).map(|v| -(v as f64)).collect();
    let c = Coefficients::from_given(1, n, nz, delta, [None; 7]).unwrap();
    assert_eq!(c, Coefficients::constant(n, nz, delta));
    let given = [None, Some(&ky[..]), None, None, None, None, Some(&xi_z[..])];
    let c = Coefficients::from_given(1, n, nz, delta, given).unwrap();
    let mut want = Coefficients::constant(n, nz, delta);
    want.ky = ky.clone();
    want.xi = Some([vec![0.0; len], vec![0.0; len], xi_z.clone()]);
    assert_eq!(c, want);
    // Large enough for several pieces of the parallel copy.
    let big = 200 * 200 * 8;
    let kx: Vec<f64> = (0..big).map(|v| v as f64).collect();
    let c = Coefficients::from_given(
        1,
        200,
        8,
        delta,
        [Some(&kx[..]), None, None, None, None, None, None],
    )
    .unwrap();
    assert_eq!(c.kx, kx);
    assert!(c.beta.iter().all(|&b| b == delta) && c.kz.iter().all(|&k| k == 1.0));
    let e = Coefficients::from_given(
        1,
        n,
        nz,
        delta,
        [None, None, None, Some(&ky[1..]), None, None, None],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("beta") && e.contains(&(len - 1).to_string()),
        "{e}"
    );
}

/// Values that would overflow the operator or the norms are refused before a solve, naming the
/// field, the value and the cell: a coefficient beyond 1e100 (or a positive one below 1e-100),
/// and a right-hand side whose sum of squares overflows (before: "did not converge
/// (DivergedNanOrInf)").
#[test]
fn huge_finite_values_are_named_before_a_solve() {
    let (n, nz) = (8, 4);
    for (value, field) in [(1e300, "kz"), (1e-200, "kz"), (-1e200, "xi_x")] {
        let mut c = Coefficients::constant(n, nz, 1.0);
        if field == "kz" {
            c.kz[(2 * n + 3) * nz + 1] = value;
        } else {
            let mut xi = [
                vec![0.0; n * n * nz],
                vec![0.0; n * n * nz],
                vec![0.0; n * n * nz],
            ];
            xi[0][(2 * n + 3) * nz + 1] = value;
            c.xi = Some(xi);
        }
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains(field) && e.contains("(y=2, x=3, z=1)") && e.contains("rescale"),
            "{e}"
        );
    }
    let p = ProblemParams {
        n,
        nz,
        ..Default::default()
    };
    let mut rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(n));
    rhs[17] = 1e300;
    let b = CpuBackend::new(Some(1)).unwrap();
    let cfg = SolverConfig::new(SolverKind::Mg).with_levels(2);
    let e = strata::solve(&b, &p, &cfg, &rhs, &mut |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rhs") && e.contains("1e300") && e.contains("overflow"),
        "{e}"
    );
}
