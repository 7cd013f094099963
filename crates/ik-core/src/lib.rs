#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod analytic;
pub mod behaviours;
pub mod chain;
pub mod error;
pub mod grounding;
pub mod humanoid;
pub mod jacobian;
pub mod limits;
pub mod pose;
pub mod rotation;
pub mod skeleton;
pub mod spline;
pub mod spring;
pub mod stack;
pub mod velocity;
pub mod vr;

pub use error::*;
pub use pose::{BoneTransform, Pose};
pub use skeleton::{Bone, Chain, Skeleton};

/// Re-export of the glam version this crate uses (the one `bevy_math` 0.19 uses).
pub use glam;

/// The most used items: `use ik_core::prelude::*;`.
pub mod prelude {
    pub use crate::pose::{BoneTransform, Pose};
    pub use crate::skeleton::{Bone, Chain, Skeleton};
    pub use glam::{Quat, Vec3};
}
