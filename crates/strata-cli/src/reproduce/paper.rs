//! The paper's numbers (MODEL.md §11.3, §11.4), printed and plotted beside ours.

/// Table "SingleGPUTiming" on a K20X: (solver, n, t_iter ms, GFLOP/s, % of peak BW, iterations,
/// t_MemCpy+transpose ms, total ms).
pub const SINGLE_GPU: [(&str, usize, f64, f64, f64, usize, f64, f64); 7] = [
    ("cg", 128, 2.8, 41.0, 36.4, 70, 19.4, 217.1),
    ("cg", 256, 7.5, 60.1, 53.4, 62, 63.5, 543.7),
    ("cg", 512, 29.7, 60.9, 54.2, 59, 228.4, 2029.0),
    ("cg", 768, 65.0, 62.7, 55.7, 58, 494.0, 4365.0),
    ("mg", 128, 12.8, 24.6, 15.6, 9, 19.6, 135.5),
    ("mg", 256, 27.3, 45.9, 29.1, 8, 64.3, 285.7),
    ("mg", 512, 88.8, 56.4, 35.8, 8, 229.5, 949.9),
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
pub fn single_gpu(solver: &str, n: usize) -> Option<(f64, f64, f64, usize, f64, f64)> {
    SINGLE_GPU
        .iter()
        .find(|r| r.0 == solver && r.1 == n)
        .map(|r| (r.2, r.3, r.4, r.5, r.6, r.7))
}
