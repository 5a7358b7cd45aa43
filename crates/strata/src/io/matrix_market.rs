//! Matrix Market files (NIST's exchange format, read by SciPy's `scipy.io.mmread`, PETSc,
//! Julia, MATLAB): the assembled operator as `coordinate real general`, vectors as `array real
//! general`, 1-based, values with 17 significant digits (a round trip is exact).

use crate::error::{Result, StrataError};
use crate::matrix::SparseMatrix;
use std::io::{BufRead, BufWriter, Write};
use std::path::Path;

fn io_err(path: &Path, e: impl std::fmt::Display) -> StrataError {
    StrataError::invalid("export", format!("{}: {e}", path.display()))
}

/// Writes `a` as a Matrix Market coordinate file with `comment` lines in its header.
pub fn write_matrix_market(path: &Path, a: &SparseMatrix, comment: &[String]) -> Result<()> {
    let f = std::fs::File::create(path).map_err(|e| io_err(path, e))?;
    let mut w = BufWriter::new(f);
    let mut body = || -> std::io::Result<()> {
        writeln!(w, "%%MatrixMarket matrix coordinate real general")?;
        for c in comment {
            writeln!(w, "% {c}")?;
        }
        writeln!(w, "{} {} {}", a.size, a.size, a.values.len())?;
        for ((r, c), v) in a.rows.iter().zip(&a.cols).zip(&a.values) {
            writeln!(w, "{} {} {v:.17e}", r + 1, c + 1)?;
        }
        w.flush()
    };
    body().map_err(|e| io_err(path, e))
}

/// Writes a vector as a Matrix Market array file (one column).
pub fn write_vector_market(path: &Path, v: &[f64], comment: &[String]) -> Result<()> {
    let f = std::fs::File::create(path).map_err(|e| io_err(path, e))?;
    let mut w = BufWriter::new(f);
    let mut body = || -> std::io::Result<()> {
        writeln!(w, "%%MatrixMarket matrix array real general")?;
        for c in comment {
            writeln!(w, "% {c}")?;
        }
        writeln!(w, "{} 1", v.len())?;
        for x in v {
            writeln!(w, "{x:.17e}")?;
        }
        w.flush()
    };
    body().map_err(|e| io_err(path, e))
}

/// Reads a Matrix Market coordinate file written by [`write_matrix_market`] (real, general).
pub fn read_matrix_market(path: &Path) -> Result<SparseMatrix> {
    let f = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
    let mut lines = std::io::BufReader::new(f).lines();
    let bad = |what: &str| {
        io_err(
            path,
            format!("not a real coordinate Matrix Market file ({what})"),
        )
    };
    let head = lines
        .next()
        .ok_or_else(|| bad("empty"))?
        .map_err(|e| io_err(path, e))?;
    if !head.starts_with("%%MatrixMarket matrix coordinate real general") {
        return Err(bad("header"));
    }
    let mut size_line = None;
    let mut a = SparseMatrix {
        size: 0,
        rows: vec![],
        cols: vec![],
        values: vec![],
    };
    for line in lines {
        let line = line.map_err(|e| io_err(path, e))?;
        if line.starts_with('%') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if size_line.is_none() {
            let nums: Vec<usize> = f.iter().filter_map(|x| x.parse().ok()).collect();
            if nums.len() != 3 || nums[0] != nums[1] {
                return Err(bad("size line"));
            }
            a.size = nums[0];
            size_line = Some(nums[2]);
            continue;
        }
        let (Some(r), Some(c), Some(v)) = (
            f.first().and_then(|x| x.parse::<usize>().ok()),
            f.get(1).and_then(|x| x.parse::<usize>().ok()),
            f.get(2).and_then(|x| x.parse::<f64>().ok()),
        ) else {
            return Err(bad("entry"));
        };
        if r == 0 || c == 0 || r > a.size || c > a.size {
            return Err(bad("index out of range"));
        }
        a.rows.push(r - 1);
        a.cols.push(c - 1);
        a.values.push(v);
    }
    match size_line {
        Some(nnz) if nnz == a.values.len() => Ok(a),
        _ => Err(bad("entry count")),
    }
}
