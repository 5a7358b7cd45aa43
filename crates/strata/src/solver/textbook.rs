//! Unfused textbook PCG (docs/MODEL.md §8.1): the verification reference for the fused [`super::Cg`].

use super::monitor::Monitor;
use super::{SolveInfo, SolveParams};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use std::time::Instant;

/// Textbook PCG with vertical line relaxation, built from the backend's unfused kernels.
pub fn textbook_pcg<B: Backend, C: Comm<B>>(
    b: &B,
    comm: &C,
    op: &B::LevelOp,
    f: &B::Field,
    u: &mut B::Field,
    params: &SolveParams,
) -> Result<SolveInfo> {
    let start = Instant::now();
    let dot = |x: &B::Field, y: &B::Field| -> Result<f64> {
        let mut s = [b.dot(op, x, y)?];
        comm.sum(&mut s)?;
        Ok(s[0])
    };
    let mut r = b.alloc(op)?;
    let mut z = b.alloc(op)?;
    let mut p = b.alloc(op)?;
    let mut q = b.alloc(op)?;
    comm.exchange(b, op, u)?;
    b.residual(op, f, u, &mut r)?;
    b.line_solve(op, &r, &mut z)?;
    b.copy(op, &z, &mut p)?;
    comm.exchange(b, op, &mut p)?;
    b.apply(op, &p, &mut q)?;
    let mut kappa = dot(&r, &z)?;
    let mut cb = |_: usize, _: f64| {};
    let mut mon = Monitor::new(params, dot(&r, &r)?, dot(f, f)?, &mut cb);
    let mut it = 0;
    let reason = if let Some(reason) = mon.initial() {
        reason
    } else {
        loop {
            it += 1;
            let sigma = dot(&p, &q)?;
            if let Some(reason) = Monitor::curvature(sigma) {
                break reason;
            }
            let alpha = kappa / sigma;
            b.axpy(op, alpha, &p, u)?;
            b.axpy(op, -alpha, &q, &mut r)?;
            if let Some(reason) = mon.step(it, dot(&r, &r)?) {
                break reason;
            }
            b.line_solve(op, &r, &mut z)?;
            let kappa_new = dot(&r, &z)?;
            let beta = kappa_new / kappa;
            kappa = kappa_new;
            b.xpby(op, &z, beta, &mut p)?;
            comm.exchange(b, op, &mut p)?;
            b.apply(op, &p, &mut q)?;
        }
    };
    Ok(mon.finish(reason, it, start.elapsed().as_secs_f64(), None))
}
