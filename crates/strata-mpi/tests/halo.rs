//! Halo exchange on rank grids (non-square among them) with hashed data. Run by `cargo test`,
//! this binary launches itself under `mpirun` for several grids; as an MPI rank it fills its
//! block of two levels with values that are a hash of the global cell, fills its halo with
//! other values, exchanges, and checks every halo cell against the neighbour's value (and that
//! the halo across the physical boundary is left alone); then again with the corners
//! (`exchange_with_corners`), each filled from the diagonal rank where there is one. CPU ranks
//! always; built with the `nccl` feature and where a GPU is found, CUDA ranks with host-staged
//! MPI halos (sharing the GPUs) and, with a GPU per rank, NCCL.

mod common;

use mpi::traits::*;
use std::sync::Arc;
use strata::backend::cpu::CpuBackend;
use strata::backend::Backend;
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
    common::rank_or_launch(rank_main, launcher);
}

/// Runs this binary under mpirun on `grid` with the communicator `kind`; whether it passed.
fn run(grid: &str, kind: &str) -> bool {
    let ranks = RankGrid::parse(grid).expect("PXxPY").size();
    let name = if kind == "cpu" {
        format!("halo_exchange_{grid}")
    } else {
        format!("halo_exchange_{kind}_{grid}")
    };
    common::mpirun_self(&name, ranks, &[grid, kind])
}

fn launcher() {
    #[cfg_attr(not(feature = "nccl"), allow(unused_mut))]
    let mut results: Vec<bool> = GRIDS.iter().map(|g| run(g, "cpu")).collect();
    // GPU ranks, where there is a GPU: host-staged MPI halos (ranks may share a GPU) and NCCL
    // (a GPU per rank).
    #[cfg(feature = "nccl")]
    {
        let gpus = strata_cuda::device_count().unwrap_or(0);
        for grid in ["2x1", "2x2", "3x2"] {
            let p: usize = grid
                .split('x')
                .map(|v| v.parse::<usize>().unwrap())
                .product();
            if gpus == 0 {
                println!("test halo_exchange_cuda_{grid} ... skipped (no CUDA device)");
                continue;
            }
            results.push(run(grid, "cuda"));
            if gpus >= p && strata_mpi::nccl_available() {
                results.push(run(grid, "nccl"));
            } else {
                println!("test halo_exchange_nccl_{grid} ... skipped (needs {p} GPUs and NCCL, {gpus} GPUs here)");
            }
        }
    }
    common::finish(&results);
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
    let (grid, kind) = common::rank_args();
    let rank = world.rank() as usize;
    let errors = match kind.as_str() {
        "cpu" => {
            let comm = MpiComm::new(world.duplicate(), grid).expect("grid matches the job");
            rank_checks(&CpuBackend::new(Some(1)).unwrap(), &comm, grid, rank)
        }
        #[cfg(feature = "nccl")]
        "cuda" | "nccl" => {
            let gpus = strata_cuda::device_count().expect("a CUDA device");
            let b = strata_cuda::CudaBackend::new(rank % gpus).expect("a CUDA device");
            if kind == "nccl" {
                let comm = strata_mpi::NcclComm::new(world.duplicate(), grid, &b).expect("NCCL");
                rank_checks(&b, &comm, grid, rank)
            } else {
                let comm = MpiComm::new(world.duplicate(), grid).expect("grid matches the job");
                rank_checks(&b, &comm, grid, rank)
            }
        }
        other => panic!("no communicator {other}"),
    };
    let mut total = [errors as f64];
    mpi::collective::CommunicatorCollectives::all_reduce_into(
        &world,
        &[errors as f64][..],
        &mut total[..],
        mpi::collective::SystemOperation::sum(),
    );
    if rank == 0 && total[0] > 0.0 {
        eprintln!("{} wrong halo values", total[0]);
    }
    drop(universe);
    std::process::exit(i32::from(total[0] > 0.0));
}

/// This rank's checks on backend `b` through `comm`: two levels, faces alone and with corners;
/// the count of wrong values.
fn rank_checks<B: Backend, C: Comm<B>>(b: &B, comm: &C, grid: RankGrid, rank: usize) -> usize {
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
            let y = exchanged(b, comm, &s, &x, corners);
            errors += check(&y, &block, grid, rank, nz);
            errors += check_corners(&y, &block, grid, rank, nz, corners);
        }
    }
    errors
}

/// The columns of the halo ring of an `nx × ny` block, halo-inclusive (faces and corners).
fn ring(nx: usize, ny: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..nx + 2)
        .flat_map(move |i| [(i, 0), (i, ny + 1)])
        .chain((1..ny + 1).flat_map(move |j| [(0, j), (nx + 1, j)]))
}

/// `x` on the backend (interior by `upload`, every halo column by `unpack_column`), exchanged
/// through `comm` (with the corners if `corners`), and back on the host.
fn exchanged<B: Backend, C: Comm<B>>(
    b: &B,
    comm: &C,
    s: &LevelStencil,
    x: &HostField,
    corners: bool,
) -> HostField {
    let op = b.prepare_level(s).unwrap();
    comm.prepare(b, &op).unwrap();
    let mut d = b.alloc(&op).unwrap();
    let mut interior = vec![0.0; s.cells()];
    x.get_interior(&mut interior);
    b.upload(&op, &interior, &mut d).unwrap();
    let mut buf = b.alloc_face(s.nz).unwrap();
    let mut column = vec![0.0; s.nz];
    for at in ring(s.nx(), s.ny()) {
        x.pack_column(at, &mut column);
        b.face_from_host(&column, &mut buf).unwrap();
        b.unpack_column(&op, &mut d, at, &buf).unwrap();
    }
    if corners {
        comm.exchange_with_corners(b, &op, &mut d).unwrap();
    } else {
        comm.exchange(b, &op, &mut d).unwrap();
    }
    let mut y = HostField::zeros(s.nx(), s.ny(), s.nz);
    b.download(&op, &d, &mut interior).unwrap();
    y.set_interior(&interior);
    for at in ring(s.nx(), s.ny()) {
        b.pack_column(&op, &d, at, &mut buf).unwrap();
        b.face_to_host(&buf, &mut column).unwrap();
        y.unpack_column(at, &column);
    }
    y
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
