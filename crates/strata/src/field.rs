//! The host field layout shared by the reference and the CPU backends.
//!
//! Columns are z-contiguous. The block's `nx × ny` columns are surrounded by a halo ring of width
//! one (the Dirichlet zero at the physical boundary, the neighbour's values in a decomposition):
//! column `(i, j)` with `i ∈ [−1, nx]`, `j ∈ [−1, ny]` starts at
//! `((j + 1) * (nx + 2) + (i + 1)) * nz`.

use crate::grid::Side;
use crate::precision::Real;

/// A 3D field of one block of one level, with its halo ring, storing `S` (`f64`, or `f32` on the
/// fp32 levels of a mixed-precision solve; host arrays and faces are `f64` either way).
#[derive(Debug, Clone, PartialEq)]
pub struct HostField<S: Real = f64> {
    /// Local cells in x (without halo).
    pub nx: usize,
    /// Local cells in y (without halo).
    pub ny: usize,
    /// Vertical cells.
    pub nz: usize,
    /// `(nx + 2) * (ny + 2) * nz` values, zero-initialised.
    pub data: Vec<S>,
}

impl<S: Real> HostField<S> {
    /// A zero field (halo included).
    pub fn zeros(nx: usize, ny: usize, nz: usize) -> Self {
        Self {
            nx,
            ny,
            nz,
            data: vec![S::default(); (nx + 2) * (ny + 2) * nz],
        }
    }

    /// Values in one row of columns including its two halo columns: `(nx + 2) * nz`.
    pub fn row_len(&self) -> usize {
        (self.nx + 2) * self.nz
    }

    /// Offset of column `(i, j)` in halo-inclusive coordinates (`i + 1`, `j + 1` of the interior).
    #[inline]
    pub fn offset(&self, ih: usize, jh: usize) -> usize {
        (jh * (self.nx + 2) + ih) * self.nz
    }

    /// The interior column `(i, j)` (0-based interior indices).
    pub fn column(&self, i: usize, j: usize) -> &[S] {
        let o = self.offset(i + 1, j + 1);
        &self.data[o..o + self.nz]
    }

    /// The interior column `(i, j)`, mutable.
    pub fn column_mut(&mut self, i: usize, j: usize) -> &mut [S] {
        let o = self.offset(i + 1, j + 1);
        let nz = self.nz;
        &mut self.data[o..o + nz]
    }

    /// Copies the interior from a z-contiguous host array `host[(j * nx + i) * nz + k]`.
    pub fn set_interior(&mut self, host: &[f64]) {
        assert_eq!(host.len(), self.nx * self.ny * self.nz, "host array size");
        let nz = self.nz;
        for j in 0..self.ny {
            for i in 0..self.nx {
                let src = &host[(j * self.nx + i) * nz..][..nz];
                store(self.column_mut(i, j), src);
            }
        }
    }

    /// Copies the interior into a z-contiguous host array.
    pub fn get_interior(&self, host: &mut [f64]) {
        assert_eq!(host.len(), self.nx * self.ny * self.nz, "host array size");
        let nz = self.nz;
        for j in 0..self.ny {
            for i in 0..self.nx {
                load(&mut host[(j * self.nx + i) * nz..][..nz], self.column(i, j));
            }
        }
    }

    /// Interior columns next to `side` in face order, as halo-inclusive `(i, j)`, and the halo
    /// column across that side.
    fn face_columns(&self, side: Side, t: usize) -> ((usize, usize), (usize, usize)) {
        let (nx, ny) = (self.nx, self.ny);
        match side {
            Side::West => ((1, t + 1), (0, t + 1)),
            Side::East => ((nx, t + 1), (nx + 1, t + 1)),
            Side::South => ((t + 1, 1), (t + 1, 0)),
            Side::North => ((t + 1, ny), (t + 1, ny + 1)),
        }
    }

    fn face_count(&self, side: Side) -> usize {
        match side {
            Side::West | Side::East => self.ny,
            Side::South | Side::North => self.nx,
        }
    }

    /// Copies the interior layer next to `side` into `buf` (face order, z-contiguous).
    pub fn pack_face(&self, side: Side, buf: &mut [f64]) {
        let nz = self.nz;
        for t in 0..self.face_count(side) {
            let ((i, j), _) = self.face_columns(side, t);
            let o = self.offset(i, j);
            load(&mut buf[t * nz..(t + 1) * nz], &self.data[o..o + nz]);
        }
    }

    /// Copies the column at halo-inclusive `(ih, jh)` into `buf` (`nz` values).
    pub fn pack_column(&self, (ih, jh): (usize, usize), buf: &mut [f64]) {
        let o = self.offset(ih, jh);
        load(&mut buf[..self.nz], &self.data[o..o + self.nz]);
    }

    /// Fills the column at halo-inclusive `(ih, jh)` from `buf` (`nz` values).
    pub fn unpack_column(&mut self, (ih, jh): (usize, usize), buf: &[f64]) {
        let o = self.offset(ih, jh);
        for (x, v) in self.data[o..o + self.nz].iter_mut().zip(buf) {
            *x = S::from_f64(*v);
        }
    }

    /// Copies the halo across `side` into `buf` (face order, z-contiguous): what the neighbour
    /// across that side sent, or the Dirichlet zeros.
    pub fn pack_halo(&self, side: Side, buf: &mut [f64]) {
        let nz = self.nz;
        for t in 0..self.face_count(side) {
            let (_, (i, j)) = self.face_columns(side, t);
            let o = self.offset(i, j);
            load(&mut buf[t * nz..(t + 1) * nz], &self.data[o..o + nz]);
        }
    }

    /// Fills the halo across `side` with the interior layer of `src` next to `src_side`, the
    /// other way along the face if `reversed`: the halo exchange between two blocks of one
    /// process (the tiles of the sphere, docs/MODEL.md §16).
    pub fn copy_halo_from(
        &mut self,
        side: Side,
        src: &HostField<S>,
        src_side: Side,
        reversed: bool,
    ) {
        let (nz, count) = (self.nz, self.face_count(side));
        assert_eq!(count, src.face_count(src_side), "face lengths");
        assert_eq!(nz, src.nz, "nz");
        for t in 0..count {
            let s = if reversed { count - 1 - t } else { t };
            let ((si, sj), _) = src.face_columns(src_side, s);
            let (_, (i, j)) = self.face_columns(side, t);
            let (so, o) = (src.offset(si, sj), self.offset(i, j));
            self.data[o..o + nz].copy_from_slice(&src.data[so..so + nz]);
        }
    }

    /// Fills the halo across `side` with this field's interior layer next to the opposite
    /// side (a periodic edge whose far side is this block).
    pub fn wrap_halo(&mut self, side: Side) {
        let nz = self.nz;
        for t in 0..self.face_count(side) {
            let ((si, sj), _) = self.face_columns(side.opposite(), t);
            let (_, (i, j)) = self.face_columns(side, t);
            let (so, o) = (self.offset(si, sj), self.offset(i, j));
            self.data.copy_within(so..so + nz, o);
        }
    }

    /// Writes `buf` (face order) into the halo across `side`.
    pub fn unpack_face(&mut self, side: Side, buf: &[f64]) {
        let nz = self.nz;
        for t in 0..self.face_count(side) {
            let (_, (i, j)) = self.face_columns(side, t);
            let o = self.offset(i, j);
            store(&mut self.data[o..o + nz], &buf[t * nz..(t + 1) * nz]);
        }
    }
}

/// `dst ← src`, rounded to `S`.
#[inline]
pub fn store<S: Real>(dst: &mut [S], src: &[f64]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = S::from_f64(*s);
    }
}

/// `dst ← src`, widened to `f64`.
#[inline]
pub fn load<S: Real>(dst: &mut [f64], src: &[S]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = s.to_f64();
    }
}

/// Reverses the order of the columns (`nz` values each, kept in order) of a face buffer.
pub fn reverse_columns(v: &mut [f64], nz: usize) {
    v.reverse();
    for c in v.chunks_mut(nz) {
        c.reverse();
    }
}

#[cfg(test)]
mod reverse_tests {
    #[test]
    fn reversing_a_face_keeps_each_column_in_order() {
        let mut v = vec![0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 20.0, 21.0, 22.0];
        super::reverse_columns(&mut v, 3);
        assert_eq!(v, [20.0, 21.0, 22.0, 10.0, 11.0, 12.0, 0.0, 1.0, 2.0]);
    }
}
