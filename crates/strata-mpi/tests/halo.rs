//! Halo exchange on rank grids (non-square among them) with hashed data. Run by `cargo test`, this binary
//! launches itself under `mpirun` for several grids; as an MPI rank it fills its block of two
//! levels with values that are a hash of the global cell, fills its halo with other values,
//! exchanges, and checks every halo cell against the neighbour's value (and that the halo across
//! the physical boundary is left alone); then again with the corners (`exchange_with_corners`),
//! each filled from the diagonal rank where there is one.

use mpi::traits::*;
use std::process::Command;
use std::sync::Arc;
use strata::backend::cpu::CpuBackend;
use strata::backend::Side;
use strata::comm::Comm;
use strata::field::HostField;
use strata::grid::Block;
use strata::grid::{Decomposition, RankGrid};
use strata::problem::{ProblemParams, VerticalGrid};
use strata::stencil::LevelStencil;
use strata_mpi::MpiComm;

const GRIDS: [&str; 6] = ["2x1", "1x2", "1x3", "3x2", "2x3", "2x2"];

fn main() {
    if std::env::var("OMPI_COMM_WORLD_SIZE").is_ok() {
        rank_main();
    } else {
        launcher();
    }
}

fn launcher() {
    let exe = std::env::current_exe().expect("own path");
    let (mut passed, mut failed) = (0, 0);
    for grid in GRIDS {
        let p: usize = grid
            .split('x')
            .map(|v| v.parse::<usize>().unwrap())
            .product();
        let out = Command::new("mpirun")
            .args(["--oversubscribe", "--timeout", "120", "-n", &p.to_string()])
            .arg(&exe)
            .arg(grid)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output();
        match out {
            Ok(o) if o.status.success() => {
                println!("test halo_exchange_{grid} ... ok");
                passed += 1;
            }
            Ok(o) => {
                println!(
                    "test halo_exchange_{grid} ... FAILED\n{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                );
                failed += 1;
            }
            Err(e) => {
                println!("test halo_exchange_{grid} ... FAILED: cannot run mpirun: {e}");
                failed += 1;
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    std::process::exit(i32::from(failed > 0));
}

/// A hash of the global cell, in [−1, 1).
fn value(i: usize, j: usize, k: usize) -> f64 {
    let mut z = (i as u64) << 42 ^ (j as u64) << 21 ^ k as u64;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z >> 11) as f64) / (1u64 << 52) as f64 - 1.0
}

fn rank_main() {
    let universe = mpi::initialize().expect("MPI");
    let world = universe.world();
    let arg = std::env::args().nth(1).expect("grid argument");
    let grid = RankGrid::parse(&arg).expect("PXxPY");
    let rank = world.rank() as usize;
    let comm = MpiComm::new(world.duplicate(), grid).expect("grid matches the job");
    let backend = CpuBackend::new(Some(1)).unwrap();
    let nz = 5;
    // 44 = 4 · 11: the coarse level of 22 cells splits unevenly over 3 ranks.
    let dec = Decomposition::new(44, 2, grid).unwrap();
    let fine = dec.fine_block(rank);
    let mut errors = 0;
    for block in [fine, fine.coarsen()] {
        let p = ProblemParams {
            n: block.n,
            nz,
            ..Default::default()
        };
        let s = LevelStencil::new(&p, block, Arc::new(VerticalGrid::new(&p)));
        let mut x = HostField::zeros(block.nx, block.ny, nz);
        // Interior: the global hash; halo (and corners): a value no neighbour sends.
        for jh in 0..block.ny + 2 {
            for ih in 0..block.nx + 2 {
                let o = x.offset(ih, jh);
                let interior = (1..=block.nx).contains(&ih) && (1..=block.ny).contains(&jh);
                for k in 0..nz {
                    x.data[o + k] = if interior {
                        value(block.i0 + ih - 1, block.j0 + jh - 1, k)
                    } else {
                        -7.0
                    };
                }
            }
        }
        // The faces alone (corners left as they were), then with the corners.
        for corners in [false, true] {
            let mut x = strata::backend::cpu::CpuField::from(x.clone());
            if corners {
                comm.exchange_with_corners(&backend, &s, &mut x).unwrap();
            } else {
                comm.exchange(&backend, &s, &mut x).unwrap();
            }
            errors += check(x.as_double(), &block, grid, rank, nz);
            errors += check_corners(x.as_double(), &block, grid, rank, nz, corners);
        }
    }
    let mut total = [errors as f64];
    comm.sum(&mut total).unwrap();
    if rank == 0 && total[0] > 0.0 {
        eprintln!("{} wrong halo values", total[0]);
    }
    drop(universe);
    std::process::exit(i32::from(total[0] > 0.0));
}

/// Counts wrong halo values of one block.
fn check(x: &HostField, b: &Block, grid: RankGrid, rank: usize, nz: usize) -> usize {
    let mut wrong = 0;
    for side in Side::ALL {
        let count = match side {
            Side::West | Side::East => b.ny,
            _ => b.nx,
        };
        let has = grid.neighbour(rank, side).is_some();
        for t in 0..count {
            // Halo-inclusive local column and the global cell it mirrors.
            let ((ih, jh), (gi, gj)) = match side {
                Side::West => ((0, t + 1), (b.i0.wrapping_sub(1), b.j0 + t)),
                Side::East => ((b.nx + 1, t + 1), (b.i0 + b.nx, b.j0 + t)),
                Side::South => ((t + 1, 0), (b.i0 + t, b.j0.wrapping_sub(1))),
                Side::North => ((t + 1, b.ny + 1), (b.i0 + t, b.j0 + b.ny)),
            };
            let o = x.offset(ih, jh);
            for k in 0..nz {
                let want = if has { value(gi, gj, k) } else { -7.0 };
                if x.data[o + k] != want {
                    wrong += 1;
                }
            }
        }
    }
    if wrong > 0 {
        eprintln!("rank {rank}: {wrong} wrong halo values in {b:?}");
    }
    wrong
}

/// Counts wrong halo corners of one block: the diagonal rank's corner cell where there is one
/// and `corners` was asked for, the value set before otherwise.
fn check_corners(
    x: &HostField,
    b: &Block,
    grid: RankGrid,
    rank: usize,
    nz: usize,
    corners: bool,
) -> usize {
    let mut wrong = 0;
    for c in 0..4 {
        let ((ih, jh), _) = strata::grid::corner_cells(b.nx, b.ny, c);
        // The global cell across the corner (the halo cell's own global position).
        let (gi, gj) = ((b.i0 + ih).wrapping_sub(1), (b.j0 + jh).wrapping_sub(1));
        let filled = corners && grid.diagonal(rank, c).is_some();
        let o = x.offset(ih, jh);
        for k in 0..nz {
            let want = if filled { value(gi, gj, k) } else { -7.0 };
            if x.data[o + k] != want {
                wrong += 1;
            }
        }
    }
    if wrong > 0 {
        eprintln!("rank {rank}: {wrong} wrong corner values in {b:?} (corners asked: {corners})");
    }
    wrong
}
