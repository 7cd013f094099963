//! Spring bones: secondary motion of hair, skirts, tails and ears, simulated per frame with
//! VRM's spring-bone model (`VRMC_springBone` 1.0 and VRM 0.x `secondaryAnimation`).
//!
//! # The model (VRM's reference implementation)
//!
//! Each joint of a chain has a *tail*: the point its bone points at (the next joint's origin,
//! or a virtual tail past the chain's last bone, see [`SpringTail`]). The tail is a Verlet
//! particle. One step of length `h` moves it by
//!
//! ```text
//! next = tail + (tail − previous) · keep            inertia, less the drag
//!      + animated_direction · stiffness · h²/h₀    a push toward the animated pose
//!      + gravity_dir · gravity_power · h²/h₀       gravity
//! next = origin + (next − origin) · length / |next − origin|     the bone's length kept
//! ```
//!
//! then pushes it out of every collider (its hit radius added to the collider's) and restores
//! the length again, and turns the bone by the shortest arc from its animated direction to
//! the tail. `animated_direction` is the direction the bone points in the *animated* pose
//! (whatever earlier stages left in the buffer), under its already simulated parent: the
//! spring pulls toward the animation, not toward the bind pose.
//!
//! **Frame-rate independence.** VRM's parameters are per-frame quantities of the reference
//! implementation, which adds `stiffness · dt` and `gravity_power · dt` to the position and
//! keeps `1 − drag_force` of the motion per rendered frame; content is tuned at
//! [`REFERENCE_RATE`] (60 Hz, `h₀ = 1/60 s`). Here a frame of `dt` seconds is split into
//! `⌈dt / max_substep⌉` equal steps of `h ≤` [`SpringSettings::max_substep`], each adding the
//! accelerations' `h²/h₀` (the same acceleration as the reference at 60 Hz) and keeping
//! `keep = (1 − drag_force)^(h/h₀)`, so 30, 60 and 240 Hz give the same motion (to the
//! integrator's order). The chain's parent moves from its last frame's place to this frame's
//! across the steps (interpolated), so a fast move is seen as motion, not as a jump at the
//! first step.
//!
//! **Hostile `dt`.** `dt` ≤ 0 or NaN advances nothing (the tails stay, the bones still point
//! at them); `dt` above [`MAX_FRAME_TIME`] (a hitch, or infinity) is simulated as
//! [`MAX_FRAME_TIME`].
//!
//! **Spaces.** The simulation runs in the world: the stage's
//! [`SpringBoneStage::model_to_world`] (identity by default: then the world is the model
//! space and a character moved by its root transform alone drags nothing). A chain with a
//! [`SpringChainDesc::center`] bone is simulated relative to that bone instead (VRM's
//! `center`): a walking character's hair follows the body without lag, and only motion
//! relative to the centre swings it. Gravity (`gravity_dir`) is a world direction.
//!
//! **Teleports.** When the model frame jumps farther than [`SpringSettings::teleport_distance`]
//! or turns more than [`SpringSettings::teleport_angle`] between two solves, the tails are
//! reset to the animated pose (no swing from the jump); [`SpringBoneStage::reset`] does the
//! same on demand.
//!
//! **Bone axes.** Never assumed: each joint's direction is the rest offset to the next joint
//! (in the bone's own frame, with its scale); the virtual tail continues the direction from the
//! last joint's parent to the last joint.
//!
//! ```
//! use glam::{Quat, Vec3};
//! use ik_core::spring::{SpringBoneStage, SpringChainDesc, SpringJointDesc, SpringTail};
//! use ik_core::stack::{IkStack, Stage};
//! use ik_core::{Bone, BoneTransform, Skeleton};
//!
//! // A head and a three-bone ponytail pointing back (-Z here; any axis works).
//! let t = |v: Vec3| BoneTransform::from_translation(v);
//! let skeleton = Skeleton::try_new(vec![
//!     Bone::new("head", None, t(Vec3::Y * 1.6)),
//!     Bone::new("hair0", Some(0), t(Vec3::new(0.0, 0.1, -0.1))),
//!     Bone::new("hair1", Some(1), t(Vec3::NEG_Z * 0.1)),
//!     Bone::new("hair2", Some(2), t(Vec3::NEG_Z * 0.1)),
//! ])?;
//! let joint = |bone| SpringJointDesc { bone, gravity_power: 1.0, ..SpringJointDesc::default() };
//! let chain = SpringChainDesc {
//!     joints: vec![joint(1), joint(2), joint(3)],
//!     tail: SpringTail::Virtual { length: 0.07 },
//!     ..SpringChainDesc::default()
//! };
//! let spring = SpringBoneStage::try_new(&skeleton, &[chain], &[])?;
//! let mut stack = IkStack::new(skeleton);
//! let slot = stack.push(spring)?;
//! let before = stack.model_transform(3).translation;
//! // Every frame: the animated pose in, the frame time, solve.
//! for _ in 0..120 {
//!     stack.slot_mut(slot).unwrap().stage.as_custom_mut::<SpringBoneStage>().unwrap().dt =
//!         1.0 / 60.0;
//!     stack.solve();
//! }
//! // Gravity pulled the ponytail down.
//! assert!(stack.model_transform(3).translation.y < before.y - 0.01);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use glam::{Quat, Vec3};
use thiserror::Error;

use crate::pose::BoneTransform;
use crate::skeleton::Skeleton;
use crate::stack::{CustomReport, NonFinite, PoseBuffer, StackError, Stage, StageReport};

/// The frame rate VRM spring parameters are tuned at (the reference implementation steps
/// once per rendered frame; content is authored at 60 Hz).
pub const REFERENCE_RATE: f32 = 60.0;

/// The longest frame simulated, seconds: a longer `dt` (a hitch, a paused game resuming,
/// infinity) is simulated as this. Four reference frames: the slowest frame rate the
/// simulation is specified for is 15 Hz.
pub const MAX_FRAME_TIME: f32 = 4.0 / REFERENCE_RATE;

/// Errors building a [`SpringBoneStage`].
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum SpringError {
    /// A chain has no joint to simulate (no joints, or a single joint with
    /// [`SpringTail::LastJoint`]).
    #[error("spring chain {0} has no joint to simulate")]
    EmptyChain(usize),
    /// A bone index is out of range.
    #[error("bone {bone} is out of range (the skeleton has {len} bones)")]
    BoneOutOfRange {
        /// The bad index.
        bone: usize,
        /// Number of bones.
        len: usize,
    },
    /// A joint's bone is not the child of the previous joint's bone.
    #[error("spring chain {chain}: joint {joint}'s bone is not a child of the previous joint's")]
    NotAChild {
        /// The chain.
        chain: usize,
        /// The joint.
        joint: usize,
    },
    /// A bone is in two chains (or twice in one).
    #[error("bone {0} is in more than one spring chain")]
    SharedBone(usize),
    /// A joint's bone has zero length toward its tail (rest offset), or the virtual tail has no
    /// direction (the last joint sits on its parent).
    #[error("spring chain {chain}: joint {joint} has a zero-length bone")]
    ZeroLength {
        /// The chain.
        chain: usize,
        /// The joint.
        joint: usize,
    },
    /// A chain's centre bone is one of the simulated bones or below one.
    #[error("spring chain {0}: the centre bone moves with the chain")]
    CenterInChain(usize),
    /// A chain names a collider the stage was not given.
    #[error("spring chain {chain}: collider {collider} does not exist")]
    UnknownCollider {
        /// The chain.
        chain: usize,
        /// The collider index.
        collider: usize,
    },
    /// A parameter is out of range or not finite.
    #[error("invalid spring setting `{0}`")]
    InvalidSetting(&'static str),
}

/// One joint of a spring chain: a bone and its spring parameters.
///
/// The fields map one to one to VRM's: `VRMC_springBone` 1.0 `springs[].joints[]` (`node`,
/// `hitRadius`, `stiffness`, `gravityPower`, `gravityDir`, `dragForce`) and VRM 0.x
/// `secondaryAnimation.boneGroups[]` (`stiffiness` (sic), `gravityPower`, `gravityDir`,
/// `dragForce`, `hitRadius`, the same for every bone of the group).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SpringJointDesc {
    /// The bone (VRM 1.0 `joints[].node`; VRM 0.x: a bone of the group's hierarchy).
    pub bone: usize,
    /// Radius of the tail's collision sphere, in the bone's frame (scaled with the bone, as
    /// VRM's is with its node) (`hitRadius`).
    pub hit_radius: f32,
    /// Pull toward the animated pose (`stiffness`; VRM 0.x `stiffiness`, sic). ≥ 0.
    pub stiffness: f32,
    /// Strength of gravity (`gravityPower`). ≥ 0.
    pub gravity_power: f32,
    /// Direction of gravity in the world (`gravityDir`, normalised on use; VRM's default
    /// is `(0, −1, 0)`, Y up).
    pub gravity_dir: Vec3,
    /// Share of the motion lost per reference frame, `[0, 1]` (`dragForce`).
    pub drag_force: f32,
}

impl Default for SpringJointDesc {
    /// `VRMC_springBone` 1.0's defaults: hit radius 0, stiffness 1, gravity power 0, gravity
    /// direction −Y, drag 0.5.
    fn default() -> Self {
        Self {
            bone: 0,
            hit_radius: 0.0,
            stiffness: 1.0,
            gravity_power: 0.0,
            gravity_dir: Vec3::NEG_Y,
            drag_force: 0.5,
        }
    }
}

/// What the last joint of a chain points at.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum SpringTail {
    /// The last listed joint is only the tail of the one before: it is not simulated and its
    /// parameters are unused (`VRMC_springBone` 1.0, where the chain's last joint is its end).
    LastJoint,
    /// The last joint is simulated too, toward a virtual tail `length` model units past it,
    /// continuing the rest direction from its parent to it (VRM 0.x and three-vrm: a leaf
    /// bone gets a 0.07 m tail).
    Virtual {
        /// Length of the virtual bone, model units (> 0).
        length: f32,
    },
}

impl Default for SpringTail {
    /// [`SpringTail::Virtual`] of 0.07 model units: VRM 0.x's fixed leaf length (7 cm in a
    /// metre-scaled model).
    fn default() -> Self {
        Self::Virtual { length: 0.07 }
    }
}

/// One spring chain: joints from the root down, parameters, centre, colliders, weight.
///
/// A VRM reader fills one per VRM 1.0 `springs[]` entry, and one per leaf path of each VRM
/// 0.x `boneGroups[].bones[]` root (a branching group becomes a chain per branch below the
/// branch point; a bone belongs to one chain). Chains are simulated in the order given: a
/// chain hanging from another chain's bone comes after it. A centre bone should have uniform
/// scale (its frame is inverted).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SpringChainDesc {
    /// The joints, root first; each bone the child of the one before.
    pub joints: Vec<SpringJointDesc>,
    /// What the last joint points at.
    pub tail: SpringTail,
    /// The bone the chain is simulated relative to (VRM 1.0 `springs[].center`, VRM 0.x
    /// `boneGroups[].center`); `None`: the world.
    pub center: Option<usize>,
    /// Indices into the stage's collider list (VRM 1.0: the union of the spring's
    /// `colliderGroups[]`' `colliders[]`; VRM 0.x: of the group's `colliderGroups[]`).
    pub colliders: Vec<usize>,
    /// Blend of the simulated rotations over the animated ones, `[0, 1]` (1: fully simulated).
    /// The simulation runs at any weight, so fading in does not start from a stale state.
    pub weight: f32,
}

impl Default for SpringChainDesc {
    fn default() -> Self {
        Self {
            joints: Vec::new(),
            tail: SpringTail::default(),
            center: None,
            colliders: Vec::new(),
            weight: 1.0,
        }
    }
}

/// A collider's shape, in its bone's local frame (model units, before the bone's scale).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum ColliderShape {
    /// Tails stay outside the sphere (VRM 1.0 `shape.sphere {offset, radius}`; VRM 0.x
    /// `colliderGroups[].colliders[] {offset, radius}`).
    Sphere {
        /// Centre.
        offset: Vec3,
        /// Radius (≥ 0).
        radius: f32,
    },
    /// Tails stay outside the capsule from `offset` to `tail` (VRM 1.0 `shape.capsule`).
    Capsule {
        /// One end.
        offset: Vec3,
        /// The other end.
        tail: Vec3,
        /// Radius (≥ 0).
        radius: f32,
    },
    /// Tails stay on the `normal` side of the plane through `offset`
    /// (`VRMC_springBone_extended_collider` `shape.plane {offset, normal}`).
    Plane {
        /// A point of the plane.
        offset: Vec3,
        /// Its normal (non-zero; normalised on use), pointing to the allowed side.
        normal: Vec3,
    },
    /// Tails stay inside the sphere (`VRMC_springBone_extended_collider` `shape.sphere` with
    /// `inside: true`).
    InsideSphere {
        /// Centre.
        offset: Vec3,
        /// Radius (≥ 0).
        radius: f32,
    },
    /// Tails stay inside the capsule (`VRMC_springBone_extended_collider` `shape.capsule`
    /// with `inside: true`).
    InsideCapsule {
        /// One end.
        offset: Vec3,
        /// The other end.
        tail: Vec3,
        /// Radius (≥ 0).
        radius: f32,
    },
}

/// A collider: a shape attached to a bone (VRM `colliders[] {node, shape}`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ColliderDesc {
    /// The bone it moves with; `None`: fixed in model space.
    pub bone: Option<usize>,
    /// The shape, in the bone's frame.
    pub shape: ColliderShape,
}

/// A stage's simulation settings (structure: changing them does not reset the simulation).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SpringSettings {
    /// The longest simulation step, seconds (> 0, ≤ [`MAX_FRAME_TIME`]). Default
    /// `1 / REFERENCE_RATE`: one step per frame at 60 Hz and above.
    pub max_substep: f32,
    /// A move of the model frame farther than this between two
    /// solves, model units, is a teleport: the tails reset. `None`: derived,
    /// [`TELEPORT_SPANS`] times the longest chain's rest length (with 30 cm hair, 3 m in one
    /// frame: 180 m/s at 60 Hz, beyond any motion the spring could follow).
    pub teleport_distance: Option<f32>,
    /// A turn of the model frame larger than this between two solves, radians, is a teleport
    /// (default a quarter turn: 900°/s at 60 Hz).
    pub teleport_angle: f32,
    /// Passes of "collide, restore the length" per step (≥ 1): a tail pushed out of one
    /// collider and back along its bone's sphere may land in another; each pass resolves
    /// more of such contacts. Default 2.
    pub collision_passes: u32,
}

/// [`SpringSettings::teleport_distance`]'s default, in longest-chain lengths.
pub const TELEPORT_SPANS: f32 = 10.0;

impl Default for SpringSettings {
    fn default() -> Self {
        Self {
            max_substep: 1.0 / REFERENCE_RATE,
            teleport_distance: None,
            teleport_angle: core::f32::consts::FRAC_PI_2,
            collision_passes: 2,
        }
    }
}

impl SpringSettings {
    /// Checks the ranges documented on the fields.
    ///
    /// # Errors
    /// [`SpringError::InvalidSetting`] naming the field.
    pub fn validate(&self) -> Result<(), SpringError> {
        if !(self.max_substep > 0.0 && self.max_substep <= MAX_FRAME_TIME) {
            return Err(SpringError::InvalidSetting("max_substep"));
        }
        if let Some(d) = self.teleport_distance
            && (d.is_nan() || d <= 0.0)
        {
            return Err(SpringError::InvalidSetting("teleport_distance"));
        }
        if self.teleport_angle.is_nan() || self.teleport_angle <= 0.0 {
            return Err(SpringError::InvalidSetting("teleport_angle"));
        }
        if self.collision_passes == 0 {
            return Err(SpringError::InvalidSetting("collision_passes"));
        }
        Ok(())
    }
}

/// A simulated joint's particle, in its chain's simulation space (the world, or the centre
/// bone's frame: see the [module docs](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SpringParticle {
    /// The tail now.
    pub tail: Vec3,
    /// The tail one step before.
    pub previous: Vec3,
}

/// A simulated joint: parameters resolved at set-up.
#[derive(Clone, Copy, Debug)]
struct JointRt {
    bone: usize,
    /// Offset to the tail in the bone's frame (before the bone's scale): the next joint's
    /// local translation, re-read from the pose every frame, or the virtual tail.
    virtual_tail: Option<Vec3>,
    /// The next joint's bone, whose pose translation is the tail offset.
    next: usize,
    hit_radius: f32,
    stiffness: f32,
    gravity: Vec3,
    drag: f32,
    /// `(1 − drag)^(h/h₀)` for the step length [`SpringBoneStage`] last used.
    keep: f32,
}

#[derive(Clone, Debug)]
struct ChainRt {
    joints: Vec<JointRt>,
    particles: Vec<SpringParticle>,
    /// Scratch: the joints' simulated model-space rotations.
    rotations: Vec<Quat>,
    parent: Option<usize>,
    center: Option<usize>,
    colliders: Vec<usize>,
    weight: f32,
    /// The chain root's parent in simulation space at the last solve.
    last_parent: BoneTransform,
    rest_length: f32,
}

/// A collider resolved in simulation space for one step.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Sphere(Vec3, f32),
    Capsule(Vec3, Vec3, f32),
    Plane(Vec3, Vec3),
    InsideSphere(Vec3, f32),
    InsideCapsule(Vec3, Vec3, f32),
}

/// The spring-bone stage: see the [module docs](self). Per-frame inputs are its public
/// fields; set-up data are [`SpringChainDesc`]s and [`ColliderDesc`]s.
#[derive(Clone, Debug)]
pub struct SpringBoneStage {
    /// Seconds since the last solve (see the module docs for hostile values).
    pub dt: f32,
    /// The character's model space in the world (identity: the world is the model space).
    pub model_to_world: BoneTransform,
    settings: SpringSettings,
    chains: Vec<ChainRt>,
    colliders: Vec<ColliderDesc>,
    /// Scratch: the colliders in the current chain's simulation space.
    resolved: Vec<Shape>,
    bones: Vec<usize>,
    last_model_to_world: Option<BoneTransform>,
    teleport_distance: f32,
    fresh: bool,
    /// The step length the joints' `keep` factors are for.
    keep_step: f32,
}

impl SpringBoneStage {
    /// A stage simulating `chains` on `skeleton`, with `colliders` (which the chains name by
    /// index), default [`SpringSettings`].
    ///
    /// # Errors
    /// [`SpringError`] when a chain or collider is malformed.
    pub fn try_new(
        skeleton: &Skeleton,
        chains: &[SpringChainDesc],
        colliders: &[ColliderDesc],
    ) -> Result<Self, SpringError> {
        Self::try_with_settings(skeleton, chains, colliders, SpringSettings::default())
    }

    /// As [`SpringBoneStage::try_new`] with `settings`.
    ///
    /// # Errors
    /// As [`SpringBoneStage::try_new`], and [`SpringError::InvalidSetting`].
    pub fn try_with_settings(
        skeleton: &Skeleton,
        chains: &[SpringChainDesc],
        colliders: &[ColliderDesc],
        settings: SpringSettings,
    ) -> Result<Self, SpringError> {
        settings.validate()?;
        let len = skeleton.len();
        let check = |bone: usize| {
            if bone < len {
                Ok(())
            } else {
                Err(SpringError::BoneOutOfRange { bone, len })
            }
        };
        for c in colliders {
            if let Some(b) = c.bone {
                check(b)?;
            }
            validate_shape(&c.shape)?;
        }
        let rest = skeleton.rest_model_transforms();
        let mut rts = Vec::with_capacity(chains.len());
        let mut bones = Vec::new();
        for (ci, desc) in chains.iter().enumerate() {
            let simulated = match desc.tail {
                SpringTail::LastJoint => desc.joints.len().saturating_sub(1),
                SpringTail::Virtual { length } => {
                    if !(length > 0.0 && length.is_finite()) {
                        return Err(SpringError::InvalidSetting("tail length"));
                    }
                    desc.joints.len()
                }
            };
            if simulated == 0 {
                return Err(SpringError::EmptyChain(ci));
            }
            if !(0.0..=1.0).contains(&desc.weight) {
                return Err(SpringError::InvalidSetting("weight"));
            }
            for (k, j) in desc.joints.iter().enumerate() {
                check(j.bone)?;
                validate_joint(j)?;
                if k > 0 && skeleton.parent(j.bone) != Some(desc.joints[k - 1].bone) {
                    return Err(SpringError::NotAChild {
                        chain: ci,
                        joint: k,
                    });
                }
            }
            for &c in &desc.colliders {
                if c >= colliders.len() {
                    return Err(SpringError::UnknownCollider {
                        chain: ci,
                        collider: c,
                    });
                }
            }
            if let Some(c) = desc.center {
                check(c)?;
                if skeleton.is_ancestor_or_self(desc.joints[0].bone, c) {
                    return Err(SpringError::CenterInChain(ci));
                }
            }
            let mut joints = Vec::with_capacity(simulated);
            let mut rest_length = 0.0;
            for k in 0..simulated {
                let j = desc.joints[k];
                let bone_rest = rest[j.bone];
                let (virtual_tail, next, world_len) = if k + 1 < desc.joints.len() {
                    let next = desc.joints[k + 1].bone;
                    let off = skeleton.bones()[next].rest.translation;
                    (None, next, (bone_rest.scale * off).length())
                } else {
                    // (Only a virtual tail simulates the last joint.)
                    let SpringTail::Virtual { length } = desc.tail else {
                        return Err(SpringError::EmptyChain(ci));
                    };
                    // Continue the parent → bone rest direction, in the bone's own frame.
                    let from = skeleton
                        .parent(j.bone)
                        .map_or(Vec3::ZERO, |p| rest[p].translation);
                    let dir_model = (bone_rest.translation - from).try_normalize();
                    let dir_model = match dir_model {
                        Some(d) => d,
                        None if k > 0 => {
                            // (The previous joint's rest direction.)
                            let p = rest[desc.joints[k - 1].bone].translation;
                            (bone_rest.translation - p).try_normalize().ok_or(
                                SpringError::ZeroLength {
                                    chain: ci,
                                    joint: k,
                                },
                            )?
                        }
                        None => {
                            return Err(SpringError::ZeroLength {
                                chain: ci,
                                joint: k,
                            });
                        }
                    };
                    // Model length `length`: the local offset divided by the bone's scale.
                    let local = bone_rest.rotation.inverse() * dir_model * length;
                    let local = local / bone_rest.scale;
                    (Some(local), j.bone, length)
                };
                if world_len.is_nan() || world_len <= 1e-9 || !world_len.is_finite() {
                    return Err(SpringError::ZeroLength {
                        chain: ci,
                        joint: k,
                    });
                }
                rest_length += world_len;
                joints.push(JointRt {
                    bone: j.bone,
                    virtual_tail,
                    next,
                    hit_radius: j.hit_radius,
                    stiffness: j.stiffness,
                    gravity: j.gravity_dir.normalize_or_zero() * j.gravity_power,
                    drag: j.drag_force,
                    keep: 1.0 - j.drag_force,
                });
                bones.push(j.bone);
            }
            rts.push(ChainRt {
                particles: vec![SpringParticle::default(); joints.len()],
                rotations: vec![Quat::IDENTITY; joints.len()],
                joints,
                parent: skeleton.parent(desc.joints[0].bone),
                center: desc.center,
                colliders: desc.colliders.clone(),
                weight: desc.weight,
                last_parent: BoneTransform::IDENTITY,
                rest_length,
            });
        }
        let mut sorted = bones.clone();
        sorted.sort_unstable();
        for w in sorted.windows(2) {
            if w[0] == w[1] {
                return Err(SpringError::SharedBone(w[0]));
            }
        }
        let longest = rts.iter().map(|c| c.rest_length).fold(0.0, f32::max);
        Ok(Self {
            dt: 1.0 / REFERENCE_RATE,
            model_to_world: BoneTransform::IDENTITY,
            teleport_distance: settings
                .teleport_distance
                .unwrap_or(TELEPORT_SPANS * longest),
            settings,
            resolved: Vec::with_capacity(colliders.len()),
            colliders: colliders.to_vec(),
            chains: rts,
            bones: sorted,
            last_model_to_world: None,
            fresh: true,
            keep_step: 1.0 / REFERENCE_RATE,
        })
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &SpringSettings {
        &self.settings
    }

    /// Forgets the simulation: the next solve starts every tail at rest in the animated pose
    /// (after a teleport the host knows of, a cut, or re-enabling the stage).
    pub fn reset(&mut self) {
        self.fresh = true;
    }

    /// Number of chains.
    #[must_use]
    pub fn chain_count(&self) -> usize {
        self.chains.len()
    }

    /// Chain `chain`'s particles, one per simulated joint, in its simulation space (the world,
    /// or its centre bone's frame). Empty for an unknown chain.
    #[must_use]
    pub fn particles(&self, chain: usize) -> &[SpringParticle] {
        self.chains.get(chain).map_or(&[], |c| &c.particles)
    }

    /// Chain `chain`'s simulated bones, root first (its last listed joint is not among them
    /// with [`SpringTail::LastJoint`]). Empty for an unknown chain.
    pub fn chain_bones(&self, chain: usize) -> impl Iterator<Item = usize> + '_ {
        self.chains
            .get(chain)
            .into_iter()
            .flat_map(|c| c.joints.iter().map(|j| j.bone))
    }

    /// Chain `chain`'s weight (see [`SpringChainDesc::weight`]); values are clamped to
    /// `[0, 1]`, NaN counts as 0.
    pub fn set_weight(&mut self, chain: usize, weight: f32) {
        if let Some(c) = self.chains.get_mut(chain) {
            c.weight = if weight.is_nan() {
                0.0
            } else {
                weight.clamp(0.0, 1.0)
            };
        }
    }

    /// The colliders.
    #[must_use]
    pub fn colliders(&self) -> &[ColliderDesc] {
        &self.colliders
    }

    /// Moves collider `index` (e.g. a hand the host animates), keeping its bone. Ignored for
    /// an unknown index or a malformed shape.
    pub fn set_collider_shape(&mut self, index: usize, shape: ColliderShape) {
        if validate_shape(&shape).is_ok()
            && let Some(c) = self.colliders.get_mut(index)
        {
            c.shape = shape;
        }
    }

    /// The model → simulation-space transform of chain `c` this frame.
    fn sim_space(
        &self,
        chain: &ChainRt,
        buffer: &mut PoseBuffer,
        skeleton: &Skeleton,
    ) -> BoneTransform {
        match chain.center {
            // The centre frame: model → centre is the centre's model transform inverted.
            Some(c) => buffer.model_transform(skeleton, c).inverse(),
            None => self.model_to_world,
        }
    }
}

fn validate_joint(j: &SpringJointDesc) -> Result<(), SpringError> {
    if !(j.hit_radius >= 0.0 && j.hit_radius.is_finite()) {
        return Err(SpringError::InvalidSetting("hit_radius"));
    }
    if !(j.stiffness >= 0.0 && j.stiffness.is_finite()) {
        return Err(SpringError::InvalidSetting("stiffness"));
    }
    if !(j.gravity_power >= 0.0 && j.gravity_power.is_finite()) {
        return Err(SpringError::InvalidSetting("gravity_power"));
    }
    if !j.gravity_dir.is_finite() || (j.gravity_power > 0.0 && j.gravity_dir.length() < 1e-9) {
        return Err(SpringError::InvalidSetting("gravity_dir"));
    }
    if !(0.0..=1.0).contains(&j.drag_force) {
        return Err(SpringError::InvalidSetting("drag_force"));
    }
    Ok(())
}

fn validate_shape(s: &ColliderShape) -> Result<(), SpringError> {
    let ok = match *s {
        ColliderShape::Sphere { offset, radius }
        | ColliderShape::InsideSphere { offset, radius } => {
            offset.is_finite() && radius >= 0.0 && radius.is_finite()
        }
        ColliderShape::Capsule {
            offset,
            tail,
            radius,
        }
        | ColliderShape::InsideCapsule {
            offset,
            tail,
            radius,
        } => offset.is_finite() && tail.is_finite() && radius >= 0.0 && radius.is_finite(),
        ColliderShape::Plane { offset, normal } => {
            offset.is_finite() && normal.is_finite() && normal.length() > 1e-9
        }
    };
    if ok {
        Ok(())
    } else {
        Err(SpringError::InvalidSetting("collider shape"))
    }
}

/// The largest axis scale of a transform (a radius under non-uniform scale is bounded by it).
fn max_scale(t: &BoneTransform) -> f32 {
    t.scale.abs().max_element()
}

/// The closest point to `p` on the segment `a`–`b`.
#[inline]
fn closest_on_segment(a: Vec3, b: Vec3, p: Vec3) -> Vec3 {
    let ab = b - a;
    let d = ab.length_squared();
    if d <= 0.0 {
        return a;
    }
    a + ab * ((p - a).dot(ab) / d).clamp(0.0, 1.0)
}

/// Pushes `p` (a sphere of radius `hit`) out of (or into) a shape.
#[inline]
fn collide(shape: &Shape, hit: f32, p: Vec3) -> Vec3 {
    let outside = |c: Vec3, r: f32| {
        let d = p - c;
        let min = r + hit;
        let l2 = d.length_squared();
        if l2 >= min * min {
            p
        } else if l2 > 0.0 {
            c + d * (min / l2.sqrt())
        } else {
            p
        }
    };
    let inside = |c: Vec3, r: f32| {
        let d = p - c;
        let max = (r - hit).max(0.0);
        let l2 = d.length_squared();
        if l2 <= max * max {
            p
        } else {
            c + d * (max / l2.sqrt())
        }
    };
    match *shape {
        Shape::Sphere(c, r) => outside(c, r),
        Shape::Capsule(a, b, r) => outside(closest_on_segment(a, b, p), r),
        Shape::InsideSphere(c, r) => inside(c, r),
        Shape::InsideCapsule(a, b, r) => inside(closest_on_segment(a, b, p), r),
        Shape::Plane(o, n) => {
            let d = (p - o).dot(n) - hit;
            if d >= 0.0 { p } else { p - n * d }
        }
    }
}

/// Where `p`, on the sphere of radius `length` around `origin`, penetrates `shape` (beyond
/// round-off), the nearest point of that sphere on the shape's surface (widened by `hit`): the
/// circle where the two surfaces meet, on the side of `p`. Unchanged when no such circle
/// exists (the bone cannot leave the shape) or `p` is clear.
fn settle(shape: &Shape, hit: f32, origin: Vec3, length: f32, p: Vec3) -> Vec3 {
    /// Allowed overlap before settling: f32 round-off of the projections.
    const SLACK: f32 = 1e-6;
    // (centre, radius, whether the tail must stay outside)
    let (c, r, outside) = match *shape {
        Shape::Sphere(c, r) => (c, r + hit, true),
        Shape::Capsule(a, b, r) => (closest_on_segment(a, b, p), r + hit, true),
        Shape::InsideSphere(c, r) => (c, (r - hit).max(0.0), false),
        Shape::InsideCapsule(a, b, r) => (closest_on_segment(a, b, p), (r - hit).max(0.0), false),
        Shape::Plane(q, n) => {
            let s = (q - origin).dot(n) + hit;
            if (p - origin).dot(n) >= s - SLACK || s.abs() > length {
                return p;
            }
            let centre = origin + n * s;
            let rad = (length * length - s * s).max(0.0).sqrt();
            let w = (p - centre) - n * (p - centre).dot(n);
            let w = w
                .try_normalize()
                .unwrap_or_else(|| n.any_orthonormal_vector());
            return centre + w * rad;
        }
    };
    let d = p.distance(c);
    let bad = if outside {
        d < r - SLACK
    } else {
        d > r + SLACK
    };
    if !bad {
        return p;
    }
    let to_c = c - origin;
    let dist = to_c.length();
    if dist <= 1e-9 {
        return p;
    }
    let u = to_c / dist;
    // The circle: along u at `a` from the origin, radius `h`.
    let a = (length * length - r * r + dist * dist) / (2.0 * dist);
    let h2 = length * length - a * a;
    if h2.is_nan() || h2 < 0.0 {
        return p;
    }
    let v = p - origin;
    let w = v - u * v.dot(u);
    let w = w
        .try_normalize()
        .unwrap_or_else(|| u.any_orthonormal_vector());
    origin + u * a + w * h2.sqrt()
}

/// `origin + (p − origin)` scaled to `length`; `fallback` (a point at that length) when `p`
/// sits on the origin.
#[inline]
fn keep_length(origin: Vec3, p: Vec3, length: f32, fallback: Vec3) -> Vec3 {
    let d = p - origin;
    let l2 = d.length_squared();
    if l2 > 1e-24 && l2.is_finite() {
        origin + d * (length / l2.sqrt())
    } else {
        fallback
    }
}

/// Interpolates two transforms (translation lerp, rotation slerp, scale lerp).
fn lerp_transform(a: &BoneTransform, b: &BoneTransform, t: f32) -> BoneTransform {
    BoneTransform {
        translation: a.translation.lerp(b.translation, t),
        rotation: a.rotation.slerp(b.rotation, t),
        scale: a.scale.lerp(b.scale, t),
    }
}

impl Stage for SpringBoneStage {
    fn bones(&self) -> &[usize] {
        &self.bones
    }

    #[allow(
        clippy::too_many_lines,
        reason = "one step of the simulation, read top to bottom"
    )]
    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        if !self.model_to_world.is_finite() {
            return Err(StackError::NonFinite(NonFinite::ModelFrame));
        }
        // Frame time: hostile values advance nothing or are capped.
        let dt = if self.dt > 0.0 {
            self.dt.min(MAX_FRAME_TIME)
        } else {
            0.0
        };
        // Teleport detection on the model frame.
        if let Some(last) = self.last_model_to_world {
            let moved = last.translation.distance(self.model_to_world.translation);
            let turned = last.rotation.angle_between(self.model_to_world.rotation);
            if moved > self.teleport_distance || turned > self.settings.teleport_angle {
                self.fresh = true;
            }
        }
        self.last_model_to_world = Some(self.model_to_world);
        let steps = if dt > 0.0 {
            // (dt ≤ MAX_FRAME_TIME and max_substep > 0: a small count.)
            (dt / self.settings.max_substep).ceil().max(1.0) as u32
        } else {
            0
        };
        let h = if steps > 0 { dt / steps as f32 } else { 0.0 };
        let h0 = 1.0 / REFERENCE_RATE;
        let accel = h * h / h0;
        if steps > 0 && h != self.keep_step {
            // (A new step length: the drag per step, once, not a `powf` per joint per step.)
            self.keep_step = h;
            for j in self.chains.iter_mut().flat_map(|c| c.joints.iter_mut()) {
                j.keep = (1.0 - j.drag).powf(h / h0);
            }
        }
        let fresh = self.fresh;
        self.fresh = false;
        let mut max_stretch = 0.0f32;
        let passes = self.settings.collision_passes;
        let colliders = &self.colliders;
        let chain_count = self.chains.len();
        for ci in 0..chain_count {
            let to_sim = {
                let chain = &self.chains[ci];
                self.sim_space(chain, buffer, skeleton)
            };
            if !to_sim.is_finite() {
                return Err(StackError::NonFinite(NonFinite::InputPose));
            }
            let world_rot_inv = match self.chains[ci].center {
                Some(c) => {
                    buffer.model_transform(skeleton, c).rotation.inverse()
                        * self.model_to_world.rotation.inverse()
                }
                None => Quat::IDENTITY,
            };
            // Colliders in simulation space (scratch: no allocation after set-up).
            self.resolved.clear();
            for &k in &self.chains[ci].colliders {
                let c = colliders[k];
                let m = buffer.model_transform_or_identity(skeleton, c.bone);
                let t = to_sim.mul_transform(&m);
                let s = max_scale(&t);
                self.resolved.push(match c.shape {
                    ColliderShape::Sphere { offset, radius } => {
                        Shape::Sphere(t.transform_point(offset), radius * s)
                    }
                    ColliderShape::InsideSphere { offset, radius } => {
                        Shape::InsideSphere(t.transform_point(offset), radius * s)
                    }
                    ColliderShape::Capsule {
                        offset,
                        tail,
                        radius,
                    } => Shape::Capsule(
                        t.transform_point(offset),
                        t.transform_point(tail),
                        radius * s,
                    ),
                    ColliderShape::InsideCapsule {
                        offset,
                        tail,
                        radius,
                    } => Shape::InsideCapsule(
                        t.transform_point(offset),
                        t.transform_point(tail),
                        radius * s,
                    ),
                    ColliderShape::Plane { offset, normal } => {
                        // Normals transform by the inverse transpose: with scale s, n / s.
                        let n = (t.rotation * (normal / t.scale)).normalize_or_zero();
                        Shape::Plane(t.transform_point(offset), n)
                    }
                });
            }
            let chain = &mut self.chains[ci];
            let parent_model = buffer.model_transform_or_identity(skeleton, chain.parent);
            let parent_now = to_sim.mul_transform(&parent_model);
            let first = fresh || !chain.last_parent.is_finite();
            let parent_before = if first { parent_now } else { chain.last_parent };
            chain.last_parent = parent_now;
            let pose = buffer.pose();
            let scale_of = |bone: usize| skeleton.bones()[bone].rest.scale;
            // Walks the chain under `parent`, stepping the particles by `h` (or only placing
            // the bones toward their tails when `step` is false), writing the simulated
            // model-space (sim-space) rotations into `chain.rotations`.
            let walk = |parent: BoneTransform, step: bool, chain: &mut ChainRt| {
                let mut up = parent;
                for (k, j) in chain.joints.iter().enumerate() {
                    let local = BoneTransform {
                        translation: pose.translations[j.bone],
                        rotation: pose.rotations[j.bone],
                        scale: scale_of(j.bone),
                    };
                    let mut m = up.mul_transform(&local);
                    let offset = j.virtual_tail.unwrap_or(pose.translations[j.next]);
                    let origin = m.translation;
                    let animated = m.transform_point(offset) - origin;
                    let length = animated.length();
                    let dir = animated / length;
                    let p = &mut chain.particles[k];
                    if first || step {
                        // First solve: the tail at the animated pose, at rest (then out of
                        // the colliders); else one Verlet step.
                        let mut next = if first {
                            origin + animated
                        } else {
                            let keep = j.keep;
                            let force = dir * j.stiffness + world_rot_inv * j.gravity;
                            let next = p.tail + (p.tail - p.previous) * keep + force * accel;
                            keep_length(origin, next, length, origin + animated)
                        };
                        let hit = j.hit_radius * max_scale(&m);
                        for _ in 0..passes {
                            for s in &self.resolved {
                                next = collide(s, hit, next);
                            }
                            next = keep_length(origin, next, length, origin + animated);
                        }
                        // A tail the passes left in a collider goes to the nearest point of
                        // the bone's sphere that is out of it (where the two surfaces meet).
                        for s in &self.resolved {
                            next = settle(s, hit, origin, length, next);
                        }
                        p.previous = if first { next } else { p.tail };
                        p.tail = next;
                    }
                    // Point the bone at its tail (shortest arc from the animated direction).
                    let to = (p.tail - origin).try_normalize().unwrap_or(dir);
                    let turn = crate::chain::unit_arc(dir, to);
                    m.rotation = (turn * m.rotation).normalize();
                    chain.rotations[k] = m.rotation;
                    up = m;
                }
            };
            if steps == 0 || first {
                walk(parent_now, false, chain);
            } else {
                for s in 1..=steps {
                    let parent = if s == steps {
                        parent_now
                    } else {
                        lerp_transform(&parent_before, &parent_now, s as f32 / steps as f32)
                    };
                    walk(parent, true, chain);
                }
            }
            // Write: local = parent model rotation⁻¹ · simulated, blended by the weight.
            let mut up = parent_now.rotation;
            let weight = chain.weight;
            for (j, &q) in chain.joints.iter().zip(&chain.rotations) {
                let local = (up.inverse() * q).normalize();
                let (animated, t) = {
                    let pose = buffer.pose();
                    (pose.rotations[j.bone], pose.translations[j.bone])
                };
                let out = if weight >= 1.0 {
                    local
                } else {
                    let local = if local.dot(animated) < 0.0 {
                        -local
                    } else {
                        local
                    };
                    animated.slerp(local, weight).normalize()
                };
                if out.is_finite() {
                    buffer.set_local(j.bone, out, t);
                } else {
                    return Err(StackError::NonFinite(NonFinite::SolvedPose));
                }
                up = q;
            }
            for (p, j) in chain.particles.iter().zip(&chain.joints) {
                let _ = j;
                max_stretch = max_stretch.max((p.tail - p.previous).length());
            }
        }
        Ok(CustomReport {
            converged: true,
            iterations: steps,
            // Largest tail motion of the last step (simulation units): how lively the chains are.
            position_residual: max_stretch,
            angle_residual: 0.0,
        }
        .into())
    }
}
