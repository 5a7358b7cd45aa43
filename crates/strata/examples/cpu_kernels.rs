//! The CPU backend's fine-level stencil kernels timed on their own, each against the bytes per
//! cell its traffic model moves: where a kernel falls short of the copy bandwidth for want of
//! something other than bandwidth. `cargo run --release --example cpu_kernels [n] [nz]
//! [threads]` (default 128 128 2); prints the best of 20 calls after one warm-up.

use std::time::Instant;
use strata::backend::cpu::CpuBackend;
use strata::backend::{Fields, StencilKernels, TransferKernels};
use strata::grid::Block;
use strata::perf::Probes;
use strata::precision::Storage;
use strata::problem::ProblemParams;
use strata::stencil::build_levels_with;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let arg = |i: usize, default: usize| *args.get(i).unwrap_or(&default);
    let (n, nz, threads) = (arg(0, 128), arg(1, 128), arg(2, 2));
    let p = ProblemParams {
        n,
        nz,
        ..Default::default()
    };
    let fine = build_levels_with(&p, Block::whole(n), 1, Default::default())?.remove(0);
    let b = CpuBackend::new(Some(threads))?;
    let op = b.prepare_level(&fine)?;
    let op32 = b.prepare_level(&fine.with_storage(Storage::F32))?;
    let (f, mut u, mut r) = (b.alloc(&op)?, b.alloc(&op)?, b.alloc(&op)?);
    let (mut p1, mut q, mut r32) = (b.alloc(&op)?, b.alloc(&op)?, b.alloc(&op32)?);
    let values: Vec<f64> = (0..n * n * nz).map(|i| (i as f64 * 0.37).sin()).collect();
    b.upload(&op, &values, &mut u)?;
    let copy = b.copy_bandwidth(64 << 20, 10)? / 1e9;
    println!("{n}x{n}x{nz}, {}, copy {copy:.1} GB/s", b.name());
    let cells = (n * n * nz) as f64;
    let time = |name: &str, bytes: f64, call: &mut dyn FnMut() -> strata::Result<()>| {
        let mut best = f64::MAX;
        for rep in 0..21 {
            let t = Instant::now();
            call()?;
            if rep > 0 {
                best = best.min(t.elapsed().as_secs_f64());
            }
        }
        let gbs = bytes * cells / best / 1e9;
        println!(
            "{name:14} {bytes:>3} B/cell  {:.3} ms  {gbs:.1} GB/s  {:.0} % of copy",
            best * 1e3,
            100.0 * gbs / copy
        );
        Ok::<(), strata::StrataError>(())
    };
    time("apply", 16.0, &mut || b.apply(&op, &u, &mut r))?;
    time("residual", 24.0, &mut || {
        b.residual(&op, &f, &u, &mut r).map(drop)
    })?;
    time("residual_to", 20.0, &mut || {
        b.residual_to(&op, &f, &u, &op32, &mut r32).map(drop)
    })?;
    time("residual_norm", 16.0, &mut || {
        b.residual_norm(&op, &f, &u, &mut r).map(drop)
    })?;
    time("cg_spmv", 56.0, &mut || {
        b.cg_spmv(&op, &u, &mut r, &mut p1, &mut q, 0.1, 0.2)
            .map(drop)
    })?;
    Ok(())
}
