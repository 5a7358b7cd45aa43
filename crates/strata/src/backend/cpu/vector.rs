//! Vector operations (fill, copy, axpy, xpby, dot) over rows of columns.

use super::*;
use crate::backend::VectorKernels;

impl CpuBackend {
    fn fill_t<S: Real>(&self, x: &mut HostField<S>, v: f64) {
        let nz = x.nz;
        let v = S::from_f64(v);
        self.pool
            .install(|| rows(x).for_each(|r| inner_mut(r, nz).fill(v)));
    }

    fn dot_t<S: Real>(&self, s: &LevelStencil, x: &HostField<S>, y: &HostField<S>) -> f64 {
        let nz = s.nz;
        let [d, _] = self.reduce_rows(s.ny(), |parts| {
            parts
                .par_iter_mut()
                .zip(rows_ref(x).zip(rows_ref(y)))
                .for_each(|(part, (xr, yr))| {
                    let sum = inner(xr, nz)
                        .iter()
                        .zip(inner(yr, nz))
                        .fold(0.0, |a, (x, y)| a + x.to_f64() * y.to_f64());
                    *part = [sum, 0.0];
                })
        });
        d
    }
}

impl VectorKernels for CpuBackend {
    fn fill(&self, s: &LevelStencil, x: &mut CpuField, v: f64) -> Result<()> {
        by_precision!(s, S => self.fill_t(get_mut::<S>(x)?, v));
        Ok(())
    }

    fn copy(&self, s: &LevelStencil, x: &CpuField, y: &mut CpuField) -> Result<()> {
        by_precision!(s, S => self.map2(get::<S>(x)?, get_mut::<S>(y)?, |x, _| x));
        Ok(())
    }

    fn axpy(&self, s: &LevelStencil, a: f64, x: &CpuField, y: &mut CpuField) -> Result<()> {
        by_precision!(s, S => self.map2(get::<S>(x)?, get_mut::<S>(y)?, |x, y| y + a * x));
        Ok(())
    }

    fn xpby(&self, s: &LevelStencil, x: &CpuField, b: f64, y: &mut CpuField) -> Result<()> {
        by_precision!(s, S => self.map2(get::<S>(x)?, get_mut::<S>(y)?, |x, y| x + b * y));
        Ok(())
    }

    fn dot(&self, s: &LevelStencil, x: &CpuField, y: &CpuField) -> Result<f64> {
        Ok(by_precision!(s, S => self.dot_t(s, get::<S>(x)?, get::<S>(y)?)))
    }
}
