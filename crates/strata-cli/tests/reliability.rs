//! Runs every row of the bad-input table in docs/RELIABILITY.md, so that the table and strata
//! cannot drift apart.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One row of the table.
struct Row {
    input: String,
    args: Vec<String>,
    exit: String,
    says: String,
}

/// The rows of the table whose command column is `` `strata …` ``.
fn rows(doc: &str, subst: &dyn Fn(&str) -> String) -> Vec<Row> {
    doc.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            // "| class | input | command | exit | says |" splits into 7 cells.
            if cells.len() != 7 {
                return None;
            }
            let cmd = cells[3].strip_prefix("`strata ")?.strip_suffix('`')?;
            let says = cells[5].trim_matches('`');
            Some(Row {
                input: cells[2].to_string(),
                args: subst(cmd).split_whitespace().map(String::from).collect(),
                exit: cells[4].to_string(),
                says: subst(says),
            })
        })
        .collect()
}

/// Starts strata with SIGINT and SIGTERM at their default actions, as a terminal's Ctrl-C finds
/// it, whatever this test inherited: a job a non-interactive shell starts with `&` (`nohup … &`)
/// ignores SIGINT, and an ignored signal stays ignored across exec, so the signal rows would
/// test the launcher instead of strata.
fn spawn(args: &[String]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(env!("CARGO_BIN_EXE_strata"));
    command
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: the closure runs in the child between fork and exec, where only async-signal-safe
    // calls are allowed: it calls signal(2) twice and allocates nothing.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
    command.spawn().expect("strata starts")
}

/// Waits at most `limit`, killing the process and failing past it (a hang is a failure, not a
/// stuck test run).
fn wait(mut child: std::process::Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn fixtures(dir: &Path) -> PathBuf {
    let nc = dir.join("u.nc");
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["solve", "--n", "8", "--nz", "4", "--levels", "1", "-q"])
        .args(["--backend", "cpu", "--output"])
        .arg(&nc)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(&nc).unwrap();
    std::fs::write(dir.join("cut.nc"), &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(dir.join("junk.nc"), b"this is not a NetCDF file\n").unwrap();
    std::fs::write(dir.join("h5.nc"), b"\x89HDF\r\n\x1a\n\0\0\0\0\0\0\0\0").unwrap();
    nc
}

#[test]
fn docs_reliability_table_holds() {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/RELIABILITY.md");
    let doc = std::fs::read_to_string(&doc_path).expect("docs/RELIABILITY.md");
    let dir = std::env::temp_dir().join(format!("strata-reliability-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let nc = fixtures(&dir);
    let d = dir.display().to_string();
    let subst = |s: &str| {
        s.replace("{tmp}", &d)
            .replace("{nc}", &nc.display().to_string())
            .replace("{cut}", &format!("{d}/cut.nc"))
            .replace("{junk}", &format!("{d}/junk.nc"))
            .replace("{h5}", &format!("{d}/h5.nc"))
    };
    let rows = rows(&doc, &subst);
    assert!(rows.len() >= 30, "only {} rows found", rows.len());
    let limit = Duration::from_secs(30);
    let mut failures = vec![];
    for row in &rows {
        let what = format!("{} (strata {})", row.input, row.args.join(" "));
        let signal = match row.exit.as_str() {
            "SIGINT" => Some(("-INT", 2)),
            "SIGTERM" => Some(("-TERM", 15)),
            _ => None,
        };
        if let Some((flag, number)) = signal {
            let child = spawn(&row.args);
            std::thread::sleep(Duration::from_millis(500));
            let pid = child.id().to_string();
            let sent = Command::new("kill").args([flag, &pid]).status().unwrap();
            assert!(sent.success(), "kill {flag} {pid}");
            let o = wait(child, limit, &what);
            if o.status.signal() != Some(number) {
                failures.push(format!("{what}: ended with {:?}, not the signal", o.status));
            }
            let out = row.args.last().unwrap();
            let parent = Path::new(out).parent().unwrap();
            let left: Vec<_> = std::fs::read_dir(parent)
                .unwrap()
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains("sig") || n.contains("term") || n.contains(".part"))
                .collect();
            if !left.is_empty() {
                failures.push(format!("{what}: left {left:?}"));
            }
            continue;
        }
        let o = wait(spawn(&row.args), limit, &what);
        let err = String::from_utf8_lossy(&o.stderr);
        let code: i32 = row.exit.parse().expect("exit code");
        if o.status.code() != Some(code) {
            failures.push(format!(
                "{what}: exit {:?}, table says {code}\n{err}",
                o.status
            ));
        }
        if err.contains("panicked") {
            failures.push(format!("{what}: panicked\n{err}"));
        }
        if !err.contains(&row.says) {
            failures.push(format!("{what}: stderr lacks '{}':\n{err}", row.says));
        }
        if code == 1 {
            let lines: Vec<_> = err
                .lines()
                .filter(|l| !l.starts_with("note: no usable GPU"))
                .collect();
            if lines.len() != 1 || !lines[0].starts_with("error: ") {
                failures.push(format!("{what}: not one 'error:' line:\n{err}"));
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
