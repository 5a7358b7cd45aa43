//! Host arrays in and out, the halo faces, and conversion between precisions.

use super::*;
use crate::backend::TransferKernels;
use crate::grid::Side;

impl CpuBackend {
    fn convert_t<S: Real, T: Real>(&self, x: &HostField<S>, y: &mut HostField<T>) {
        let row = x.row_len();
        self.pool.install(|| {
            y.data
                .par_chunks_mut(row)
                .zip(x.data.par_chunks(row))
                .for_each(|(y, x)| {
                    self.wide(
                        #[inline(always)]
                        || {
                            for (y, x) in y.iter_mut().zip(x) {
                                *y = T::from_f64(x.to_f64());
                            }
                        },
                    )
                })
        });
    }
}

impl TransferKernels for CpuBackend {
    crate::backend::host_face_buffers!();

    fn upload(&self, s: &LevelStencil, host: &[f64], x: &mut CpuField) -> Result<()> {
        by_precision!(s, S => get_mut::<S>(x)?.set_interior(host));
        Ok(())
    }

    fn download(&self, s: &LevelStencil, x: &CpuField, host: &mut [f64]) -> Result<()> {
        by_precision!(s, S => get::<S>(x)?.get_interior(host));
        Ok(())
    }

    fn convert(
        &self,
        from: &LevelStencil,
        x: &CpuField,
        to: &LevelStencil,
        y: &mut CpuField,
    ) -> Result<()> {
        crate::backend::check_convert(from, to)?;
        match (x, y) {
            (CpuField::Double(x), CpuField::Double(y)) => self.convert_t(x, y),
            (CpuField::Double(x), CpuField::Single(y)) => self.convert_t(x, y),
            (CpuField::Single(x), CpuField::Double(y)) => self.convert_t(x, y),
            (CpuField::Single(x), CpuField::Single(y)) => self.convert_t(x, y),
        }
        Ok(())
    }

    fn pack_face(
        &self,
        s: &LevelStencil,
        x: &CpuField,
        side: Side,
        buf: &mut Vec<f64>,
    ) -> Result<()> {
        assert_eq!(buf.len(), crate::backend::face_len(s, side));
        by_precision!(s, S => get::<S>(x)?.pack_face(side, buf));
        Ok(())
    }

    fn unpack_face(
        &self,
        s: &LevelStencil,
        x: &mut CpuField,
        side: Side,
        buf: &Vec<f64>,
    ) -> Result<()> {
        assert_eq!(buf.len(), crate::backend::face_len(s, side));
        by_precision!(s, S => get_mut::<S>(x)?.unpack_face(side, buf));
        Ok(())
    }

    fn pack_column(
        &self,
        s: &LevelStencil,
        x: &CpuField,
        at: (usize, usize),
        buf: &mut Vec<f64>,
    ) -> Result<()> {
        crate::backend::check_column(s, at, buf.len())?;
        by_precision!(s, S => get::<S>(x)?.pack_column(at, buf));
        Ok(())
    }

    fn unpack_column(
        &self,
        s: &LevelStencil,
        x: &mut CpuField,
        at: (usize, usize),
        buf: &Vec<f64>,
    ) -> Result<()> {
        crate::backend::check_column(s, at, buf.len())?;
        by_precision!(s, S => get_mut::<S>(x)?.unpack_column(at, buf));
        Ok(())
    }

    fn copy_halo(
        &self,
        src_op: &LevelStencil,
        src: &CpuField,
        src_side: Side,
        op: &LevelStencil,
        x: &mut CpuField,
        side: Side,
        reversed: bool,
    ) -> Result<()> {
        assert_eq!(
            crate::backend::face_len(src_op, src_side),
            crate::backend::face_len(op, side)
        );
        by_precision!(op, S => get_mut::<S>(x)?.copy_halo_from(side, get::<S>(src)?, src_side, reversed));
        Ok(())
    }

    fn wrap_halo(&self, op: &LevelStencil, x: &mut CpuField, side: Side) -> Result<()> {
        by_precision!(op, S => get_mut::<S>(x)?.wrap_halo(side));
        Ok(())
    }
}

/// The solver's scalars in a host vector (the defaults of every slot kernel).
impl crate::backend::ScalarKernels for CpuBackend {
    crate::backend::host_scalars!();
}
