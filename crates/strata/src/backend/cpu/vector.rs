//! Vector operations (fill, copy, axpy, xpby, dot) over rows of columns.

use super::*;
use crate::backend::VectorKernels;

impl VectorKernels for CpuBackend {
    fn fill(&self, _s: &LevelStencil, x: &mut HostField, v: f64) -> Result<()> {
        let nz = x.nz;
        self.pool
            .install(|| rows(x).for_each(|r| inner_mut(r, nz).fill(v)));
        Ok(())
    }

    fn copy(&self, _s: &LevelStencil, x: &HostField, y: &mut HostField) -> Result<()> {
        self.map2(x, y, |x, _| x);
        Ok(())
    }

    fn axpy(&self, _s: &LevelStencil, a: f64, x: &HostField, y: &mut HostField) -> Result<()> {
        self.map2(x, y, |x, y| y + a * x);
        Ok(())
    }

    fn xpby(&self, _s: &LevelStencil, x: &HostField, b: f64, y: &mut HostField) -> Result<()> {
        self.map2(x, y, |x, y| x + b * y);
        Ok(())
    }

    fn dot(&self, s: &LevelStencil, x: &HostField, y: &HostField) -> Result<f64> {
        let nz = s.nz;
        let [d, _] = self.reduce_rows(s.ny(), |parts| {
            parts
                .par_iter_mut()
                .zip(rows_ref(x).zip(rows_ref(y)))
                .for_each(|(part, (xr, yr))| {
                    let sum = inner(xr, nz)
                        .iter()
                        .zip(inner(yr, nz))
                        .fold(0.0, |a, (x, y)| a + x * y);
                    *part = [sum, 0.0];
                })
        });
        Ok(d)
    }
}
