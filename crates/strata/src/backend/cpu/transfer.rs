//! Host arrays in and out, and the halo faces.

use super::*;
use crate::backend::TransferKernels;

impl TransferKernels for CpuBackend {
    fn upload(&self, _s: &LevelStencil, host: &[f64], x: &mut HostField) -> Result<()> {
        x.set_interior(host);
        Ok(())
    }

    fn download(&self, _s: &LevelStencil, x: &HostField, host: &mut [f64]) -> Result<()> {
        x.get_interior(host);
        Ok(())
    }

    host_face_methods!();
}
