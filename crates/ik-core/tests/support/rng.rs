//! Seeded random numbers shared by the tests and the benches: `SplitMix64` → uniform `f32` in
//! `[0, 1)`.

#![allow(dead_code)]

use glam::Vec3;

/// `SplitMix64` → uniform `f32` in `[0, 1)`.
pub struct Rng(pub u64);

impl Rng {
    /// The next number in `[0, 1)`.
    pub fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    }

    /// The next number in `[-1, 1)`.
    pub fn signed(&mut self) -> f32 {
        2.0 * self.next() - 1.0
    }

    /// A vector with each coordinate in `[-1, 1)`.
    pub fn vec(&mut self) -> Vec3 {
        Vec3::new(self.signed(), self.signed(), self.signed())
    }
}
