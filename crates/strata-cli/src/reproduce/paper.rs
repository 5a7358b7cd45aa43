//! The paper's numbers (docs/MODEL.md §11.3, §11.4), printed and plotted beside ours.

/// A row of Table "SingleGPUTiming" (K20X).
pub struct PaperRow {
    /// Solver ("cg" or "mg").
    pub solver: &'static str,
    /// Horizontal size.
    pub n: usize,
    /// Time per iteration in ms.
    pub t_iter: f64,
    /// GFLOP/s.
    pub gflops: f64,
    /// Useful bandwidth, % of the K20X's 250 GB/s peak.
    pub bw_percent: f64,
    /// Iterations.
    pub iterations: usize,
}

const fn row(
    solver: &'static str,
    n: usize,
    t_iter: f64,
    gflops: f64,
    bw_percent: f64,
    iterations: usize,
) -> PaperRow {
    PaperRow {
        solver,
        n,
        t_iter,
        gflops,
        bw_percent,
        iterations,
    }
}

/// Table "SingleGPUTiming" on a K20X (its transfer and total times are in PERFORMANCE.md).
pub const SINGLE_GPU: [PaperRow; 7] = [
    row("cg", 128, 2.8, 41.0, 36.4, 70),
    row("cg", 256, 7.5, 60.1, 53.4, 62),
    row("cg", 512, 29.7, 60.9, 54.2, 59),
    row("cg", 768, 65.0, 62.7, 55.7, 58),
    row("mg", 128, 12.8, 24.6, 15.6, 9),
    row("mg", 256, 27.3, 45.9, 29.1, 8),
    row("mg", 512, 88.8, 56.4, 35.8, 8),
];

/// Table "TimingBreakdownMultigrid", 512² × 128 on one K20X, ms per iteration: (kernel,
/// [level 0 (finest) .. level 4]); `None` where the kernel does not run.
pub const BREAKDOWN_512: [(&str, [Option<f64>; 5]); 4] = [
    (
        "Smooth",
        [Some(45.0), Some(5.9), Some(1.9), Some(0.8), Some(0.7)],
    ),
    (
        "RestrictSmooth",
        [None, Some(4.7), Some(1.7), Some(0.7), Some(0.7)],
    ),
    (
        "Residual",
        [Some(15.4), Some(2.0), Some(0.8), Some(0.3), None],
    ),
    (
        "Prolongate",
        [Some(4.3), Some(1.1), Some(0.4), Some(0.2), None],
    ),
];

/// The paper's row for a solver and size, if it has one.
pub fn single_gpu(solver: &str, n: usize) -> Option<&'static PaperRow> {
    SINGLE_GPU.iter().find(|r| r.solver == solver && r.n == n)
}
