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

// What most users need, at the crate root: the stack and its one `Stage` trait, and every
// built-in stage with the solver and goal types it is configured with. The modules stay public
// for their settings, reports and less used types.
pub use analytic::{LimbGoal, LimbSettings, TwoBoneIk};
pub use behaviours::aim::AimChain;
pub use behaviours::look_at::LookAtChain;
pub use behaviours::twist::TwistDistribution;
pub use chain::ChainIkStage;
pub use grounding::GroundingStage;
pub use humanoid::{
    DetachedFeet, FullBodyGoals, FullBodySettings, FullBodySolver, HumanoidBone, HumanoidLimits,
    HumanoidMap,
};
pub use jacobian::JacobianSolver;
pub use limits::JointLimit;
pub use spline::SplineIkStage;
pub use spring::SpringBoneStage;
pub use stack::{
    AnyStage, FullBodyStage, IkStack, JacobianStage, LimbBatch, LimbBatchStage, PoseBuffer,
    StackReport, Stage, StageOutcome, StageReport, StageSlot, TwoBoneStage,
};
pub use velocity::AngularVelocityLimiter;
pub use vr::VrBody;

/// Re-export of the glam version this crate uses (the one `bevy_math` 0.19 uses).
pub use glam;

/// The most used items: `use ik_core::prelude::*;`.
pub mod prelude {
    pub use crate::pose::{BoneTransform, Pose};
    pub use crate::skeleton::{Bone, Chain, Skeleton};
    pub use glam::{Quat, Vec3};
}
