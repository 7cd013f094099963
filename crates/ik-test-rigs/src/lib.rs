//! Procedurally built humanoid test rigs for the workspace's tests and benches: the
//! [`test_rig`] skeletons in six naming conventions and four rest-axis styles
//! ([`RigConvention`], [`RestAxes`]) and [`random_pose_within_limits`]. Not published: a crate
//! of the workspace rather than a feature of ik-core's library, so the rigs are never part of
//! ik-core's public API.
//!
//! `rigs.rs` is written against `crate::{humanoid, limits, pose, skeleton}`, which the
//! imports below provide here; ik-core's own unit tests compile the same file as
//! `ik_core::humanoid::test_rig` under `cfg(test)` (a dev-dependency on this crate would give
//! them a second copy of ik-core's types).

use ik_core::{humanoid, limits, pose, skeleton};

mod rigs;

pub use rigs::{RestAxes, RigConvention, random_pose_within_limits, test_rig};
