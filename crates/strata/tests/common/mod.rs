//! Helpers shared by the integration tests.
#![allow(dead_code)]

use strata::field::HostField;

/// A small deterministic generator (xorshift64*), values in [−1, 1).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (v >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// A field of random values everywhere, halo included.
pub fn random_field(nx: usize, ny: usize, nz: usize, rng: &mut Rng) -> HostField {
    let mut f = HostField::zeros(nx, ny, nz);
    f.data.iter_mut().for_each(|v| *v = rng.next());
    f
}

/// Max |a − b| over the interior, relative to max |b|.
pub fn rel_diff(a: &HostField, b: &HostField) -> f64 {
    let (mut d, mut m) = (0.0f64, 0.0f64);
    for j in 0..a.ny {
        for i in 0..a.nx {
            for (x, y) in a.column(i, j).iter().zip(b.column(i, j)) {
                d = d.max((x - y).abs());
                m = m.max(y.abs());
            }
        }
    }
    if m == 0.0 {
        d
    } else {
        d / m
    }
}

/// Whether the assembled matrix equals its transpose bit for bit.
pub fn symmetric_bits(m: &strata::matrix::SparseMatrix) -> bool {
    let mut entries: Vec<(usize, usize, u64)> = m
        .rows
        .iter()
        .zip(&m.cols)
        .zip(&m.values)
        .map(|((&r, &c), v)| (r, c, v.to_bits()))
        .collect();
    let mut transposed: Vec<(usize, usize, u64)> =
        entries.iter().map(|&(r, c, v)| (c, r, v)).collect();
    entries.sort_unstable();
    transposed.sort_unstable();
    entries == transposed
}
