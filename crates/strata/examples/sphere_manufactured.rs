//! The sphere's manufactured solution (docs/MODEL.md §16): u* = Y₂(q) cos(π(r − 1)/H), Y₂ a
//! spherical harmonic of degree 2, with ω fixed and nz = n/2 as in §12.3, solved to 1e-11 by
//! mg-cg. Prints the max and RMS errors for n = 8 … 128 and how far (in cells) the largest error
//! lies from a panel edge: `cargo run --release --example sphere_manufactured -p strata`.

use strata::backend::cpu::CpuBackend;
use strata::grid::sphere;
use strata::problem::{
    build_rhs_tiles, manufactured_error, sphere_solution, Geometry, ProblemParams, RhsKind,
    VerticalGrid,
};
use strata::solver::{SolverConfig, SolverKind};

fn main() -> strata::Result<()> {
    let backend = CpuBackend::new(None)?;
    println!("    n   its   max error   rms error   cells from an edge (largest error)");
    for n in [8usize, 16, 32, 64, 128] {
        let p = ProblemParams {
            geometry: Geometry::Sphere,
            n,
            nz: n / 2,
            height: 0.1,
            omega: Some(0.1f64.sqrt()),
            ..Default::default()
        };
        let tiles = sphere::tiles(n, 1);
        let rhs = build_rhs_tiles(&p, RhsKind::Manufactured, 0, &tiles);
        let cfg = SolverConfig::paper(SolverKind::MgCg)
            .with_levels(3)
            .with_rtol(1e-11)
            .with_max_it(500);
        let sol = strata::solve(&backend, &p, &cfg, &rhs, &mut |_, _| {})?;
        let (emax, erms) = manufactured_error(&p, &sol.u);
        // Where the largest error is.
        let vert = VerticalGrid::new(&p);
        let (mut worst, mut at) = (0.0f64, 0);
        for (c, col) in sol.u.chunks(p.nz).enumerate() {
            let (i, j, panel) = (c % n, (c / n) % n, c / (n * n));
            let q = sphere::cell_centre(panel, i, j, n);
            for (k, v) in col.iter().enumerate() {
                let e = (v - sphere_solution(&p, q, vert.centres[k])).abs();
                if e > worst {
                    (worst, at) = (e, c);
                }
            }
        }
        let (i, j) = (at % n, (at / n) % n);
        let from_edge = i.min(j).min(n - 1 - i).min(n - 1 - j);
        println!(
            "{n:5} {:5} {emax:11.3e} {erms:11.3e}   {from_edge}",
            sol.info.iterations
        );
    }
    Ok(())
}
