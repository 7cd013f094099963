//! Procedural chains for the chain, spline and spring tests and benches: bones along any of
//! the six axis directions, with plain, rotated or scaled rest transforms.

#![allow(dead_code)]

use glam::{Quat, Vec3};
use ik_core::{Bone, BoneTransform, Skeleton};

use super::rng::Rng;

/// The six rest-axis directions a rig may point its bones along.
pub const AXES: [Vec3; 6] = [
    Vec3::X,
    Vec3::NEG_X,
    Vec3::Y,
    Vec3::NEG_Y,
    Vec3::Z,
    Vec3::NEG_Z,
];

/// How the rest transforms look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestStyle {
    /// Identity rotations, unit scale.
    Plain,
    /// A random rest rotation per bone (the next bone's offset still along the bone's axis).
    Rotated,
    /// Random rest rotations and a random scale per bone, non-uniform on the base.
    Scaled,
}

pub const STYLES: [RestStyle; 3] = [RestStyle::Plain, RestStyle::Rotated, RestStyle::Scaled];

/// A base bone (index 0, away from the origin and turned) and a chain of `n` bones under it
/// (indices `1..=n`), each pointing along `axis` in its own frame, lengths in `[0.05, 0.15]`
/// model units (before scales).
pub fn chain_rig(n: usize, axis: Vec3, style: RestStyle, seed: u64) -> Skeleton {
    let mut rng = Rng(seed);
    let mut bones = Vec::with_capacity(n + 1);
    let base_scale = if style == RestStyle::Scaled {
        Vec3::new(1.3, 0.8, 1.1)
    } else {
        Vec3::ONE
    };
    bones.push(Bone::new(
        "base",
        None,
        BoneTransform {
            translation: Vec3::new(0.2, 1.0, -0.3),
            rotation: Quat::from_rotation_y(0.4) * Quat::from_rotation_x(-0.3),
            scale: base_scale,
        },
    ));
    for i in 1..=n {
        let rotation = match style {
            RestStyle::Plain => Quat::IDENTITY,
            _ => Quat::from_scaled_axis(rng.vec() * 0.6),
        };
        let scale = match style {
            RestStyle::Scaled => Vec3::splat(0.7 + 0.6 * rng.next()),
            _ => Vec3::ONE,
        };
        let length = 0.05 + 0.1 * rng.next();
        let translation = if i == 1 { axis * 0.1 } else { axis * length };
        bones.push(Bone::new(
            format!("b{i}"),
            Some(i - 1),
            BoneTransform {
                translation,
                rotation,
                scale,
            },
        ));
    }
    Skeleton::try_new(bones).expect("a valid chain rig")
}
