//! Every CPU kernel equals the serial reference on odd, non-power-of-two grids with random data
//! (halo included, as a neighbour rank would leave it), on whole levels and on interior blocks.

mod common;

use common::{random_field, rel_diff, Rng};
use strata::backend::cpu::CpuBackend;
use strata::backend::reference::ReferenceBackend;
use strata::backend::{face_len, Backend, Side};
use strata::field::HostField;
use strata::grid::Block;
use strata::problem::{Geometry, Grading, ProblemParams};
use strata::stencil::LevelStencil;

/// Kernels without a line solve: a few ulps.
const TOL: f64 = 1e-13;
/// Kernels with a line solve: the column blocks are nearly singular in the vertical (Neumann
/// ends, ω²λ²/δr² ≫ δ), so a different but equally valid rounding order (the CPU multiplies by
/// 1/m) differs by about eps·κ(A_T).
const TOL_SOLVE: f64 = 1e-10;

fn params(geometry: Geometry, nz: usize) -> ProblemParams {
    ProblemParams {
        geometry,
        grading: Grading::Graded,
        nz,
        n: 26,
        ..Default::default()
    }
}

/// Whole 13×11 levels are not square; use blocks of a 26×26 level instead: one touching two
/// physical sides, one in the interior.
fn blocks() -> Vec<Block> {
    vec![
        Block {
            n: 26,
            i0: 0,
            j0: 0,
            nx: 13,
            ny: 11,
        },
        Block {
            n: 26,
            i0: 6,
            j0: 8,
            nx: 13,
            ny: 11,
        },
        Block::whole(13),
    ]
}

fn level(g: Geometry, block: Block, nz: usize) -> LevelStencil {
    let p = params(g, nz);
    let v = std::sync::Arc::new(strata::problem::VerticalGrid::new(&p));
    LevelStencil::new(&p, block, v)
}

fn cases() -> Vec<LevelStencil> {
    let mut out = vec![];
    for g in [Geometry::Panel, Geometry::Box] {
        for b in blocks() {
            out.push(level(g, b, 7));
        }
    }
    out
}

fn rand(s: &LevelStencil, rng: &mut Rng) -> HostField {
    random_field(s.nx(), s.ny(), s.nz, rng)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= TOL * b.abs().max(1e-300)
}

#[test]
fn vector_kernels_match() {
    let (cpu, refb) = (CpuBackend::new(Some(3)).unwrap(), ReferenceBackend);
    let mut rng = Rng::new(1);
    for s in cases() {
        let x = rand(&s, &mut rng);
        let y = rand(&s, &mut rng);
        let (mut a, mut b) = (y.clone(), y.clone());
        cpu.axpy(&s, 0.7, &x, &mut a).unwrap();
        refb.axpy(&s, 0.7, &x, &mut b).unwrap();
        assert!(rel_diff(&a, &b) <= TOL);
        cpu.xpby(&s, &x, -0.3, &mut a).unwrap();
        refb.xpby(&s, &x, -0.3, &mut b).unwrap();
        assert!(rel_diff(&a, &b) <= TOL);
        assert!(close(
            cpu.dot(&s, &x, &y).unwrap(),
            refb.dot(&s, &x, &y).unwrap()
        ));
        cpu.copy(&s, &x, &mut a).unwrap();
        assert_eq!(rel_diff(&a, &x), 0.0);
        cpu.fill(&s, &mut a, 2.5).unwrap();
        assert!(a.column(s.nx() - 1, s.ny() - 1).iter().all(|&v| v == 2.5));
        // The halo is not touched by interior kernels.
        assert_eq!(a.data[0], y.data[0]);
    }
}

#[test]
fn apply_residual_and_line_solve_match() {
    let (cpu, refb) = (CpuBackend::new(Some(2)).unwrap(), ReferenceBackend);
    let mut rng = Rng::new(2);
    for s in cases() {
        let (x, f) = (rand(&s, &mut rng), rand(&s, &mut rng));
        let (mut a, mut b) = (rand(&s, &mut rng), rand(&s, &mut rng));
        cpu.apply(&s, &x, &mut a).unwrap();
        refb.apply(&s, &x, &mut b).unwrap();
        assert!(rel_diff(&a, &b) <= TOL, "apply {:?}", s.block);
        let ra = cpu.residual(&s, &f, &x, &mut a).unwrap();
        let rb = refb.residual(&s, &f, &x, &mut b).unwrap();
        assert!(
            rel_diff(&a, &b) <= TOL && close(ra, rb),
            "residual {:?}",
            s.block
        );
        cpu.line_solve(&s, &f, &mut a).unwrap();
        refb.line_solve(&s, &f, &mut b).unwrap();
        assert!(
            rel_diff(&a, &b) <= TOL_SOLVE,
            "line_solve {:?} {:e}",
            s.block,
            rel_diff(&a, &b)
        );
    }
}

#[test]
fn fused_cg_kernels_match() {
    let (cpu, refb) = (CpuBackend::new(Some(2)).unwrap(), ReferenceBackend);
    let mut rng = Rng::new(3);
    for s in cases() {
        let z = rand(&s, &mut rng);
        let (u, p, q) = (rand(&s, &mut rng), rand(&s, &mut rng), rand(&s, &mut rng));
        let (mut ua, mut pa, mut qa) = (u.clone(), p.clone(), q.clone());
        let (mut ub, mut pb, mut qb) = (u, p, q);
        let sa = cpu
            .cg_spmv(&s, &z, &mut ua, &mut pa, &mut qa, 0.4, 0.6)
            .unwrap();
        let sb = refb
            .cg_spmv(&s, &z, &mut ub, &mut pb, &mut qb, 0.4, 0.6)
            .unwrap();
        assert!(rel_diff(&ua, &ub) <= TOL && rel_diff(&pa, &pb) <= TOL);
        assert!(
            rel_diff(&qa, &qb) <= TOL && close(sa, sb),
            "spmv {:?}",
            s.block
        );
        let r = rand(&s, &mut rng);
        let (mut ra, mut rb) = (r.clone(), r);
        let (mut za, mut zb) = (rand(&s, &mut rng), rand(&s, &mut rng));
        let da = cpu.cg_tridiag(&s, &qa, &mut ra, &mut za, 0.8).unwrap();
        let db = refb.cg_tridiag(&s, &qb, &mut rb, &mut zb, 0.8).unwrap();
        assert!(rel_diff(&ra, &rb) <= TOL && rel_diff(&za, &zb) <= TOL_SOLVE);
        assert!(
            close(da[0], db[0]) && (da[1] - db[1]).abs() <= TOL_SOLVE * db[1].abs(),
            "tridiag {:?}",
            s.block
        );
    }
}

#[test]
fn multigrid_kernels_match() {
    let (cpu, refb) = (CpuBackend::new(Some(2)).unwrap(), ReferenceBackend);
    let mut rng = Rng::new(4);
    for g in [Geometry::Panel, Geometry::Box] {
        // Fine blocks of even size on a 28×28 level, coarse blocks of 7×5 (odd).
        for fine_block in [
            Block {
                n: 28,
                i0: 0,
                j0: 0,
                nx: 14,
                ny: 10,
            },
            Block {
                n: 28,
                i0: 14,
                j0: 18,
                nx: 14,
                ny: 10,
            },
            Block {
                n: 28,
                i0: 6,
                j0: 8,
                nx: 14,
                ny: 10,
            },
        ] {
            let fine = level(g, fine_block, 9);
            let coarse = level(g, fine_block.coarsen(), 9);
            let (f, u) = (rand(&fine, &mut rng), rand(&fine, &mut rng));
            let (mut a, mut b) = (rand(&fine, &mut rng), rand(&fine, &mut rng));
            cpu.smooth(&fine, &f, &u, &mut a, 2.0 / 3.0).unwrap();
            refb.smooth(&fine, &f, &u, &mut b, 2.0 / 3.0).unwrap();
            assert!(rel_diff(&a, &b) <= TOL_SOLVE, "smooth {fine_block:?}");

            let (mut fa, mut fb) = (rand(&coarse, &mut rng), rand(&coarse, &mut rng));
            let (mut ca, mut cb) = (rand(&coarse, &mut rng), rand(&coarse, &mut rng));
            cpu.restrict_smooth(&fine, &coarse, &f, &mut fa, &mut ca, 0.6, 1.0)
                .unwrap();
            refb.restrict_smooth(&fine, &coarse, &f, &mut fb, &mut cb, 0.6, 1.0)
                .unwrap();
            assert!(
                rel_diff(&fa, &fb) <= TOL && rel_diff(&ca, &cb) <= TOL_SOLVE,
                "restrict {fine_block:?}"
            );

            let uc = rand(&coarse, &mut rng);
            let (mut pa, mut pb) = (u.clone(), u.clone());
            cpu.prolongate(&coarse, &fine, &uc, &mut pa).unwrap();
            refb.prolongate(&coarse, &fine, &uc, &mut pb).unwrap();
            assert!(rel_diff(&pa, &pb) <= TOL, "prolongate {fine_block:?}");
        }
    }
}

#[test]
fn faces_round_trip_into_the_opposite_halo() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let mut rng = Rng::new(5);
    let s = level(Geometry::Panel, blocks()[1], 7);
    let x = rand(&s, &mut rng);
    for side in Side::ALL {
        let mut buf = vec![0.0; face_len(&s, side)];
        cpu.pack_face(&s, &x, side, &mut buf).unwrap();
        let mut y = HostField::zeros(s.nx(), s.ny(), s.nz);
        cpu.unpack_face(&s, &mut y, side.opposite(), &buf).unwrap();
        // The layer next to `side` of x is now the halo across the opposite side of y.
        let (nx, ny) = (s.nx(), s.ny());
        let (src, dst) = match side {
            Side::West => (x.offset(1, 1), y.offset(nx + 1, 1)),
            Side::East => (x.offset(nx, 1), y.offset(0, 1)),
            Side::South => (x.offset(1, 1), y.offset(1, ny + 1)),
            Side::North => (x.offset(1, ny), y.offset(1, 0)),
        };
        assert_eq!(x.data[src..src + s.nz], y.data[dst..dst + s.nz], "{side:?}");
    }
}
