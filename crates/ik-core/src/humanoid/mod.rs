//! Humanoid rigs: the humanoid bone roles ([`HumanoidBone`]), recognising them from bone names
//! in common conventions ([`HumanoidMap::from_skeleton`]), anatomical default limits
//! ([`HumanoidLimits`]) and masses ([`HumanoidMasses`]) derived from the rig, the full-body
//! solver ([`FullBodySolver`]; method, hybrid-vs-Jacobian measurements: [`solver`]). The
//! procedurally built test rigs are the workspace crate `ik-test-rigs` (not published).
//!
//! # Bone names
//!
//! [`HumanoidBone::from_bone_name`] is case- and separator-insensitive. A name is split into
//! words at `:` `_` `.` `-` `|` spaces, camelCase humps and letter/digit boundaries; a namespace
//! before the last `:`, the prefixes `mixamorig`, `DEF-`, `J_Bip_`, `Bip01`, `CC_Base_`, `b_`,
//! `Armature` and the exporter suffix `_Armature` (Blender's VRM 0.x export:
//! `upper_arm.l_Armature`, `pelvis_Armature`) are dropped; `l`/`left`/`r`/`right` (anywhere) give the side and `C` marks the centre line; a
//! trailing number is kept apart. The remaining words, glued together, must be *exactly* one of:
//!
//! | role | centre / per side words |
//! |---|---|
//! | hips | `hips` `hip` `pelvis` |
//! | spine (any number) | `spine` `abdomen` `torso` `waist` |
//! | chest, upper chest | `chest` `thorax`; `upperchest` |
//! | neck, head | `neck`; `head` |
//! | shoulder (clavicle) | `shoulder` `clavicle` `collar` `collarbone` |
//! | upper arm | `upperarm` `arm` `uparm` |
//! | lower arm | `lowerarm` `forearm` `elbow` |
//! | forearm twist | `lowerarmtwist` `forearmtwist` `lowerarmroll` `forearmroll` |
//! | hand | `hand` `wrist` `palm` |
//! | upper leg | `upperleg` `upleg` `thigh` `hip` (with a side) |
//! | lower leg | `lowerleg` `leg` `shin` `calf` `knee` |
//! | foot | `foot` `ankle` |
//! | toes | `toes` `toe` `toebase` `ball` |
//!
//! So `mixamorig:LeftForeArm`, `J_Bip_L_LowerArm`, `DEF-forearm.L`, `lowerarm_l`,
//! `LeftLowerArm` and `L_Forearm` are all the left lower arm, while `LeftHandIndex1`
//! (`handindex`), `mixamorig:LeftToe_End` (`toeend`), `upperarm_twist_01_l` and `ORG-hand.L`
//! are nothing. Mixamo's `LeftLeg` is the lower leg (its thigh is `LeftUpLeg`).
//!
//! Spine numbering differs between conventions (Mixamo `Spine`/`Spine1`/`Spine2`, Unreal
//! `spine_01`…`spine_05`, Rigify `spine` = pelvis and `spine.004` = neck), so the chest and upper
//! chest are assigned from the hierarchy by [`HumanoidMap::from_skeleton`], never from numbers.
//!
//! # Control bones, mesh nodes, detached feet, and the report
//!
//! Rigs exported with their control rig, or as a scene graph, carry several bones per name:
//! an upper-case `HEAD` control under the root, IK hand controls, mesh nodes named like their
//! joints. [`HumanoidMap::from_skeleton`] takes the bone on the chain (below its parent role's
//! bone), then a skinned one when the caller says which bones are skinned
//! ([`HumanoidMap::from_skeleton_with`], [`MappingOptions::with_skinned`]), then the one
//! nearest the root, with a name not in capitals only, with children.
//!
//! Quaternius exports parent the feet to the root as IK controls (`Foot.L` beside `Body`, not
//! below `LowerLeg.L`). Such a foot is never taken: the lower leg's end bone (`LowerLeg.L_end`)
//! plays the foot when the rig has one ([`MappingSource::LowerLegEnd`]); otherwise the foot is
//! reported unmapped with [`UnmappedReason::DetachedControlBone`], and
//! [`HumanoidMap::lower_leg_ends_for_detached_feet`] makes end bones to append so that the rig
//! maps and solves; the [`DetachedFeet`] stage then moves the detached foot bones along.
//!
//! A rig that carries its own humanoid table (a VRM file's `humanoid.humanBones`) is mapped
//! from it with [`HumanoidMap::from_table`] ([`HumanoidBone::from_vrm_name`] reads its keys);
//! names and the hierarchy only fill what the table leaves out.
//!
//! [`MappingReport`] lists every role: mapped (bone, name, [`MappingSource`]) or not (and why:
//! [`UnmappedReason`]), and every bone whose name named a role but was passed over (and why:
//! [`PassedOverReason`]). Its `Display` form is a readable multi-line report for a UI or a log;
//! [`MappingReport::summary`] is one line.
//!
//! # Limits and axes
//!
//! Limits are relative to each bone's rest rotation (see [`crate::limits`]). Twist axes are rest
//! bone directions derived from the skeleton; swing and hinge axes come from the [`BodyFrame`]
//! (up = hips → head, left = right → left limbs, forward = left × up), so the defaults are
//! anatomical on a rig whose bones point along +Y, +X, −Z or anything else.

mod anatomy;
mod bones;
mod detached_feet;
mod map;
mod names;
pub mod solver;
// The workspace's test rigs (crate `ik-test-rigs`), compiled into this crate's own unit tests
// only: a dev-dependency on that crate would give them a second copy of this crate's types.
#[cfg(test)]
#[path = "../../../ik-test-rigs/src/rigs.rs"]
#[allow(
    dead_code,
    reason = "the whole rig set is compiled; the unit tests use a few rigs"
)]
mod test_rig;

pub use anatomy::{
    BallRangeDeg, BodyFrame, HumanoidLimits, HumanoidMasses, de_leva_com_ratio, de_leva_fraction,
    default_ball_range, default_hinge_range,
};
pub use bones::{HumanoidBone, Side};
pub use detached_feet::DetachedFeet;
// Name recognition the behaviours reuse (eyes, twist helpers).
pub use map::{
    HumanoidMap, MappingOptions, MappingReport, MappingSource, PassedOver, PassedOverReason,
    RoleMapping, UnmappedReason, UnmappedRole,
};
pub(crate) use names::{is_twist_helper as is_twist_bone_name, words as bone_name_words};
pub(crate) use solver::onto_bound;
pub use solver::{
    CenterOfMassGoal, DEFAULT_MAX_TURN, Effector, EffectorGoal, FullBodyGoals, FullBodyReport,
    FullBodyScratch, FullBodySettings, FullBodySolver, GoalFrame, GoalResidual, LookAtGoal,
    PostureReference,
};
#[cfg(test)]
pub(crate) use test_rig::{RestAxes, RigConvention, random_pose_within_limits, test_rig};

use thiserror::Error;

use crate::skeleton::SkeletonError;

/// Errors from setting up a humanoid rig.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum HumanoidError {
    /// A required role has no bone.
    #[error("humanoid bone `{0}` is not mapped")]
    MissingBone(HumanoidBone),
    /// A mapped bone index is outside the skeleton.
    #[error("humanoid bone `{role}` maps to index {index}, but the skeleton has {len} bones")]
    BoneOutOfRange {
        /// The role.
        role: HumanoidBone,
        /// The bad index.
        index: usize,
        /// Number of bones.
        len: usize,
    },
    /// A role's bone is not below its parent role's bone.
    #[error("humanoid bone `{role}` is not a descendant of `{parent}`")]
    BadHierarchy {
        /// The role.
        role: HumanoidBone,
        /// Its mapped parent role.
        parent: HumanoidBone,
    },
    /// A mapped bone has no usable rest direction (zero length, no child).
    #[error("humanoid bone `{0}` has zero length in the rest pose")]
    ZeroLengthBone(HumanoidBone),
    /// Hips, head and limbs do not span a body frame (all on one line).
    #[error("the rest pose's hips, head and limbs do not define up/left/forward directions")]
    DegenerateBodyFrame,
    /// A role's joint limit is malformed (see [`crate::limits::JointLimit::validate`]).
    #[error("the joint limit of `{role}` is malformed: {error}")]
    InvalidLimit {
        /// The role.
        role: HumanoidBone,
        /// What is wrong with its limit.
        error: crate::limits::LimitError,
    },
    /// A goal has a NaN or infinite component.
    #[error("a full-body goal is not finite")]
    NonFiniteGoal,
    /// An effector goal's [`GoalFrame`] cannot be used: the pelvis goal in
    /// another frame, a frame bone out of range or at/below the effector's own bone, or an
    /// effector frame whose own goal is relative (one level only).
    #[error("the goal of `{0:?}` is relative to a frame that cannot carry it")]
    InvalidGoalFrame(Effector),
    /// A skeleton or pose error.
    #[error(transparent)]
    Skeleton(#[from] SkeletonError),
}
