//! What the MPI test binaries that launch themselves under `mpirun` share.

use std::process::Command;

/// The test binary's `main`: `rank_main` on a rank that mpirun started, `launcher` (which starts
/// the ranks through [`mpirun_self`]) otherwise.
pub fn rank_or_launch(rank_main: fn(), launcher: fn()) {
    if std::env::var("OMPI_COMM_WORLD_SIZE").is_ok() {
        rank_main();
    } else {
        launcher();
    }
}

/// A rank's arguments from [`mpirun_self`]: the rank grid and the backend or communicator kind
/// (`cpu` if not given).
pub fn rank_args() -> (strata::grid::RankGrid, String) {
    let arg = std::env::args().nth(1).expect("grid argument");
    let kind = std::env::args().nth(2).unwrap_or_else(|| "cpu".into());
    (strata::grid::RankGrid::parse(&arg).expect("PXxPY"), kind)
}

/// Runs this binary under mpirun on `ranks` ranks with `args`, reports the outcome as test
/// `name` (with the ranks' output where it failed) and returns whether it passed.
pub fn mpirun_self(name: &str, ranks: usize, args: &[&str]) -> bool {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new("mpirun")
        .args([
            "--oversubscribe",
            "--timeout",
            "120",
            "-n",
            &ranks.to_string(),
        ])
        .arg(&exe)
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output();
    match out {
        Ok(o) if o.status.success() => {
            println!("test {name} ... ok");
            true
        }
        Ok(o) => {
            println!(
                "test {name} ... FAILED\n{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            false
        }
        Err(e) => {
            println!("test {name} ... FAILED: cannot run mpirun: {e}");
            false
        }
    }
}

/// Prints the "N passed, N failed" line and ends the process, failing if any test failed.
pub fn finish(results: &[bool]) -> ! {
    let passed = results.iter().filter(|&&r| r).count();
    let failed = results.len() - passed;
    println!("{passed} passed, {failed} failed");
    std::process::exit(i32::from(failed > 0));
}
