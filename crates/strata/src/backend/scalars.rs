//! Scalars kept where the backend computes: the α, β and norms of a Krylov iteration, so that a
//! GPU reads none of them back to the host inside an iteration (PETSc's and Ginkgo's device
//! scalars). A solver names its scalars by slot in a small array ([`ScalarKernels::Scalars`]);
//! reductions write their local partial into a slot, [`crate::comm::Comm::sum_slots`] sums
//! slots over the ranks, [`ScalarOp`]s derive coefficients from slots, and kernels take their
//! coefficients as a [`Coef`], a value or a slot. The host backends keep the slots in a host
//! vector and get every method from the defaults here, which call their kernels with the slots'
//! values.

use super::{Fields, LineKernels, Recording, StencilKernels, VectorKernels};
use crate::error::{invalid, Result};

/// A kernel's coefficient: `value`, or with a slot, `value` times the slot's value (so −α is
/// `Coef::slot(-1.0, ALPHA)`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coef {
    /// The value, or the factor of the slot's value.
    pub value: f64,
    /// The slot, if any.
    pub slot: Option<usize>,
}

impl Coef {
    /// The plain value `v`.
    pub fn value(v: f64) -> Self {
        Self {
            value: v,
            slot: None,
        }
    }

    /// `factor` times slot `slot`.
    pub fn slot(factor: f64, slot: usize) -> Self {
        Self {
            value: factor,
            slot: Some(slot),
        }
    }

    /// Its value, the slots being `s`.
    pub fn eval(&self, s: &[f64]) -> f64 {
        match self.slot {
            Some(i) => self.value * s[i],
            None => self.value,
        }
    }

    /// The slot as the kernels take it: its index, or −1.
    pub fn slot_index(&self) -> i32 {
        self.slot.map_or(-1, |i| i as i32)
    }
}

/// One step of scalar arithmetic on slots: `s[dst] = sign · s[num] · s[by] / s[den]` (a missing
/// `by` or `den` counts as 1, in this order of operations, so a device computes what the host
/// would). With `guard`, a denominator that is not finite and positive (a CG curvature that
/// broke down) gives 0 instead, so that the kernels after it change nothing and the host, which
/// reads the denominator too, stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScalarOp {
    /// The slot written.
    pub dst: usize,
    /// ±1.
    pub sign: f64,
    /// The numerator's slot.
    pub num: usize,
    /// A second factor's slot.
    pub by: Option<usize>,
    /// The denominator's slot.
    pub den: Option<usize>,
    /// Whether a denominator that is not finite and positive gives 0.
    pub guard: bool,
}

impl ScalarOp {
    /// `s[dst] = s[src]`.
    pub fn copy(dst: usize, src: usize) -> Self {
        Self {
            dst,
            sign: 1.0,
            num: src,
            by: None,
            den: None,
            guard: false,
        }
    }

    /// `s[dst] = s[num] / s[den]`.
    pub fn ratio(dst: usize, num: usize, den: usize) -> Self {
        Self {
            den: Some(den),
            ..Self::copy(dst, num)
        }
    }

    /// The operation's value on slots `s`.
    pub fn eval(&self, s: &[f64]) -> f64 {
        let mut v = self.sign * s[self.num];
        if let Some(b) = self.by {
            v *= s[b];
        }
        if let Some(d) = self.den {
            let d = s[d];
            if self.guard && !(d.is_finite() && d > 0.0) {
                return 0.0;
            }
            v /= d;
        }
        v
    }
}

/// Most [`ScalarOp`]s in one [`ScalarKernels::scalar_ops`] call.
pub const MAX_SCALAR_OPS: usize = 4;

/// Checks the slots of `ops` against `len` slots and their number.
pub fn check_scalar_ops(ops: &[ScalarOp], len: usize) -> Result<()> {
    if ops.len() > MAX_SCALAR_OPS {
        return invalid(
            "scalar_ops",
            format!(
                "takes at most {MAX_SCALAR_OPS} operations (got {})",
                ops.len()
            ),
        );
    }
    for o in ops {
        let slots = [Some(o.dst), Some(o.num), o.by, o.den];
        if let Some(bad) = slots.into_iter().flatten().find(|&i| i >= len) {
            return invalid("scalar_ops", format!("slot {bad} of {len} slots"));
        }
    }
    Ok(())
}

/// Checks that every slot of `coefs` and the `n` slots from `at` (`out = Some((at, n))`) lie in
/// `len` slots.
pub fn check_slots(len: usize, coefs: &[Coef], out: Option<(usize, usize)>) -> Result<()> {
    let bad_coef = coefs.iter().filter_map(|c| c.slot).find(|&i| i >= len);
    let bad_out = out.filter(|&(at, n)| at + n > len).map(|(at, _)| at);
    match bad_coef.or(bad_out) {
        Some(i) => invalid("slot", format!("{i} is not a slot of the {len} scalars")),
        None => Ok(()),
    }
}

/// The scalars of a solver in the backend's memory, and the Krylov kernels in the form that
/// reads their coefficients from slots and writes their reductions into slots. Every method
/// but the four that define the storage has a default that goes through the host: it reads the
/// slots, calls the kernel of [`VectorKernels`], [`StencilKernels`] or [`LineKernels`] with
/// their values and writes the result back — exact for a host backend, and a correct (if
/// waiting) fallback for any other.
pub trait ScalarKernels: Fields + VectorKernels + StencilKernels + LineKernels {
    /// A few f64 slots (device memory on a GPU).
    type Scalars: Send + Sync;

    /// `n` slots of zeros.
    fn alloc_scalars(&self, n: usize) -> Result<Self::Scalars>;

    /// Copies the first `out.len()` slots to the host; waits for them.
    fn read_scalars(&self, s: &Self::Scalars, out: &mut [f64]) -> Result<()>;

    /// Writes `v` into the slots from `at` on.
    fn write_scalars(&self, s: &mut Self::Scalars, at: usize, v: &[f64]) -> Result<()>;

    /// Number of slots.
    fn scalars_len(&self, s: &Self::Scalars) -> usize;

    /// The identity of the slots' memory (a device address; 0 by default), for the keys of
    /// [`ScalarKernels::iterate_on_device`] and the test it runs on them.
    fn scalars_address(&self, s: &Self::Scalars) -> u64 {
        let _ = s;
        0
    }

    /// Whether [`ScalarKernels::iterate_on_device`] may run iterations on the device (false by
    /// default: it then returns `None` without running the body).
    fn device_iterations(&self) -> bool {
        false
    }

    /// Runs `body` — one iteration that queues the same kernels on the same fields at every
    /// call, never waits on the host, and leaves the slots `test` reads in the scalars at
    /// address `scalars` ([`ScalarKernels::scalars_address`]) — repeatedly on the device until
    /// `test` says stop, without the host in between (a CUDA graph whose WHILE node repeats the
    /// recorded iteration, the test a kernel at its end). Recorded into `rec` under `key` (the
    /// addresses of every field and slot the iteration touches) at the first call, as
    /// [`Fields::replay`] records. Returns per iteration run the values of the test's slots
    /// [‖r‖², σ] (σ 1 without), for the caller to replay its monitor on; `None` where the
    /// backend runs no iterations on its device (the host backends; a body that could not be
    /// recorded, which then has run on the host once with no kernel executed, so a body must
    /// allow that as [`Fields::replay`]'s must): the caller then runs the loop itself.
    fn iterate_on_device(
        &self,
        rec: &mut Recording,
        key: &[u64],
        scalars: u64,
        test: &DeviceTest,
        body: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Option<Vec<[f64; 2]>>> {
        let _ = (rec, key, scalars, test, body);
        Ok(None)
    }

    /// [`StencilKernels::residual_to`] with the local ‖f − A u‖² into slot `out`.
    #[allow(clippy::too_many_arguments)]
    fn residual_to_slots(
        &self,
        op: &Self::LevelOp,
        f: &Self::Field,
        u: &Self::Field,
        to: &Self::LevelOp,
        r: &mut Self::Field,
        s: &mut Self::Scalars,
        out: usize,
    ) -> Result<()> {
        check_slots(self.scalars_len(s), &[], Some((out, 1)))?;
        let rr = self.residual_to(op, f, u, to, r)?;
        self.write_scalars(s, out, &[rr])
    }

    /// Runs `ops` in order (at most [`MAX_SCALAR_OPS`]).
    fn scalar_ops(&self, s: &mut Self::Scalars, ops: &[ScalarOp]) -> Result<()> {
        let mut v = host_slots(self, s)?;
        check_scalar_ops(ops, v.len())?;
        for o in ops {
            v[o.dst] = o.eval(&v);
        }
        self.write_scalars(s, 0, &v)
    }

    /// [`StencilKernels::cg_spmv`] with α and β from slots; the local Σ p·q into slot `out`.
    #[allow(clippy::too_many_arguments)]
    fn cg_spmv_slots(
        &self,
        op: &Self::LevelOp,
        z: &Self::Field,
        u: &mut Self::Field,
        p: &mut Self::Field,
        q: &mut Self::Field,
        s: &mut Self::Scalars,
        (alpha, beta): (Coef, Coef),
        out: usize,
    ) -> Result<()> {
        let v = host_slots(self, s)?;
        check_slots(v.len(), &[alpha, beta], Some((out, 1)))?;
        let pq = self.cg_spmv(op, z, u, p, q, alpha.eval(&v), beta.eval(&v))?;
        self.write_scalars(s, out, &[pq])
    }

    /// [`LineKernels::cg_tridiag`] with α from a slot; the local [Σ r·r, Σ r·z] into slots
    /// `out` and `out + 1`.
    #[allow(clippy::too_many_arguments)]
    fn cg_tridiag_slots(
        &self,
        op: &Self::LevelOp,
        q: &Self::Field,
        r: &mut Self::Field,
        z: &mut Self::Field,
        s: &mut Self::Scalars,
        alpha: Coef,
        out: usize,
    ) -> Result<()> {
        let v = host_slots(self, s)?;
        check_slots(v.len(), &[alpha], Some((out, 2)))?;
        let rr_rz = self.cg_tridiag(op, q, r, z, alpha.eval(&v))?;
        self.write_scalars(s, out, &rr_rz)
    }

    /// [`VectorKernels::axpy_norm`] with `a` from a slot; the local ‖y‖² into slot `out`.
    fn axpy_norm_slots(
        &self,
        op: &Self::LevelOp,
        a: Coef,
        x: &Self::Field,
        y: &mut Self::Field,
        s: &mut Self::Scalars,
        out: usize,
    ) -> Result<()> {
        let v = host_slots(self, s)?;
        check_slots(v.len(), &[a], Some((out, 1)))?;
        let yy = self.axpy_norm(op, a.eval(&v), x, y)?;
        self.write_scalars(s, out, &[yy])
    }

    /// [`VectorKernels::axpy`] with `a` from a slot.
    fn axpy_slots(
        &self,
        op: &Self::LevelOp,
        a: Coef,
        x: &Self::Field,
        y: &mut Self::Field,
        s: &Self::Scalars,
    ) -> Result<()> {
        let v = host_slots(self, s)?;
        check_slots(v.len(), &[a], None)?;
        self.axpy(op, a.eval(&v), x, y)
    }

    /// [`VectorKernels::dot`] into slot `out`.
    fn dot_slots(
        &self,
        op: &Self::LevelOp,
        x: &Self::Field,
        y: &Self::Field,
        s: &mut Self::Scalars,
        out: usize,
    ) -> Result<()> {
        check_slots(self.scalars_len(s), &[], Some((out, 1)))?;
        let d = self.dot(op, x, y)?;
        self.write_scalars(s, out, &[d])
    }

    /// [`VectorKernels::dot_pair`] into slots `out` and `out + 1`.
    fn dot_pair_slots(
        &self,
        op: &Self::LevelOp,
        x: &Self::Field,
        y: &Self::Field,
        w: &Self::Field,
        s: &mut Self::Scalars,
        out: usize,
    ) -> Result<()> {
        check_slots(self.scalars_len(s), &[], Some((out, 2)))?;
        let d = self.dot_pair(op, x, y, w)?;
        self.write_scalars(s, out, &d)
    }
}

/// The stopping test of an iteration that a backend runs on its device
/// ([`ScalarKernels::iterate_on_device`]): the test of [`crate::solver::SolveParams`] as the
/// solvers' monitor applies it on the host, in its order, on slots the iteration's kernels
/// leave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceTest {
    /// The slot holding ‖r‖² after each iteration (summed over the ranks).
    pub rr: usize,
    /// The slot of CG's curvature σ, tested first (not finite and positive: stop), if any.
    pub sigma: Option<usize>,
    /// The iteration stops once √‖r‖² < `bound` (rtol times the reference norm), unless `fixed`.
    pub bound: f64,
    /// Most iterations.
    pub max_it: usize,
    /// Runs exactly `max_it` iterations (unless a value is not finite).
    pub fixed: bool,
}

/// Most iterations [`ScalarKernels::iterate_on_device`] is asked for: its log holds two values
/// per iteration in device memory; beyond this the host runs the loop.
pub const MAX_DEVICE_ITERATIONS: usize = 10_000;

/// Every slot of `s`, on the host.
pub fn host_slots<B: ScalarKernels + ?Sized>(b: &B, s: &B::Scalars) -> Result<Vec<f64>> {
    let mut v = vec![0.0; b.scalars_len(s)];
    b.read_scalars(s, &mut v)?;
    Ok(v)
}

/// The storage methods of [`ScalarKernels`] for a backend whose slots are a host vector.
macro_rules! host_scalars {
    () => {
        type Scalars = Vec<f64>;

        fn alloc_scalars(&self, n: usize) -> Result<Vec<f64>> {
            Ok(vec![0.0; n])
        }

        fn read_scalars(&self, s: &Vec<f64>, out: &mut [f64]) -> Result<()> {
            let n = out.len();
            $crate::backend::check_slots(s.len(), &[], Some((0, n)))?;
            out.copy_from_slice(&s[..n]);
            Ok(())
        }

        fn write_scalars(&self, s: &mut Vec<f64>, at: usize, v: &[f64]) -> Result<()> {
            $crate::backend::check_slots(s.len(), &[], Some((at, v.len())))?;
            s[at..at + v.len()].copy_from_slice(v);
            Ok(())
        }

        fn scalars_len(&self, s: &Vec<f64>) -> usize {
            s.len()
        }
    };
}
pub(crate) use host_scalars;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_compute_in_the_hosts_order_and_guard_breakdowns() {
        let s = [2.0, 4.0, 3.0, 0.0, f64::NAN];
        assert_eq!(ScalarOp::ratio(0, 1, 2).eval(&s), 4.0 / 3.0);
        let beta = ScalarOp {
            dst: 0,
            sign: -1.0,
            num: 0,
            by: Some(2),
            den: Some(1),
            guard: false,
        };
        assert_eq!(beta.eval(&s), -2.0 * 3.0 / 4.0);
        let guarded = |den| ScalarOp {
            guard: true,
            ..ScalarOp::ratio(0, 1, den)
        };
        assert_eq!(guarded(3).eval(&s), 0.0, "zero curvature");
        assert_eq!(guarded(4).eval(&s), 0.0, "NaN curvature");
        assert_eq!(guarded(2).eval(&s), 4.0 / 3.0);
        assert_eq!(ScalarOp::copy(3, 1).eval(&s), 4.0);
        assert_eq!(Coef::slot(-1.0, 1).eval(&s), -4.0);
        assert_eq!(Coef::value(0.5).eval(&s), 0.5);
        assert!(check_scalar_ops(&[ScalarOp::ratio(0, 1, 5)], 5).is_err());
        assert!(check_scalar_ops(&[ScalarOp::copy(0, 1); 5], 5).is_err());
        assert!(check_scalar_ops(&[ScalarOp::copy(0, 1); 4], 5).is_ok());
    }
}
