//! A model's view of the persistent solver on a GPU: creation time, then repeated solves with the
//! right-hand side already in device memory, each timed from outside (wall clock) against the
//! solver's own solve time; then new coefficient fields, from host arrays and from device arrays.
//! `persistent_timing [n] [nz] [solver] [steps]` (default 2048 128 mg 5).

use cudarc::driver::DevicePtr;
use std::time::Instant;
use strata::backend::prelude::*;
use strata::grid::Block;
use strata::problem::{build_rhs, ProblemParams, RhsKind};
use strata::solver::{SolverConfig, SolverKind};
use strata::PersistentSolver;
use strata_cuda::{CudaBackend, DeviceArray, DeviceSolve, Order};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().map_or(Ok(2048), |a| a.parse())?;
    let nz: usize = args.get(1).map_or(Ok(128), |a| a.parse())?;
    let kind = match args.get(2).map(String::as_str).unwrap_or("mg") {
        "cg" => SolverKind::Cg,
        "mg-cg" => SolverKind::MgCg,
        "gcr" => SolverKind::Gcr,
        "bicgstab" => SolverKind::BiCgStab,
        _ => SolverKind::Mg,
    };
    let steps: usize = args.get(3).map_or(Ok(5), |a| a.parse())?;
    let p = ProblemParams {
        n,
        nz,
        ..Default::default()
    };
    let t = Instant::now();
    let backend = CudaBackend::new(0)?;
    let backend_s = t.elapsed().as_secs_f64();
    let cfg = SolverConfig::paper(kind);
    let t = Instant::now();
    backend.load_kernels(nz)?;
    let kernels_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut solver = PersistentSolver::new(&backend, &p, &cfg)?;
    let create_s = t.elapsed().as_secs_f64();
    let phases: Vec<String> = solver
        .setup_phases()
        .iter()
        .map(|(name, s)| format!("{name} {s:.3} s"))
        .collect();
    // What allocating fields costs on this device: four more fine-level fields (zeroed).
    let t = Instant::now();
    let extra = (0..4)
        .map(|_| backend.alloc(solver.fields_mut().0))
        .collect::<Result<Vec<_>, _>>()?;
    backend.synchronize()?;
    let alloc_s = t.elapsed().as_secs_f64();
    let gb = 4.0 * backend.field_bytes(n, n, nz) as f64 / 1e9;
    drop(extra);
    println!("  allocating 4 fine fields ({gb:.1} GB, zeroed): {alloc_s:.3} s");
    let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(n));
    let mut u = vec![0.0; solver.len()];
    let t = Instant::now();
    let first = solver.solve(&backend, &rhs, &mut u, false)?;
    let first_s = t.elapsed().as_secs_f64();
    println!(
        "{} {n}x{n}x{nz}: backend {backend_s:.3} s (context), kernels {kernels_s:.3} s (NVRTC or \
         the disk cache, module load), solver creation {create_s:.3} s ({}), first solve with host \
         arrays {first_s:.4} s ({} its, solver {:.4} s)",
        kind.name(),
        phases.join(", "),
        first.iterations,
        first.seconds
    );
    // Later time steps: the right-hand side is already on the device (uploaded once here, as a
    // model on the GPU would have it), the solution stays there.
    let (op, f, _) = solver.fields_mut();
    backend.upload(op, &rhs, f)?;
    println!("  step   wall s   solver s   wall/solver");
    for step in 0..steps {
        {
            let (op, _, u) = solver.fields_mut();
            backend.fill(op, u, 0.0)?;
        }
        backend.synchronize()?;
        let t = Instant::now();
        let info = solver.solve_resident(&backend)?;
        backend.synchronize()?;
        let wall = t.elapsed().as_secs_f64();
        println!(
            "  {step:4} {wall:9.4} {:10.4} {:12.3}",
            info.seconds,
            wall / info.seconds
        );
    }
    // A model's state changed: new 3D coefficient fields (smooth, contrast 10), prepared on the
    // host and copied to the device; then a solve with them.
    let t = Instant::now();
    let coeffs = strata::problem::Coefficients::smooth(n, nz, 10.0);
    let make_s = t.elapsed().as_secs_f64();
    let coeffs_kept = coeffs.clone();
    let t = Instant::now();
    solver.update_coefficients(&backend, Some(coeffs))?;
    backend.synchronize()?;
    let update_s = t.elapsed().as_secs_f64();
    let info = solve_from_zero(&mut solver, &backend, &rhs)?;
    println!(
        "  coefficient fields: made in {make_s:.3} s, update_coefficients {update_s:.3} s, then \
         {} its in {:.4} s",
        info.iterations, info.seconds
    );
    // The same host fields made into the levels on the device (what the C and Python host-array
    // calls do on one GPU): twice, each followed by a solve.
    for round in 0..2 {
        let c = coeffs_kept.clone();
        let t = Instant::now();
        let on_device = solver.set_coefficients_host(&backend, Some(c))?;
        let set_s = t.elapsed().as_secs_f64();
        let dev = solve_from_zero(&mut solver, &backend, &rhs)?;
        println!(
            "  host fields made on the device, round {round}: set_coefficients_host {set_s:.4} s \
             (on the device: {on_device}), then {} its in {:.4} s (residuals as the host \
             path's: {})",
            dev.iterations,
            dev.seconds,
            dev.residuals == info.residuals
        );
    }
    // A new ω after host fields made on the device: the levels rebuilt from the kept fields on
    // the device (rebuild_pending, what the C and Python calls do before a solve), then on the
    // host (what a solve does by itself), each followed by a solve; same residuals.
    // The same new ω both times (1.5 times the problem's), from the same fields.
    let omega = 1.5 * p.omega();
    let mut omega_residuals = Vec::new();
    for on_device in [true, false] {
        let t = Instant::now();
        solver.update_omega(&backend, omega)?;
        let rebuilt = on_device && solver.rebuild_pending(&backend)?;
        backend.synchronize()?;
        let set_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let dev = solve_from_zero(&mut solver, &backend, &rhs)?;
        let wall = t.elapsed().as_secs_f64();
        println!(
            "  a new omega, rebuilt {}: update_omega{} {set_s:.4} s, then the solve {wall:.4} s \
             wall ({} its in {:.4} s)",
            if rebuilt {
                "on the device"
            } else {
                "at the solve, on the host"
            },
            if on_device { " + rebuild_pending" } else { "" },
            dev.iterations,
            dev.seconds
        );
        omega_residuals.push(dev.residuals);
        // Back to the fields made on the device for the second round.
        solver.set_coefficients_host(&backend, Some(coeffs_kept.clone()))?;
    }
    println!(
        "  the two rebuilds' residuals equal: {}",
        omega_residuals[0] == omega_residuals[1]
    );
    // The same fields from device arrays (a model's, on the GPU), kept on the device: set every
    // step, three times, each followed by a solve.
    let stream = backend.stream();
    let fields = [
        &coeffs_kept.kx,
        &coeffs_kept.ky,
        &coeffs_kept.kz,
        &coeffs_kept.beta,
    ]
    .map(|v| stream.clone_htod(v))
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    let arrays: Vec<DeviceArray> = fields
        .iter()
        .map(|d| {
            let (ptr, _sync) = d.device_ptr(&stream);
            // SAFETY: a live allocation of n·n·nz values of the backend's context, k fastest.
            unsafe { DeviceArray::with_order(ptr, Order::KFastest, n, n, nz) }
        })
        .collect();
    // κ and β given, no advection.
    let given = [
        Some(&arrays[0]),
        Some(&arrays[1]),
        Some(&arrays[2]),
        Some(&arrays[3]),
        None,
        None,
        None,
    ];
    backend.synchronize()?;
    for round in 0..3 {
        let t = Instant::now();
        solver.set_coefficients_device(&backend, given)?;
        backend.synchronize()?;
        let set_s = t.elapsed().as_secs_f64();
        let dev = solve_from_zero(&mut solver, &backend, &rhs)?;
        println!(
            "  device coefficient fields, round {round}: set_coefficients_device {set_s:.4} s, \
             then {} its in {:.4} s (residuals as the host fields': {})",
            dev.iterations,
            dev.seconds,
            dev.residuals == info.residuals
        );
    }
    // The same operator solved again without new fields: what a solve costs when its recorded
    // cycles are kept (a new operator forgets them, and the solve after it records again).
    for round in 0..2 {
        let t = Instant::now();
        let again = solve_from_zero(&mut solver, &backend, &rhs)?;
        let wall = t.elapsed().as_secs_f64();
        println!(
            "  the same fields again, round {round}: the solve {wall:.4} s wall ({} its in {:.4} s)",
            again.iterations, again.seconds
        );
    }
    // Where a call's time goes: the fields checked and averaged on the device; the levels'
    // stencils built on the host (what the solver rebuilds); the operators made from the fields.
    let levels = solver.config().num_levels();
    let averaging = solver.config().multigrid.averaging;
    let t = Instant::now();
    let cells = backend.resident_coefficients(given, &p, levels, averaging)?;
    backend.synchronize()?;
    let fields_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let stencils = strata::stencil::build_levels_with(&p, Block::whole(n), levels, averaging)?;
    let stencils_s = t.elapsed().as_secs_f64();
    drop(stencils);
    let t = Instant::now();
    solver.update_resident_coefficients(&backend, cells, true)?;
    backend.synchronize()?;
    let update_s = t.elapsed().as_secs_f64();
    println!(
        "  of which: fields checked and averaged {fields_s:.4} s; the update {update_s:.4} s, \
         with the host's stencils of {levels} levels {stencils_s:.4} s"
    );
    // With an advection vector too (the κ arrays again as its components: only the time of
    // the call is of interest here, seven fields and the seven-array form).
    let with_xi = [
        Some(&arrays[0]),
        Some(&arrays[1]),
        Some(&arrays[2]),
        Some(&arrays[3]),
        Some(&arrays[0]),
        Some(&arrays[1]),
        Some(&arrays[2]),
    ];
    for round in 0..2 {
        let t = Instant::now();
        solver.set_coefficients_device(&backend, with_xi)?;
        backend.synchronize()?;
        println!(
            "  with the advection vector, round {round}: set_coefficients_device {:.4} s",
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Solves with `rhs` uploaded into the solver's field, from zero.
fn solve_from_zero(
    solver: &mut PersistentSolver<CudaBackend>,
    backend: &CudaBackend,
    rhs: &[f64],
) -> Result<strata::solver::SolveInfo, strata::StrataError> {
    let (op, f, u) = solver.fields_mut();
    backend.upload(op, rhs, f)?;
    backend.fill(op, u, 0.0)?;
    solver.solve_resident(backend)
}
