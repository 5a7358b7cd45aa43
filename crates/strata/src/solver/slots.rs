//! The slots of the CG iterations' scalars in the backend's memory
//! ([`crate::backend::ScalarKernels`]), shared by CG and mg-cg.

use crate::backend::ScalarOp;

/// κ = ⟨r, z⟩ of the last step.
pub(crate) const KAPPA: usize = 0;
/// σ = ⟨p, A p⟩.
pub(crate) const SIGMA: usize = 1;
/// The step length α.
pub(crate) const ALPHA: usize = 2;
/// β.
pub(crate) const BETA: usize = 3;
/// The new ‖r‖².
pub(crate) const RR: usize = 4;
/// The new ⟨r, z⟩ (after RR in CG: its Tridiag kernel writes both).
pub(crate) const RZ: usize = 5;
/// mg-cg's ⟨z, q⟩ of the new z (after RZ: one kernel writes both).
pub(crate) const ZQ: usize = 6;
/// Slots of CG and of mg-cg.
pub(crate) const CG_SLOTS: usize = 6;
pub(crate) const MGCG_SLOTS: usize = 7;

/// α = κ / σ, 0 where σ broke down (the host stops on reading σ).
pub(crate) fn step_length() -> ScalarOp {
    ScalarOp {
        guard: true,
        ..ScalarOp::ratio(ALPHA, KAPPA, SIGMA)
    }
}
