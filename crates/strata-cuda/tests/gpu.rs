//! The CUDA backend against the serial reference and the CPU backend. These need an NVIDIA GPU,
//! so they are ignored by default; `scripts/gpu-check` runs them on a GPU machine with
//! `--ignored`.

use strata::backend::cpu::CpuBackend;
use strata::backend::reference::ReferenceBackend;
use strata::backend::{Backend, Side};
use strata::field::HostField;
use strata::grid::Block;
use strata::problem::{build_rhs, Geometry, Grading, ProblemParams, RhsKind, VerticalGrid};
use strata::solver::{SolverConfig, SolverKind};
use strata::stencil::LevelStencil;
use strata_cuda::{CudaBackend, CudaField, CudaLevel};

const TOL: f64 = 1e-13;
const TOL_SOLVE: f64 = 1e-10;

/// xorshift64*, values in [−1, 1).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    fn field(&mut self, s: &LevelStencil) -> HostField {
        let mut f = HostField::zeros(s.nx(), s.ny(), s.nz);
        f.data.iter_mut().for_each(|v| *v = self.next());
        f
    }
}

fn gpu() -> CudaBackend {
    CudaBackend::new(0).expect("a CUDA device")
}

fn level(g: Geometry, block: Block, nz: usize) -> LevelStencil {
    let p = ProblemParams {
        geometry: g,
        grading: Grading::Graded,
        nz,
        n: block.n,
        ..Default::default()
    };
    LevelStencil::new(&p, block, std::sync::Arc::new(VerticalGrid::new(&p)))
}

/// A device copy of a host field: interior by upload, the four halo faces by unpack.
fn to_gpu(b: &CudaBackend, lev: &CudaLevel, h: &HostField) -> CudaField {
    let mut d = b.alloc(lev).unwrap();
    let mut host = vec![0.0; h.nx * h.ny * h.nz];
    h.get_interior(&mut host);
    b.upload(lev, &host, &mut d).unwrap();
    for side in Side::ALL {
        // The halo across `side` of h is the face `side.opposite()` would send.
        let count = match side {
            Side::West | Side::East => h.ny,
            _ => h.nx,
        };
        let mut buf = vec![0.0; count * h.nz];
        for t in 0..count {
            let (i, j) = match side {
                Side::West => (0, t + 1),
                Side::East => (h.nx + 1, t + 1),
                Side::South => (t + 1, 0),
                Side::North => (t + 1, h.ny + 1),
            };
            let o = h.offset(i, j);
            buf[t * h.nz..(t + 1) * h.nz].copy_from_slice(&h.data[o..o + h.nz]);
        }
        let mut face = b.alloc_face(buf.len()).unwrap();
        b.face_from_host(&buf, &mut face).unwrap();
        b.unpack_face(lev, &mut d, side, &face).unwrap();
    }
    d
}

fn to_host(b: &CudaBackend, lev: &CudaLevel, d: &CudaField) -> HostField {
    let s = b.stencil(lev);
    let mut h = HostField::zeros(s.nx(), s.ny(), s.nz);
    let mut host = vec![0.0; s.cells()];
    b.download(lev, d, &mut host).unwrap();
    h.set_interior(&host);
    h
}

fn rel_diff(a: &HostField, b: &HostField) -> f64 {
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

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs()
}

fn blocks(n: usize, nx: usize, ny: usize) -> Vec<Block> {
    vec![
        Block {
            n,
            i0: 0,
            j0: 0,
            nx,
            ny,
        },
        Block {
            n,
            i0: n - nx,
            j0: n - ny,
            nx,
            ny,
        },
        Block {
            n,
            i0: 6,
            j0: 8,
            nx,
            ny,
        },
    ]
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_kernel_matches_the_reference() {
    let (g, r) = (gpu(), ReferenceBackend);
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for geom in [Geometry::Panel, Geometry::Box] {
        for nz in [7, 128] {
            for block in blocks(82, 37, 29) {
                let s = level(geom, block, nz);
                let lev = g.prepare_level(&s).unwrap();
                let (x, y, f) = (rng.field(&s), rng.field(&s), rng.field(&s));
                let (dx, df) = (to_gpu(&g, &lev, &x), to_gpu(&g, &lev, &f));
                let ctx = format!("{geom:?} nz={nz} {block:?}");

                // Vector kernels.
                let (mut hy, mut dy) = (y.clone(), to_gpu(&g, &lev, &y));
                r.axpy(&s, 0.7, &x, &mut hy).unwrap();
                g.axpy(&lev, 0.7, &dx, &mut dy).unwrap();
                r.xpby(&s, &x, -0.3, &mut hy).unwrap();
                g.xpby(&lev, &dx, -0.3, &mut dy).unwrap();
                assert!(
                    rel_diff(&to_host(&g, &lev, &dy), &hy) <= TOL,
                    "axpy/xpby {ctx}"
                );
                assert!(
                    close(
                        g.dot(&lev, &dx, &df).unwrap(),
                        r.dot(&s, &x, &f).unwrap(),
                        1e-12
                    ),
                    "dot {ctx}"
                );
                g.fill(&lev, &mut dy, 2.5).unwrap();
                assert!(to_host(&g, &lev, &dy)
                    .column(s.nx() - 1, s.ny() - 1)
                    .iter()
                    .all(|&v| v == 2.5));

                // Stencil kernels.
                let (mut ha, mut da) = (rng.field(&s), to_gpu(&g, &lev, &y));
                r.apply(&s, &x, &mut ha).unwrap();
                g.apply(&lev, &dx, &mut da).unwrap();
                assert!(rel_diff(&to_host(&g, &lev, &da), &ha) <= TOL, "apply {ctx}");
                let rr_h = r.residual(&s, &f, &x, &mut ha).unwrap();
                let rr_d = g.residual(&lev, &df, &dx, &mut da).unwrap();
                assert!(
                    rel_diff(&to_host(&g, &lev, &da), &ha) <= TOL && close(rr_d, rr_h, 1e-12),
                    "residual {ctx}"
                );
                r.line_solve(&s, &f, &mut ha).unwrap();
                g.line_solve(&lev, &df, &mut da).unwrap();
                assert!(
                    rel_diff(&to_host(&g, &lev, &da), &ha) <= TOL_SOLVE,
                    "line_solve {ctx}"
                );

                // Fused CG.
                let (u, p, q) = (rng.field(&s), rng.field(&s), rng.field(&s));
                let (mut hu, mut hp, mut hq) = (u.clone(), p.clone(), q.clone());
                let (mut du, mut dp, mut dq) = (
                    to_gpu(&g, &lev, &u),
                    to_gpu(&g, &lev, &p),
                    to_gpu(&g, &lev, &q),
                );
                let sh = r
                    .cg_spmv(&s, &x, &mut hu, &mut hp, &mut hq, 0.4, 0.6)
                    .unwrap();
                let sd = g
                    .cg_spmv(&lev, &dx, &mut du, &mut dp, &mut dq, 0.4, 0.6)
                    .unwrap();
                assert!(
                    rel_diff(&to_host(&g, &lev, &du), &hu) <= TOL,
                    "spmv u {ctx}"
                );
                assert!(
                    rel_diff(&to_host(&g, &lev, &dp), &hp) <= TOL,
                    "spmv p {ctx}"
                );
                assert!(
                    rel_diff(&to_host(&g, &lev, &dq), &hq) <= TOL && close(sd, sh, 1e-12),
                    "spmv q {ctx}"
                );
                let (mut hr, mut dr) = (f.clone(), to_gpu(&g, &lev, &f));
                let (mut hz, mut dz) = (rng.field(&s), to_gpu(&g, &lev, &y));
                let th = r.cg_tridiag(&s, &hq, &mut hr, &mut hz, 0.8).unwrap();
                let td = g.cg_tridiag(&lev, &dq, &mut dr, &mut dz, 0.8).unwrap();
                assert!(
                    rel_diff(&to_host(&g, &lev, &dr), &hr) <= TOL,
                    "tridiag r {ctx}"
                );
                assert!(
                    rel_diff(&to_host(&g, &lev, &dz), &hz) <= TOL_SOLVE,
                    "tridiag z {ctx}"
                );
                assert!(
                    close(td[0], th[0], 1e-12) && close(td[1], th[1], TOL_SOLVE),
                    "tridiag sums {ctx}"
                );

                // Smoother.
                r.smooth(&s, &f, &x, &mut ha, 2.0 / 3.0).unwrap();
                g.smooth(&lev, &df, &dx, &mut da, 2.0 / 3.0).unwrap();
                assert!(
                    rel_diff(&to_host(&g, &lev, &da), &ha) <= TOL_SOLVE,
                    "smooth {ctx}"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn grid_transfer_kernels_match_the_reference() {
    let (g, r) = (gpu(), ReferenceBackend);
    let mut rng = Rng(0x0dd_5eed);
    for geom in [Geometry::Panel, Geometry::Box] {
        // Fine blocks 74 × 58 on a 148 level; coarse blocks 37 × 29 (odd).
        for fine_block in blocks(148, 74, 58) {
            let fine_block = Block {
                i0: fine_block.i0 & !1,
                j0: fine_block.j0 & !1,
                ..fine_block
            };
            let (fs, cs) = (
                level(geom, fine_block, 9),
                level(geom, fine_block.coarsen(), 9),
            );
            let (fl, cl) = (g.prepare_level(&fs).unwrap(), g.prepare_level(&cs).unwrap());
            let rf = rng.field(&fs);
            let (mut hf, mut hu) = (rng.field(&cs), rng.field(&cs));
            let (mut df, mut du) = (to_gpu(&g, &cl, &hf), to_gpu(&g, &cl, &hu));
            r.restrict_smooth(&fs, &cs, &rf, &mut hf, &mut hu, 0.6, 1.0)
                .unwrap();
            g.restrict_smooth(&fl, &cl, &to_gpu(&g, &fl, &rf), &mut df, &mut du, 0.6, 1.0)
                .unwrap();
            assert!(
                rel_diff(&to_host(&g, &cl, &df), &hf) <= TOL,
                "restrict f {fine_block:?}"
            );
            assert!(
                rel_diff(&to_host(&g, &cl, &du), &hu) <= TOL_SOLVE,
                "restrict u {fine_block:?}"
            );

            let (uc, uf) = (rng.field(&cs), rng.field(&fs));
            let (mut hp, mut dp) = (uf.clone(), to_gpu(&g, &fl, &uf));
            r.prolongate(&cs, &fs, &uc, &mut hp).unwrap();
            g.prolongate(&cl, &fl, &to_gpu(&g, &cl, &uc), &mut dp)
                .unwrap();
            assert!(
                rel_diff(&to_host(&g, &fl, &dp), &hp) <= TOL,
                "prolongate {fine_block:?}"
            );
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn faces_round_trip() {
    let g = gpu();
    let mut rng = Rng(77);
    let s = level(
        Geometry::Panel,
        Block {
            n: 64,
            i0: 5,
            j0: 9,
            nx: 21,
            ny: 13,
        },
        11,
    );
    let lev = g.prepare_level(&s).unwrap();
    let x = rng.field(&s);
    let dx = to_gpu(&g, &lev, &x);
    for side in Side::ALL {
        let mut buf = vec![0.0; strata::backend::face_len(&s, side)];
        let mut face = g.alloc_face(buf.len()).unwrap();
        g.pack_face(&lev, &dx, side, &mut face).unwrap();
        g.face_to_host(&face, &mut buf).unwrap();
        let mut want = vec![0.0; buf.len()];
        x.pack_face(side, &mut want);
        assert_eq!(buf, want, "{side:?}");
    }
}

/// cg, mg and mg-cg on the GPU give the CPU's iteration counts (±1) and its solution to 1e-10.
fn solvers_agree(n: usize) {
    let p = ProblemParams {
        n,
        nz: 128,
        ..Default::default()
    };
    let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(n));
    let (g, c) = (gpu(), CpuBackend::new(None).unwrap());
    for kind in [SolverKind::Cg, SolverKind::Mg, SolverKind::MgCg] {
        let cfg = SolverConfig::new(kind);
        let a = strata::solve(&g, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
        let b = strata::solve(&c, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
        let scale = b.u.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff =
            a.u.iter()
                .zip(&b.u)
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        println!(
            "n = {n} {}: gpu {} its, cpu {} its, max rel diff {:.2e}, gpu {:.4} s, cpu {:.4} s",
            kind.name(),
            a.info.iterations,
            b.info.iterations,
            diff / scale,
            a.info.seconds,
            b.info.seconds
        );
        assert!(a.info.reason.converged(), "{kind:?}: {:?}", a.info.reason);
        assert!(
            a.info.iterations.abs_diff(b.info.iterations) <= 1,
            "{kind:?}"
        );
        assert!(
            diff <= 1e-10 * scale,
            "{kind:?}: solutions differ by {:.2e} relative",
            diff / scale
        );
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn solvers_agree_with_the_cpu_at_128() {
    solvers_agree(128);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn solvers_agree_with_the_cpu_at_512() {
    solvers_agree(512);
}
