//! The whole sphere (docs/MODEL.md §16): the operator across panel edges is symmetric bit for
//! bit and conserves (its horizontal fluxes cancel), any tiling of the panels gives the same
//! solve, multigrid converges as on one panel, and what cannot work is refused.
#![allow(clippy::needless_range_loop)] // dense-matrix index loops read best as loops

mod common;

use strata::backend::cpu::CpuBackend;
use strata::backend::prelude::*;
use strata::backend::reference::ReferenceBackend;
use strata::backend::tiled::Tiled;
use strata::comm::{SerialComm, SphereComm};
use strata::grid::sphere;
use strata::problem::{
    build_rhs_tiles, Geometry, ProblemParams, RhsKind, SphereStencil, VerticalGrid,
};
use strata::solver::{Solver, SolverConfig, SolverKind};
use strata::stencil::{build_levels, build_sphere_levels};

fn sphere_params(n: usize, nz: usize) -> ProblemParams {
    ProblemParams {
        geometry: Geometry::Sphere,
        n,
        nz,
        ..Default::default()
    }
}

/// `p` with the paper's two-point stencil (any tiling).
fn two_point(p: &ProblemParams) -> ProblemParams {
    ProblemParams {
        sphere_stencil: SphereStencil::TwoPoint,
        ..p.clone()
    }
}

/// y ← A x on the sphere ([`common::sphere_apply`]).
fn apply<B: Backend>(b: &B, p: &ProblemParams, k: usize, x: &[f64]) -> Vec<f64> {
    common::sphere_apply(b, p, k, x)
}

#[test]
fn the_operator_is_symmetric_bit_for_bit_with_four_neighbours_everywhere() {
    let (n, nz) = (4, 3);
    let p = sphere_params(n, nz);
    symmetric_with_four_neighbours(&p);
    symmetric_with_four_neighbours(&two_point(&p));
}

/// The dense operator of the small sphere `p` (by unit vectors on the reference backend) is
/// symmetric bit for bit, with a positive diagonal and four negative horizontal couplings in
/// every row (two-point), or four to eight (nine-point: the diagonal couplings inside a panel,
/// of either sign).
fn symmetric_with_four_neighbours(p: &ProblemParams) {
    let (n, nz) = (p.n, p.nz);
    let size = 6 * n * n * nz;
    let cols: Vec<Vec<f64>> = (0..size)
        .map(|c| {
            let mut e = vec![0.0; size];
            e[c] = 1.0;
            apply(&ReferenceBackend, p, 1, &e)
        })
        .collect();
    let nine = p.nine_point_sphere();
    let mut diagonals = 0;
    for i in 0..size {
        let mut horizontal = 0;
        for j in 0..size {
            assert_eq!(cols[j][i].to_bits(), cols[i][j].to_bits(), "A[{i}][{j}]");
            // Off-diagonal entries in other columns (not i ± 1 of the same column) are the
            // horizontal couplings.
            if j / nz != i / nz && cols[j][i] != 0.0 {
                assert!(nine || cols[j][i] < 0.0);
                horizontal += 1;
            }
        }
        if nine {
            assert!((4..=8).contains(&horizontal), "row {i}: {horizontal}");
            diagonals += horizontal - 4;
        } else {
            assert_eq!(horizontal, 4, "row {i}: a closed surface has no wall");
        }
        assert!(cols[i][i] > 0.0);
    }
    // Inside every panel the cross terms couple diagonal neighbours: at every vertex inside a
    // panel but those on its axes (x = 0 or y = 0, where the grid is orthogonal), (n − 2)²
    // of them for even n, each coupling two pairs, both ways, at every level; none across a
    // panel edge.
    let want = if nine {
        6 * (n - 2) * (n - 2) * 4 * nz
    } else {
        0
    };
    assert_eq!(diagonals, want);
}

#[test]
fn horizontal_fluxes_cancel_a_constant_sees_only_the_zero_order_term() {
    // A·1 = |T| a_k in every cell (a_k = δ V_k): the rows' horizontal and vertical fluxes of a
    // constant vanish, across panel edges as inside; with the symmetry above, the sum of all
    // rows' horizontal fluxes is zero for any field (conservation).
    let (n, nz) = (16, 8);
    let b = CpuBackend::new(Some(2)).unwrap();
    for (k, stencil) in [
        (1, SphereStencil::NinePoint),
        (2, SphereStencil::NinePoint),
        (1, SphereStencil::TwoPoint),
        (2, SphereStencil::TwoPoint),
    ] {
        let p = ProblemParams {
            sphere_stencil: stencil,
            ..sphere_params(n, nz)
        };
        let y = apply(&b, &p, k, &vec![1.0; 6 * n * n * nz]);
        let vert = VerticalGrid::new(&p);
        let grid = strata::problem::HorizontalGrid {
            geometry: p.geometry,
            n,
        };
        let mut at = 0;
        for t in sphere::tiles(n, k) {
            for j in t.j0..t.j0 + t.ny {
                for i in t.i0..t.i0 + t.nx {
                    let col = grid.column_with(i, j, stencil);
                    for kk in 0..nz {
                        let want = col.area * vert.a[kk];
                        // To rounding of the row's largest terms, which cancel.
                        let scale = want.abs()
                            + 2.0 * (vert.d[kk] * col.alpha_t).abs()
                            + col.area * (vert.b[kk].abs() + vert.c[kk].abs());
                        assert!(
                            (y[at] - want).abs() < 1e-13 * scale,
                            "tile {t:?} ({i}, {j}, {kk}): {} vs {want}",
                            y[at]
                        );
                        at += 1;
                    }
                }
            }
        }
    }
}

/// A solve of `p` on the tiles of `k × k` blocks per panel, in one process; the solution
/// reordered to whole panels ([panel][j][i][k]) and the iteration count.
fn solve_tiled<B: Backend>(
    b: &B,
    p: &ProblemParams,
    cfg: &SolverConfig,
    k: usize,
) -> (Vec<f64>, usize) {
    let (u, its, _) = solve_tiled_history(b, p, cfg, k);
    (u, its)
}

/// [`solve_tiled`], and the residual norms the solver reported, one per iteration.
fn solve_tiled_history<B: Backend>(
    b: &B,
    p: &ProblemParams,
    cfg: &SolverConfig,
    k: usize,
) -> (Vec<f64>, usize, Vec<f64>) {
    common::solve_sphere_tiles(b, p, cfg, k)
}

#[test]
fn any_tiling_and_any_backend_give_the_same_solve() {
    // 3 × 3 tiles: their corners lie off the panel's centre lines, where the diagonal couplings
    // are not zero (at the centre of a 2 × 2 tiling they vanish by symmetry, and a missing
    // corner exchange would go unseen).
    let p = sphere_params(24, 8);
    // Only split panels with cross terms need the corner exchange (the solvers skip it else).
    let fine = |p: &ProblemParams, k| {
        build_sphere_levels(p, &sphere::tiles(p.n, k), 1, Default::default()).unwrap()[0]
            .reads_tile_corners()
    };
    assert!(!fine(&p, 1) && fine(&p, 2) && fine(&p, 3) && !fine(&two_point(&p), 3));
    let cpu = CpuBackend::new(Some(2)).unwrap();
    // mg (the nine-point levels' exchanges give the tiles' corners) on 1 x 1 and
    // 3 x 3 tiles, CPU and reference.
    let cfg = SolverConfig::paper(SolverKind::Mg)
        .with_levels(3)
        .with_rtol(1e-9);
    let (m1, mt1, h1) = solve_tiled_history(&cpu, &p, &cfg, 1);
    let (m2, mt2, h2) = solve_tiled_history(&cpu, &p, &cfg, 3);
    let (mr, mtr, hr) = solve_tiled_history(&ReferenceBackend, &p, &cfg, 3);
    assert_eq!((mt2, mtr), (mt1, mt1));
    // The same iterates, not only the same solution (a stale corner converges to it too).
    for (h, what) in [(&h2, "3 x 3 tiles"), (&hr, "reference")] {
        for (a, b) in h1.iter().zip(h) {
            assert!(
                (a - b).abs() <= 1e-9 * h1[0],
                "{what}: {h:?} against {h1:?}"
            );
        }
    }
    let cfg = SolverConfig::paper(SolverKind::MgCg)
        .with_levels(3)
        .with_rtol(1e-9);
    let (u1, it1) = solve_tiled(&cpu, &p, &cfg, 1);
    let (u2, it2) = solve_tiled(&cpu, &p, &cfg, 3);
    let (ur, itr) = solve_tiled(&ReferenceBackend, &p, &cfg, 3);
    // The two-point stencil alike.
    let (t1, jt1) = solve_tiled(&cpu, &two_point(&p), &cfg, 1);
    let (t2, jt2) = solve_tiled(&cpu, &two_point(&p), &cfg, 3);
    assert_eq!((it2, itr, jt2), (it1, it1, jt1));
    let close_to = |x: &[f64], y: &[f64], tol: f64| {
        let scale = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (a, b) in x.iter().zip(y) {
            assert!((a - b).abs() < tol * scale, "{a} {b}");
        }
    };
    let close = |x: &[f64], y: &[f64]| close_to(x, y, 1e-10);
    close(&u1, &u2);
    close(&u1, &ur);
    close(&t1, &t2);
    close(&m1, &m2);
    close(&m1, &mr);
    // Another solver to rtol 1e-9: the same solution to the solves' accuracy.
    close_to(&m1, &u1, 1e-6);
    // The one-process entry point is the same solve.
    let tiles = sphere::tiles(p.n, 1);
    let rhs = build_rhs_tiles(&p, RhsKind::Random, 3, &tiles);
    let sol = strata::solve(&cpu, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
    assert_eq!(sol.info.iterations, it1);
    assert_eq!(sol.u, u1);
}

/// Iterations of `cfg` on one n × n × 32 panel (random right-hand side), to compare with the
/// sphere's.
fn panel_iterations(cpu: &CpuBackend, n: usize, cfg: &SolverConfig) -> usize {
    let panel = ProblemParams {
        geometry: Geometry::Panel,
        ..sphere_params(n, 32)
    };
    let rhs =
        strata::problem::build_rhs(&panel, RhsKind::Random, 3, &strata::grid::Block::whole(n));
    strata::solve(cpu, &panel, cfg, &rhs, &mut |_, _| {})
        .unwrap()
        .info
        .iterations
}

#[test]
fn multigrid_converges_on_the_sphere_as_on_one_panel() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    for n in [32, 64] {
        for kind in [SolverKind::Mg, SolverKind::MgCg] {
            let cfg = SolverConfig::paper(kind).with_levels(4);
            let sphere_its = solve_tiled(&cpu, &sphere_params(n, 32), &cfg, 1).1;
            let panel_its = panel_iterations(&cpu, n, &cfg);
            eprintln!("n = {n}, {kind:?}: sphere {sphere_its}, panel {panel_its}");
            assert!(
                sphere_its <= panel_its + 2,
                "n = {n}, {kind:?}: sphere {sphere_its}, panel {panel_its}"
            );
        }
    }
}

/// The default solvers (red-black, mixed precision) relax the nine-point levels by four-colour
/// sweeps (docs/MODEL.md §16.1): 5 cycles on the sphere, within one of a panel's (4 and 5),
/// where the 7-point hierarchy's split cycles took 7–8; the whole sphere in one tile and in
/// 2 × 2 tiles per panel alike.
#[test]
fn red_black_multigrid_takes_a_panels_cycles_on_the_sphere() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    for n in [32, 64] {
        for kind in [SolverKind::Mg, SolverKind::MgCg] {
            let cfg = SolverConfig::new(kind);
            let panel_its = panel_iterations(&cpu, n, &cfg);
            for k in [1, 2] {
                let sphere_its = solve_tiled(&cpu, &sphere_params(n, 32), &cfg, k).1;
                eprintln!(
                    "n = {n}, {kind:?}, {k}x{k} tiles: sphere {sphere_its}, panel {panel_its}"
                );
                assert!(
                    sphere_its <= 5 && sphere_its <= panel_its + 1,
                    "n = {n}, {kind:?}, {k}x{k}: sphere {sphere_its}, panel {panel_its}"
                );
            }
        }
    }
}

#[test]
fn what_cannot_work_on_the_sphere_is_refused() {
    let msg = |e: strata::StrataError| e.to_string();
    // δ = 0 is singular on a closed surface: solved (tests/singular.rs); with coefficient
    // fields β takes δ's place (β = 2: regular).
    let p = ProblemParams {
        delta: 0.0,
        ..sphere_params(8, 4)
    };
    assert!(p.validate().is_ok() && p.singular());
    let p = ProblemParams {
        coefficients: Some(std::sync::Arc::new(
            strata::problem::Coefficients::constant_panels(6, 8, 4, 2.0),
        )),
        ..p
    };
    assert!(p.validate().is_ok() && !p.singular());
    // Neither zero-flux nor periodic sides: the sphere has no lateral boundary.
    let p = ProblemParams {
        boundaries: strata::grid::Boundaries::parse("neumann").unwrap(),
        ..sphere_params(8, 4)
    };
    assert!(msg(p.validate().unwrap_err()).contains("no lateral boundary"));
    let p = sphere_params(8, 4);
    // The levels of one panel cannot be built for the sphere (they would be walled).
    let e = build_levels(&p, strata::grid::Block::whole(8), 1).unwrap_err();
    assert!(msg(e).contains("build_sphere_levels"));
    // A backend that is not tiled refuses the sphere's levels.
    let levels = build_sphere_levels(&p, &sphere::tiles(8, 1), 2, Default::default()).unwrap();
    let cpu = CpuBackend::new(Some(1)).unwrap();
    assert!(msg(cpu.prepare_level(&levels[0]).err().unwrap()).contains("tiled"));
    // A communicator that does not fill the tiles' halos is refused at set-up.
    let t = Tiled::new(&cpu);
    let mut solver = Solver::new(
        &t,
        &SolverConfig::paper(SolverKind::Mg).with_levels(2),
        &levels,
    )
    .unwrap();
    let e = solver.prepare_comm(&t, &SerialComm).err().unwrap();
    assert!(msg(e).contains("SphereComm"));
    // A process that lacks some tiles cannot exchange with them alone.
    let some = sphere::rank_tiles(8, 2, 2, 0).unwrap();
    let e = strata::solve_tiles(
        &t,
        &SphereComm,
        &p,
        &some,
        &SolverConfig::paper(SolverKind::Mg).with_levels(2),
        &build_rhs_tiles(&p, RhsKind::Random, 1, &some),
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(msg(e).contains("needs all its tiles"));
}

#[test]
fn the_assembled_matrix_is_the_operator_the_solvers_apply() {
    use std::sync::Arc;
    // Assembled from the rows and the edge links; applied through the halo exchange: the same
    // operator, with coefficient fields and advection too. Symmetric without advection.
    let (n, nz) = (8, 4);
    let mut c = sphere_coefficients(n, nz);
    let plain = ProblemParams {
        coefficients: Some(Arc::new(c.clone())),
        ..sphere_params(n, nz)
    };
    let len = c.len();
    c.xi = Some([
        (0..len).map(|m| (m % 7) as f64 - 3.0).collect(),
        (0..len).map(|m| (m % 5) as f64 - 2.0).collect(),
        (0..len).map(|m| (m % 3) as f64 - 1.0).collect(),
    ]);
    let advected = ProblemParams {
        coefficients: Some(Arc::new(c)),
        ..sphere_params(n, nz)
    };
    let cpu = CpuBackend::new(Some(2)).unwrap();
    for (name, p) in [
        ("model", sphere_params(n, nz)),
        ("fields", plain),
        ("advection", advected),
    ] {
        let m = strata::matrix::assemble(&p).unwrap();
        assert_eq!(m.size, 6 * n * n * nz);
        let x = build_rhs_tiles(&p, RhsKind::Random, 2, &sphere::tiles(n, 1));
        let (a, b) = (m.apply(&x), apply(&cpu, &p, 1, &x));
        let scale = b.iter().fold(0.0f64, |s, v| s.max(v.abs()));
        let diff = a
            .iter()
            .zip(&b)
            .fold(0.0f64, |s, (u, v)| s.max((u - v).abs()));
        assert!(diff < 1e-13 * scale, "{name}: {:e}", diff / scale);
        if name != "advection" {
            assert!(common::symmetric_bits(&m), "{name}: A = Aᵀ bit for bit");
        }
    }
}

/// A persistent solver on the sphere gives the same solve whatever it did before: the initial
/// guess's halo is exchanged at the start of a solve, not left from an earlier apply (a bug
/// this test found: cg's first residual read the halo an apply had left in the same field).
#[test]
fn a_persistent_solver_on_the_sphere_repeats_its_solves() {
    use strata::PersistentSolver;
    let p = sphere_params(16, 8);
    let cpu = Tiled::new(Box::new(CpuBackend::new(Some(2)).unwrap()));
    let tiles = sphere::tiles(16, 1);
    for kind in [
        SolverKind::Cg,
        SolverKind::Mg,
        SolverKind::MgCg,
        SolverKind::BiCgStab,
    ] {
        let cfg = SolverConfig::paper(kind).with_levels(3).with_rtol(1e-9);
        let mut s = PersistentSolver::sphere(&cpu, &p, &cfg).unwrap();
        let (f, g) = (
            build_rhs_tiles(&p, RhsKind::Random, 1, &tiles),
            build_rhs_tiles(&p, RhsKind::Bump, 1, &tiles),
        );
        let mut first = vec![0.0; s.len()];
        s.solve(&cpu, &g, &mut first, false).unwrap();
        let mut u = vec![0.0; s.len()];
        s.solve(&cpu, &f, &mut u, false).unwrap();
        let mut au = vec![0.0; s.len()];
        s.apply(&cpu, &u, &mut au).unwrap();
        let mut again = vec![0.0; s.len()];
        s.solve(&cpu, &g, &mut again, false).unwrap();
        assert_eq!(first, again, "{kind:?}");
        // And the apply is the operator the solve satisfied.
        let r: f64 = au
            .iter()
            .zip(&f)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt();
        let nf: f64 = f.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!(r < 2e-9 * nf, "{kind:?}: {r:e}");
    }
}

/// Coefficient fields on the six panels: smooth in the 3D position with a contrast of about
/// 100, times a random factor in [0.5, 1.5) per cell.
fn sphere_coefficients(n: usize, nz: usize) -> strata::problem::Coefficients {
    let mut c = strata::problem::Coefficients::constant_panels(6, n, nz, 1.0);
    let mut state = 12345u64;
    let mut rnd = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        0.5 + (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for (f, field) in [&mut c.kx, &mut c.ky, &mut c.kz, &mut c.beta]
        .into_iter()
        .enumerate()
    {
        for panel in 0..6 {
            for j in 0..n {
                for i in 0..n {
                    let q = sphere::cell_centre(panel, i, j, n);
                    let s = (3.0 * q[0] + f as f64).sin() * (2.0 * q[1]).cos() + q[2];
                    for k in 0..nz {
                        let at = ((panel * n + j) * n + i) * nz + k;
                        field[at] = 10f64.powf(s) * rnd() * (1.0 + k as f64 / nz as f64);
                    }
                }
            }
        }
    }
    c
}

#[test]
fn coefficient_fields_on_the_sphere_keep_symmetry_conservation_and_any_tiling() {
    use std::sync::Arc;
    // Symmetric bit for bit, four neighbours everywhere, with the face factors across edges.
    let (n, nz) = (4, 3);
    let p = ProblemParams {
        coefficients: Some(Arc::new(sphere_coefficients(n, nz))),
        ..sphere_params(n, nz)
    };
    symmetric_with_four_neighbours(&p);
    // A·1 is the zero-order term β V_k |T| alone.
    // 24 = 3 × 8: 3 × 3 tiles below, whose corners carry diagonal couplings.
    let (n, nz) = (24, 8);
    let c = sphere_coefficients(n, nz);
    let p = ProblemParams {
        coefficients: Some(Arc::new(c.clone())),
        ..sphere_params(n, nz)
    };
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let y = apply(&cpu, &p, 1, &vec![1.0; 6 * n * n * nz]);
    let vert = VerticalGrid::new(&p);
    let grid = strata::problem::HorizontalGrid {
        geometry: p.geometry,
        n,
    };
    let levels = build_sphere_levels(&p, &sphere::tiles(n, 1), 1, Default::default()).unwrap();
    let tiles = levels[0].tiles.as_ref().unwrap();
    for (at, v) in y.iter().enumerate() {
        let (col, k) = (at / nz, at % nz);
        let (i, j, panel) = (col % n, (col / n) % n, col / (n * n));
        let area = grid.column(i, j).area;
        let want = area * c.beta[at] * vert.vol[k];
        // To rounding of the row's terms, which cancel.
        let e = tiles[panel].row(i, j, k);
        let scale = [e.diag, e.east, e.west, e.north, e.south, e.up, e.down]
            .iter()
            .map(|x| x.abs())
            .sum::<f64>();
        assert!((v - want).abs() < 1e-13 * scale, "{at}: {v} vs {want}");
    }
    // Whole panels and 3 × 3 blocks of every panel, CPU and reference: one solve.
    let cfg = SolverConfig::paper(SolverKind::MgCg)
        .with_levels(3)
        .with_rtol(1e-9);
    let (u1, it1) = solve_tiled(&cpu, &p, &cfg, 1);
    let (u2, it2) = solve_tiled(&cpu, &p, &cfg, 3);
    let (ur, itr) = solve_tiled(&ReferenceBackend, &p, &cfg, 3);
    assert_eq!((it2, itr), (it1, it1));
    let scale = u1.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (a, b) in u1.iter().zip(&u2).chain(u1.iter().zip(&ur)) {
        assert!((a - b).abs() < 1e-10 * scale, "{a} {b}");
    }
    // 3 × 3 blocks of every panel with the two-point stencil.
    let (u1, it1) = solve_tiled(&cpu, &two_point(&p), &cfg, 1);
    let (u2, it2) = solve_tiled(&cpu, &two_point(&p), &cfg, 3);
    let (ur, itr) = solve_tiled(&ReferenceBackend, &two_point(&p), &cfg, 3);
    assert_eq!((it2, itr), (it1, it1));
    let scale = u1.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (a, b) in u1.iter().zip(&u2).chain(u1.iter().zip(&ur)) {
        assert!((a - b).abs() < 1e-10 * scale, "{a} {b}");
    }
    eprintln!("coefficient fields (contrast ~100) on the sphere 6x24^2x8: mg-cg {it1} iterations");
    // Unit coefficients are the model problem.
    let unit = ProblemParams {
        coefficients: Some(Arc::new(strata::problem::Coefficients::constant_panels(
            6, n, nz, 1.0,
        ))),
        ..sphere_params(n, nz)
    };
    let x = build_rhs_tiles(&unit, RhsKind::Random, 9, &sphere::tiles(n, 1));
    let (a, b) = (
        apply(&cpu, &unit, 1, &x),
        apply(&cpu, &sphere_params(n, nz), 1, &x),
    );
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = a
        .iter()
        .zip(&b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    assert!(diff < 1e-13 * scale, "{:e}", diff / scale);
}

#[test]
fn advection_on_the_sphere_conserves_across_panel_edges() {
    use std::sync::Arc;
    // ξ with every component varying: flows cross every panel edge in every direction.
    let (n, nz) = (16, 8);
    let mut c = sphere_coefficients(n, nz);
    let len = c.len();
    let wave = |s: usize| -> Vec<f64> {
        (0..len)
            .map(|m| ((m * (7 + s)) % 97) as f64 / 48.5 - 1.0)
            .collect()
    };
    c.xi = Some([wave(0), wave(1), wave(2)]);
    let p = ProblemParams {
        coefficients: Some(Arc::new(c.clone())),
        ..sphere_params(n, nz)
    };
    // Σ_rows (A u) = Σ β V_k |T| u for any u: every face's diffusive and advective flux leaves
    // one row and enters the other, across panel edges too (a sign or a value that differed
    // between the two panels would leave a remainder).
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let u = build_rhs_tiles(&p, RhsKind::Random, 4, &sphere::tiles(n, 1));
    let au = apply(&cpu, &p, 1, &u);
    let vert = VerticalGrid::new(&p);
    let grid = strata::problem::HorizontalGrid {
        geometry: p.geometry,
        n,
    };
    let (mut sum, mut want, mut scale) = (0.0, 0.0, 0.0);
    for (at, (v, x)) in au.iter().zip(&u).enumerate() {
        let (col, k) = (at / nz, at % nz);
        let (i, j) = (col % n, (col / n) % n);
        let w = grid.column(i, j).area * c.beta[at] * vert.vol[k] * x;
        sum += v;
        want += w;
        scale += v.abs();
    }
    assert!(
        (sum - want).abs() < 1e-13 * scale,
        "{sum} vs {want} (scale {scale})"
    );
    // Tilings and backends agree with the non-symmetric solvers; CG-based ones are refused.
    for kind in [SolverKind::Gcr, SolverKind::BiCgStab] {
        let cfg = SolverConfig::paper(kind).with_levels(3).with_rtol(1e-9);
        let (u1, it1) = solve_tiled(&cpu, &p, &cfg, 1);
        let (u2, it2) = solve_tiled(&cpu, &p, &cfg, 2);
        let (ur, itr) = solve_tiled(&ReferenceBackend, &p, &cfg, 1);
        // The two-point stencil alike.
        let (t1, jt1) = solve_tiled(&cpu, &two_point(&p), &cfg, 1);
        let (t2, jt2) = solve_tiled(&cpu, &two_point(&p), &cfg, 2);
        eprintln!("advection on the sphere, {kind:?}: {it1} / {it2} / {itr} iterations (two-point: {jt1} / {jt2})");
        assert!(
            it1.abs_diff(it2) <= 1 && it1.abs_diff(itr) <= 1 && jt1.abs_diff(jt2) <= 1,
            "{kind:?}"
        );
        for (x, y) in [(&u1, &u2), (&u1, &ur), (&t1, &t2)] {
            let scale = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (a, b) in x.iter().zip(y) {
                assert!((a - b).abs() < 1e-7 * scale, "{kind:?}: {a} {b}");
            }
        }
    }
    let tiles = sphere::tiles(n, 1);
    let e = strata::solve_tiles(
        &Tiled::new(&cpu),
        &SphereComm,
        &p,
        &tiles,
        &SolverConfig::paper(SolverKind::MgCg).with_levels(3),
        &build_rhs_tiles(&p, RhsKind::Random, 1, &tiles),
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("symmetric"), "{e}");
}

/// Max and RMS error of the manufactured solution u* = Y₂(q) cos(π(r − 1)/H) on the sphere
/// (ω fixed, nz = n/2, docs/MODEL.md §16.1), solved to 1e-11.
fn manufactured_errors(n: usize, stencil: SphereStencil) -> (f64, f64) {
    let p = ProblemParams {
        nz: n / 2,
        height: 0.1,
        omega: Some(0.1f64.sqrt()),
        sphere_stencil: stencil,
        ..sphere_params(n, n / 2)
    };
    let tiles = sphere::tiles(n, 1);
    let rhs = build_rhs_tiles(&p, RhsKind::Manufactured, 0, &tiles);
    let cfg = SolverConfig::paper(SolverKind::MgCg)
        .with_levels(2)
        .with_rtol(1e-11)
        .with_max_it(500);
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let sol = strata::solve(&cpu, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
    assert!(sol.info.reason.converged());
    strata::problem::manufactured_error(&p, &sol.u)
}

#[test]
fn the_manufactured_solution_converges_at_second_order() {
    // The nine-point stencil: both errors fall by about 4 per halving of h.
    let e: Vec<(f64, f64)> = [8, 16, 32]
        .map(|n| manufactured_errors(n, SphereStencil::NinePoint))
        .to_vec();
    for w in e.windows(2) {
        let (max, rms) = (w[0].0 / w[1].0, w[0].1 / w[1].1);
        eprintln!(
            "nine-point: max {:.3e} -> {:.3e} ({max:.2}), rms ratio {rms:.2}",
            w[0].0, w[1].0
        );
        assert!(max > 3.5 && rms > 3.5, "{e:?}");
    }
    // The paper's two-point fluxes are not consistent on the sphere: the max error stalls.
    let t: Vec<(f64, f64)> = [32, 64]
        .map(|n| manufactured_errors(n, SphereStencil::TwoPoint))
        .to_vec();
    assert!(t[0].0 / t[1].0 < 2.0, "{t:?}");
}

#[test]
fn the_memory_estimate_counts_the_nine_point_operators_diagonal_couplings() {
    // The hierarchy relaxes the nine-point operator: four diagonal couplings (32 B) per
    // column on every level, and nothing else.
    let (n, nz) = (64, 16);
    let cfg = SolverConfig::paper(SolverKind::Mg).with_levels(3);
    let bytes = |n: usize, _| (n * n * nz * 8) as u64;
    let columns = (n * n + (n / 2) * (n / 2) + (n / 4) * (n / 4)) as u64;
    let nine = strata::field_memory(&sphere_params(n, nz), &cfg, bytes);
    let two = strata::field_memory(&two_point(&sphere_params(n, nz)), &cfg, bytes);
    assert_eq!(nine - two, 32 * columns);
    let cfg = SolverConfig::paper(SolverKind::MgCg).with_levels(3);
    let nine = strata::field_memory(&sphere_params(n, nz), &cfg, bytes);
    let two = strata::field_memory(&two_point(&sphere_params(n, nz)), &cfg, bytes);
    assert_eq!(nine - two, 32 * columns);
    // Mixed precision: the outer fp64 fine level's couplings too.
    let cfg = SolverConfig::new(SolverKind::Mg).with_levels(3);
    let nine = strata::field_memory(&sphere_params(n, nz), &cfg, bytes);
    let two = strata::field_memory(&two_point(&sphere_params(n, nz)), &cfg, bytes);
    assert_eq!(nine - two, 32 * (columns + (n * n) as u64));
}

/// Balanced decompositions: 4, 8, 12 and 16 ranks get equal numbers of equal tiles (blocks of
/// the panels), which cover the sphere once; 5 ranks, whose equal split would need 5 × 5 blocks
/// (not a divisor of the coarsest level), get whole panels, two on the first.
#[test]
fn rank_tiles_give_every_rank_equal_work() {
    for (ranks, k) in [
        (1, 1),
        (2, 1),
        (3, 1),
        (4, 2),
        (6, 1),
        (8, 2),
        (12, 2),
        (16, 4),
        (24, 2),
    ] {
        let all: Vec<Vec<strata::grid::Block>> = (0..ranks)
            .map(|r| sphere::rank_tiles(64, 3, ranks, r).unwrap())
            .collect();
        let cells: Vec<usize> = all
            .iter()
            .map(|t| t.iter().map(|b| b.nx * b.ny).sum())
            .collect();
        assert!(
            cells.iter().all(|&c| c == 6 * 64 * 64 / ranks),
            "{ranks} ranks: {cells:?}"
        );
        assert!(
            all.iter().flatten().all(|b| b.nx == 64 / k),
            "{ranks} ranks"
        );
        let mut covered: Vec<_> = all
            .iter()
            .flatten()
            .map(|b| (b.panel, b.i0, b.j0))
            .collect();
        covered.sort();
        covered.dedup();
        assert_eq!(covered.len(), 6 * k * k, "{ranks} ranks");
    }
    let five: Vec<usize> = (0..5)
        .map(|r| sphere::rank_tiles(64, 3, 5, r).unwrap().len())
        .collect();
    assert_eq!(five, [2, 1, 1, 1, 1]);
}
