//! Where the set-up of a persistent solver goes on the host: the stencils of every level, per
//! phase, without and with coefficient fields. `cargo run --release --example setup_timing [n]
//! [nz]` (default 2048 128).

use std::time::Instant;
use strata::grid::Block;
use strata::problem::ProblemParams;
use strata::stencil::build_levels_with;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (n, nz) = (*args.first().unwrap_or(&2048), *args.get(1).unwrap_or(&128));
    let p = ProblemParams {
        n,
        nz,
        ..Default::default()
    };
    let t = Instant::now();
    let levels = build_levels_with(&p, Block::whole(n), 5, Default::default())?;
    println!(
        "{n}x{n}x{nz}: stencils of {} levels in {:.3} s",
        levels.len(),
        t.elapsed().as_secs_f64()
    );
    // Coefficient fields (smooth, contrast 10): made, then every level's face fields.
    let t = Instant::now();
    let coeffs = strata::problem::Coefficients::smooth(n, nz, 10.0);
    let made = t.elapsed().as_secs_f64();
    let p = ProblemParams {
        coefficients: Some(std::sync::Arc::new(coeffs)),
        ..p
    };
    let t = Instant::now();
    p.validate()?;
    let checked = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let levels = build_levels_with(&p, Block::whole(n), 5, Default::default())?;
    println!(
        "  coefficient fields: made {made:.3} s, checked {checked:.3} s, {} levels of face fields {:.3} s",
        levels.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
