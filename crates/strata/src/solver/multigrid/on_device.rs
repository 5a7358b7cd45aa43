//! Mixed mg's iteration on the device: defect correction's cycles and their stopping test
//! recorded once and repeated by the backend without the host in between
//! ([`crate::backend::ScalarKernels::iterate_on_device`]: on the GPU one CUDA graph whose WHILE
//! node repeats the iteration until a kernel's test says stop). The host opens the solve as its
//! own loop does (‖r₀‖, ‖f‖), launches once, and replays its monitor on the residuals the
//! device logged: the same kernels, so the same iterates and residuals bit for bit.

use super::MgPreconditioner;
use crate::backend::{Backend, Recording, MAX_DEVICE_ITERATIONS};
use crate::comm::Comm;
use crate::error::Result;
use crate::solver::monitor::Monitor;
use crate::solver::profile::Timer;
use crate::solver::{SolveInfo, SolveParams};
use std::time::Instant;

/// What defect correction keeps to iterate on the device: the recording of its iteration and
/// the slot of ‖r‖².
pub(super) struct OnDevice<B: Backend> {
    rec: Recording,
    rr: Option<B::Scalars>,
}

impl<B: Backend> OnDevice<B> {
    /// Nothing recorded yet.
    pub fn new() -> Self {
        Self {
            rec: Recording::new(),
            rr: None,
        }
    }

    /// Forgets the recorded iterations (operators or communicator changed).
    pub fn forget(&mut self) {
        self.rec.clear();
    }

    /// Solves A u = f by defect correction with `pc`'s cycle, the iterations on the device;
    /// `None` where they cannot run there (a host backend, a timer, a communicator that waits
    /// on the host, a coarse CG, too many iterations, or a first recording that failed): then
    /// the caller's loop runs, from u as given (after a failed recording this has exchanged u's
    /// halo and computed the opening residual, which the caller's loop computes again).
    #[allow(clippy::too_many_arguments)]
    pub fn solve<C: Comm<B>>(
        &mut self,
        pc: &mut MgPreconditioner<B>,
        b: &B,
        comm: &C,
        f: &B::Field,
        u: &mut B::Field,
        params: &SolveParams,
        monitor: &mut dyn FnMut(usize, f64),
    ) -> Result<Option<SolveInfo>> {
        if params.profile
            || params.max_it > MAX_DEVICE_ITERATIONS
            || !b.device_iterations()
            || !pc.replayable(comm)
            // One process, whose communicator records at once: NCCL messages inside a
            // conditional node are untried over ranks (an NCCL job of one rank takes the loop
            // only with STRATA_NCCL_GRAPHS=0).
            || comm.size() > 1
            || comm.record_after() > 0
            || self.rec.refused().is_some()
        {
            return Ok(None);
        }
        let start = Instant::now();
        let mut timer = Timer::new(false, pc.n_levels());
        comm.exchange(b, pc.fine(), u)?;
        let mut rr = [
            pc.residual_in(b, &mut timer, f, u)?,
            b.dot(pc.fine(), f, f)?,
        ];
        comm.sum(&mut rr)?;
        let mut mon = Monitor::new(params, rr[0], rr[1], monitor);
        let (reason, it) = if let Some(reason) = mon.initial() {
            (reason, 0)
        } else {
            if self.rr.is_none() {
                self.rr = Some(b.alloc_scalars(1)?);
            }
            let Some(sc) = self.rr.as_mut() else {
                return Ok(None);
            };
            let scalars = b.scalars_address(sc);
            let test = mon.device_test(0, None);
            let key = pc.correction_key(b, f, u);
            let log = b.iterate_on_device(&mut self.rec, &key, scalars, &test, &mut || {
                pc.correct(b, comm, &mut timer, u)?;
                pc.residual_in_slot(b, f, u, sc, 0)?;
                comm.sum_slots(b, sc, 0, 1)
            })?;
            match log {
                Some(log) => mon.replay(&log, false)?,
                // Not recorded (its first recording failed): nothing ran; the host's loop
                // opens again.
                None => return Ok(None),
            }
        };
        b.synchronize()?;
        let seconds = start.elapsed().as_secs_f64();
        Ok(Some(mon.finish(reason, it, seconds, None)))
    }
}
