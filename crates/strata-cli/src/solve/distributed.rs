//! `strata solve` under mpirun: each rank solves its block of the decomposed problem; rank 0
//! gathers the solution and prints the report.

use super::args::{rank_grid, rhs_kind, RhsArg, Setup, SolveArgs};
use super::output::{print_header, progress, report};
use crate::backend_choice::{halo_label, ranks};
use crate::job::Job;
use crate::CliResult;
use std::process::ExitCode;
use strata::backend::tiled::Tiled;
use strata::backend::Backend;
use strata::comm::Comm;
use strata::grid::{sphere, Block, Decomposition, RankGrid};
use strata::io::{read_panels, read_rhs};
use strata::names::HaloPath;
use strata::problem::{build_rhs, build_rhs_tiles, ProblemParams};
use strata::{solve_block, solve_tiles};
use strata_mpi::mpi::datatype::PartitionMut;
use strata_mpi::mpi::traits::*;
use strata_session::{BlockShare, OnBackend, RanksTask, TileShare};

/// The distributed solve of `strata solve`: `strata-session` chooses the halo path and this
/// rank's share, then this rank solves it.
pub fn solve<B: OnBackend>(
    a: &SolveArgs,
    s: &Setup,
    backend: Box<B>,
    job: &Job,
) -> CliResult<ExitCode> {
    let grid = match a.ranks.as_deref() {
        Some(r) if s.p.geometry.closed() => {
            return Err(format!("--ranks {r}: the sphere's ranks take whole panels or equal blocks of every panel; leave --ranks out").into());
        }
        Some(_) => Some(rank_grid(a.ranks.as_deref(), job.size())?),
        None => None,
    };
    struct Task<'a> {
        a: &'a SolveArgs,
        s: &'a Setup,
        job: &'a Job,
    }
    impl<B: OnBackend> RanksTask<B> for Task<'_> {
        type Output = CliResult<ExitCode>;
        fn block<C: Comm<B> + 'static>(
            self,
            backend: Box<B>,
            comm: C,
            share: BlockShare,
            halo: HaloPath,
        ) -> strata::Result<Self::Output> {
            let halo = halo_label::<B>(halo);
            Ok(solve_with(
                self.a,
                self.s,
                backend.as_ref(),
                self.job,
                &comm,
                share.grid,
                &halo,
            ))
        }
        fn tiles<C>(
            self,
            backend: Box<B>,
            comm: C,
            share: TileShare,
            halo: HaloPath,
        ) -> strata::Result<Self::Output>
        where
            C: Comm<Tiled<Box<B>>> + for<'c> Comm<Tiled<&'c B>> + 'static,
        {
            let halo = halo_label::<B>(halo);
            let tiles = (share.tiles.as_slice(), share.k);
            let (a, s, job) = (self.a, self.s, self.job);
            Ok(solve_sphere_with(
                a,
                s,
                backend.as_ref(),
                job,
                tiles,
                &comm,
                &halo,
            ))
        }
    }
    let place = ranks(job, a.halo, grid)?;
    strata_session::with_ranks(backend, place, &s.p, &s.cfg, Task { a, s, job })?
}

/// The sphere's solve of this rank's fine `tiles` (`k × k` blocks per panel) over `comm`.
fn solve_sphere_with<B: Backend, C>(
    a: &SolveArgs,
    s: &Setup,
    backend: &B,
    job: &Job,
    (tiles, k): (&[Block], usize),
    comm: &C,
    halo: &str,
) -> CliResult<ExitCode>
where
    C: for<'c> Comm<Tiled<&'c B>>,
{
    let world = job.world().ok_or("MPI is not initialised")?;
    let (size, levels) = (job.size(), s.cfg.num_levels());
    let rhs = match &a.rhs_file {
        Some(path) => {
            let p = &s.p;
            let whole = read_panels(path, &a.rhs_var, p.panels(), p.n, p.nz)?;
            tiles.iter().flat_map(|t| t.cut(&whole, p.nz)).collect()
        }
        None => build_rhs_tiles(&s.p, rhs_kind(a.rhs), a.seed, tiles),
    };
    let header = format!(
        "{} x {size} ranks ({} tiles of {}x{}), halos by {halo}",
        backend.name(),
        6 * k * k,
        tiles[0].nx,
        tiles[0].ny
    );
    let all: Vec<Vec<Block>> = (0..size)
        .map(|r| sphere::rank_tiles(s.p.n, levels, size, r))
        .collect::<strata::Result<_>>()?;
    let tiled = Tiled::new(backend);
    solve_and_report(
        (a, s, job),
        &header,
        &format!("{} on {size} ranks", backend.name()),
        &rhs,
        |monitor| solve_tiles(&tiled, comm, &s.p, tiles, &s.cfg, &rhs, monitor),
        |local| gather_tiles(&world, &all, &s.p, local),
    )
}

/// Gathers every rank's tiles onto rank 0 as whole panels, `[panel][j][i][k]`.
fn gather_tiles(
    world: &strata_mpi::mpi::topology::SimpleCommunicator,
    all: &[Vec<Block>],
    p: &ProblemParams,
    local: &[f64],
) -> CliResult<Option<Vec<f64>>> {
    let nz = p.nz;
    let counts: Vec<usize> = all
        .iter()
        .map(|t| t.iter().map(|b| b.nx * b.ny * nz).sum())
        .collect();
    let Some(packed) = gather_counts(world, &counts, p, local)? else {
        return Ok(None);
    };
    let n = p.n;
    let mut global = vec![0.0; p.panels() * n * n * nz];
    let mut src = packed.chunks(nz);
    for b in all.iter().flatten() {
        let panel = b.panel.expect("a tile of the sphere");
        for j in b.j0..b.j0 + b.ny {
            for i in b.i0..b.i0 + b.nx {
                let o = ((panel * n + j) * n + i) * nz;
                global[o..o + nz].copy_from_slice(src.next().expect("every rank's values"));
            }
        }
    }
    Ok(Some(global))
}

/// Gathers `local` (`counts[r]` values from rank r) onto rank 0, in rank order.
fn gather_counts(
    world: &strata_mpi::mpi::topology::SimpleCommunicator,
    counts: &[usize],
    p: &ProblemParams,
    local: &[f64],
) -> CliResult<Option<Vec<f64>>> {
    // MPI counts and displacements are 32-bit: refuse (on every rank alike) what they cannot say.
    if p.unknowns() > i32::MAX as u64 {
        return Err(format!(
            "gathering {} values for the output exceeds MPI's 32-bit counts; run without --output",
            p.unknowns()
        )
        .into());
    }
    let root = world.process_at_rank(0);
    if world.rank() != 0 {
        root.gather_varcount_into(local);
        return Ok(None);
    }
    let counts: Vec<i32> = counts.iter().map(|&c| c as i32).collect();
    let displs = strata_mpi::displacements(&counts);
    let total: usize = counts.iter().map(|&c| c as usize).sum();
    let mut packed = vec![0.0; total];
    {
        let mut part = PartitionMut::new(&mut packed[..], counts, &displs[..]);
        root.gather_varcount_into_root(local, &mut part);
    }
    Ok(Some(packed))
}

/// The distributed solve over a given communicator.
fn solve_with<B: Backend, C: Comm<B>>(
    a: &SolveArgs,
    s: &Setup,
    backend: &B,
    job: &Job,
    comm: &C,
    grid: RankGrid,
    halo: &str,
) -> CliResult<ExitCode> {
    let world = job.world().ok_or("MPI is not initialised")?;
    let dec = s.cfg.decompose(&s.p, grid)?;
    let block = dec.fine_block(job.rank());
    strata::check_block_memory(backend, &s.p, &s.cfg, &block)?;
    // Each rank keeps and coarsens its own block of the coefficient fields (read as that block,
    // `solve::Task`), the cells beside it exchanged with its neighbours, as a model's ranks give
    // them (docs/MODEL.md §15.7).
    let p = &s.p;
    let rhs = match &a.rhs_file {
        Some(path) => block.cut(&read_rhs(path, &a.rhs_var, s.p.n, s.p.nz)?, s.p.nz),
        None => build_rhs(&s.p, rhs_kind(a.rhs), a.seed, &block),
    };
    let header = format!(
        "{} x {} ranks ({}x{}), halos by {halo}",
        backend.name(),
        grid.size(),
        grid.px,
        grid.py
    );
    solve_and_report(
        (a, s, job),
        &header,
        &format!("{} on {} ranks", backend.name(), grid.size()),
        &rhs,
        |monitor| solve_block(backend, comm, p, block, &s.cfg, &rhs, monitor),
        |local| gather(&world, &dec, &s.p, local),
    )
}

/// What every distributed solve shares: the header and progress bar on rank 0, the solve
/// (`solve`, given the progress monitor), the solution and right-hand side gathered onto rank 0
/// where they are needed (by `gather`: the output file, the manufactured error), the report.
fn solve_and_report(
    (a, s, job): (&SolveArgs, &Setup, &Job),
    header: &str,
    name: &str,
    rhs: &[f64],
    solve: impl FnOnce(&mut dyn FnMut(usize, f64)) -> strata::Result<strata::Solution>,
    gather: impl Fn(&[f64]) -> CliResult<Option<Vec<f64>>>,
) -> CliResult<ExitCode> {
    let root = job.is_root();
    if root {
        print_header(a, s, header);
    }
    let bar = if root {
        progress(&s.cfg.stopping, a.quiet)
    } else {
        None
    };
    let mut monitor = |it: usize, rel: f64| {
        if let Some(b) = &bar {
            b.set_position(it as u64);
            b.set_message(format!("rel. residual {rel:.3e}"));
        }
    };
    let mut sol = solve(&mut monitor)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    // The whole solution is needed on rank 0 only for the output file and the manufactured error.
    let needed =
        a.output.is_some() || (matches!(a.rhs, RhsArg::Manufactured) && a.rhs_file.is_none());
    let (u, f) = if needed {
        (gather(&sol.u)?, gather(rhs)?)
    } else {
        (Some(Vec::new()), Some(Vec::new()))
    };
    if !root {
        return Ok(ExitCode::SUCCESS);
    }
    sol.u = u.expect("rank 0 gathers");
    report(a, s, name, &sol, &f.expect("rank 0 gathers"))
}

/// Gathers every rank's block onto rank 0 as the whole-grid array.
fn gather(
    world: &strata_mpi::mpi::topology::SimpleCommunicator,
    dec: &Decomposition,
    p: &ProblemParams,
    local: &[f64],
) -> CliResult<Option<Vec<f64>>> {
    let size = world.size() as usize;
    let blocks: Vec<Block> = (0..size).map(|r| dec.fine_block(r)).collect();
    let counts: Vec<usize> = blocks.iter().map(|b| b.nx * b.ny * p.nz).collect();
    let Some(packed) = gather_counts(world, &counts, p, local)? else {
        return Ok(None);
    };
    let displs: Vec<usize> = counts
        .iter()
        .scan(0, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect();
    let mut global = vec![0.0; p.n * p.n * p.nz];
    let nz = p.nz;
    for (b, &d) in blocks.iter().zip(&displs) {
        let mut src = d;
        for j in 0..b.ny {
            for i in 0..b.nx {
                let o = ((b.j0 + j) * p.n + b.i0 + i) * nz;
                global[o..o + nz].copy_from_slice(&packed[src..src + nz]);
                src += nz;
            }
        }
    }
    Ok(Some(global))
}
