//! The components users put on entities: [`BoneRef`] (a bone by entity, `Name` or humanoid
//! role), [`IkLimb`] (an analytic two-bone stage driven by a target entity and an optional pole
//! entity), [`IkLimbBatch`] (a run of such limbs solved together), the [`IkDisabled`] marker
//! and the [`IkStatus`] the plugin reports into.

use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::name::Name;
use bevy::ecs::reflect::ReflectComponent;
use bevy::math::Vec3;
use bevy::reflect::prelude::*;
use ik_core::analytic::LimbSettings;
use ik_core::humanoid::HumanoidBone;

use crate::error::IkError;

/// Builder setters of the components: each `name(arg: Type) => field = value;` (with its doc
/// comment) becomes `#[must_use] pub fn name(mut self, arg: Type) -> Self` storing `value` in
/// `self.field` (a path such as `settings.soft_reach` reaches into an embedded settings struct).
macro_rules! builder_setters {
    ($($(#[$attr:meta])* $name:ident($arg:ident: $ty:ty) => $($field:ident).+ = $value:expr;)*) => {
        $(
            $(#[$attr])*
            #[must_use]
            pub fn $name(mut self, $arg: $ty) -> Self {
                self.$($field).+ = $value;
                self
            }
        )*
    };
}
pub(crate) use builder_setters;

pub(crate) mod behaviours;
pub(crate) mod grounding;
pub(crate) mod humanoid;
pub(crate) mod rig;
pub(crate) mod secondary;
pub(crate) mod vr;

/// A bone, given as its entity, as its `Name` (looked up among the descendants of the
/// limb's hierarchy root, which is how glTF bones are found once their scene has spawned), or
/// as a humanoid role (recognised from the bone names under the character, see
/// [`ik_core::humanoid`]).
#[derive(Debug, Clone, PartialEq, Eq, Reflect)]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub enum BoneRef {
    /// The bone entity itself.
    Entity(Entity),
    /// The bone's `Name` (exact match), e.g. `"mixamorig:LeftArm"`.
    Name(String),
    /// The bone playing this humanoid role under the character, e.g.
    /// `BoneRef::Role(HumanoidBone::LeftHand)`.
    Role(#[reflect(ignore, clone, default = "default_role")] HumanoidBone),
}

fn default_role() -> HumanoidBone {
    HumanoidBone::Hips
}

impl From<HumanoidBone> for BoneRef {
    fn from(role: HumanoidBone) -> Self {
        Self::Role(role)
    }
}

impl Default for BoneRef {
    fn default() -> Self {
        Self::Name(String::new())
    }
}

impl From<Entity> for BoneRef {
    fn from(entity: Entity) -> Self {
        Self::Entity(entity)
    }
}

impl From<&str> for BoneRef {
    fn from(name: &str) -> Self {
        Self::Name(name.to_owned())
    }
}

impl From<String> for BoneRef {
    fn from(name: String) -> Self {
        Self::Name(name)
    }
}

impl From<&Name> for BoneRef {
    fn from(name: &Name) -> Self {
        Self::Name(name.as_str().to_owned())
    }
}

/// An analytic two-bone limb (arm or leg): `root` (upper arm / thigh), `mid` (forearm / shin)
/// and `tip` (hand / foot) reach for the `target` entity, bending toward the `pole` entity.
///
/// On its own entity it is a one-stage character (the one-line form). With
/// [`IkStageOf(character)`](crate::IkStageOf) next to it, it is a stage of that character and
/// runs on the pose the earlier stages left (for example after a full-body stage that moved
/// the hips). Bones given by name (or role) are searched among the descendants of
/// [`IkLimb::hierarchy`] (or, when that is `None`, of the character entity — the entity holding
/// the `IkLimb` for a one-stage character); set-up completes once they exist, so it works on
/// glTF scenes that spawn asynchronously. `mid` must be a descendant of `root` and `tip` of `mid`; intermediate bones
/// between them (twist bones in the chain) are carried along unchanged.
///
/// The solved rotations are blended with the animated ones by [`IkLimb::weight`]; with
/// `rotation_weight > 0` the tip also turns toward the target entity's rotation.
///
/// A registered stage kind ([`IkStageComponent`](crate::IkStageComponent), registered by
/// [`IkPlugin`](crate::IkPlugin)): with the plugin, an entity with it gets an [`IkStatus`] and
/// an [`IkCharacter`](crate::IkCharacter).
#[derive(Component, Debug, Clone, PartialEq, Reflect)]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkLimb {
    /// The limb's first bone (upper arm, thigh).
    pub root: BoneRef,
    /// The joint that bends (forearm, shin).
    pub mid: BoneRef,
    /// The end effector (hand, foot).
    pub tip: BoneRef,
    /// Where bones given by name are searched (among this entity and its descendants); `None`
    /// means the entity holding this component.
    pub hierarchy: Option<Entity>,
    /// The entity whose current global position (and rotation, see `rotation_weight`) the tip
    /// reaches for. `None`: the limb is not solved and its status says so.
    pub target: Option<Entity>,
    /// Optional entity the middle joint bends toward (knee / elbow direction). Without one, the
    /// limb uses [`IkLimb::swivel`], or else keeps its animated bend plane.
    pub pole: Option<Entity>,
    /// Without a pole entity: swivel angle (radians) of the bend plane about the root→target
    /// line, measured from the rest bend plane. `None` keeps the animated bend plane.
    pub swivel: Option<f32>,
    /// How far the bend plane turns from the animated one toward the pole's (0–1).
    pub pole_weight: f32,
    /// IK/FK blend: 1 = fully solved, 0 = the animated pose untouched, in between = slerp.
    pub weight: f32,
    /// How much the tip takes the target's rotation (0 = keeps its animated orientation
    /// relative to the forearm, 1 = matches the target entity's global rotation).
    pub rotation_weight: f32,
    /// The core solver's settings: the middle joint's flex range (`flex_min`, `flex_max`,
    /// radians, 0 = straight), the soft-reach band and the bend axis (see
    /// [`LimbSettings`]). A change is applied to the built stage next frame (no rebuild).
    #[reflect(ignore)]
    pub settings: LimbSettings,
}

impl Default for IkLimb {
    fn default() -> Self {
        Self {
            root: BoneRef::default(),
            mid: BoneRef::default(),
            tip: BoneRef::default(),
            hierarchy: None,
            target: None,
            pole: None,
            swivel: None,
            pole_weight: 1.0,
            weight: 1.0,
            rotation_weight: 0.0,
            settings: LimbSettings::default(),
        }
    }
}

impl IkLimb {
    /// A limb of the three bones, with weight 1 and no target yet.
    #[must_use]
    pub fn new(root: impl Into<BoneRef>, mid: impl Into<BoneRef>, tip: impl Into<BoneRef>) -> Self {
        Self {
            root: root.into(),
            mid: mid.into(),
            tip: tip.into(),
            ..Self::default()
        }
    }

    builder_setters! {
        /// Sets the target entity.
        with_target(target: Entity) => target = Some(target);
        /// Sets the pole entity.
        with_pole(pole: Entity) => pole = Some(pole);
        /// Sets the IK/FK blend weight (clamped to `[0, 1]` when used).
        with_weight(weight: f32) => weight = weight;
        /// Sets how much the tip takes the target's rotation (clamped to `[0, 1]` when used).
        with_rotation_weight(weight: f32) => rotation_weight = weight;
        /// Sets the swivel angle used when there is no pole entity.
        with_swivel(angle: f32) => swivel = Some(angle);
    }

    /// Limits the middle joint's flex angle to `[min, max]` radians (0 = straight).
    #[must_use]
    pub fn with_flex_limits(mut self, min: f32, max: f32) -> Self {
        self.settings.flex_min = min;
        self.settings.flex_max = max;
        self
    }

    builder_setters! {
        /// Sets the soft-reach fraction (see [`LimbSettings::soft_reach`]).
        with_soft_reach(fraction: f32) => settings.soft_reach = fraction;
        /// Sets the bend axis (see [`LimbSettings::bend_axis`]).
        with_bend_axis(axis: Vec3) => settings.bend_axis = Some(axis);
        /// Sets every core solver setting at once (see [`IkLimb::settings`]).
        with_settings(settings: LimbSettings) => settings = settings;
        /// Searches bones given by name among `root` and its descendants (e.g. a
        /// `WorldAssetRoot`).
        in_hierarchy(root: Entity) => hierarchy = Some(root);
    }
}

/// A run of independent analytic two-bone limbs (a character's arms and legs) as one stage,
/// solved together by ik-core's [`LimbBatchStage`](ik_core::stack::LimbBatchStage): four limbs
/// per SIMD vector, what the per-limb [`IkLimb`] stages give to the batch kernel's rounding.
///
/// Each limb is described as an [`IkLimb`] is (bones by entity, name or role, target, pole or
/// swivel, weights, [`LimbSettings`]) and keeps its own weight; the stage's
/// [`IkLimbBatch::weight`] blends the whole run. Its [`IkStatus`] is the stage's:
/// [`IkStatus::residuals`] holds one position residual per limb, in order. The limbs must be
/// independent (no limb's bones, or its root's ancestors, written by an earlier limb of the
/// run) and have no bones between root, mid and tip; set-up reports
/// [`IkError::InvalidChain`] otherwise. Every limb needs a target: a limb without one makes
/// the stage report [`IkError::NoTarget`] and leave the pose as it came in. A change of a
/// limb's bones or settings rebuilds the stage (allocates; a two-bone limb has no warm start
/// to lose); targets, poles and weights are read every frame.
///
/// Use it on a stage entity ([`IkStageOf(character)`](crate::IkStageOf)) or on the character
/// entity itself, like [`IkLimb`]:
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_ik::prelude::*;
/// # let mut world = World::new();
/// # let character = world.spawn_empty().id();
/// # let [hand_l, hand_r, foot_l, foot_r] = [(); 4].map(|()| world.spawn_empty().id());
/// let limb = |side: &str, bones: [&str; 3], target| {
///     IkLimb::new(
///         format!("{side}{}", bones[0]),
///         format!("{side}{}", bones[1]),
///         format!("{side}{}", bones[2]),
///     )
///     .with_target(target)
/// };
/// let (arm, leg) = (["Arm", "ForeArm", "Hand"], ["UpLeg", "Leg", "Foot"]);
/// world.spawn((
///     IkLimbBatch::new([
///         limb("mixamorig:Left", arm, hand_l),
///         limb("mixamorig:Right", arm, hand_r),
///         limb("mixamorig:Left", leg, foot_l),
///         limb("mixamorig:Right", leg, foot_r),
///     ]),
///     IkStageOf(character),
/// ));
/// ```
///
/// A registered stage kind, after [`IkLimb`] in precedence (see [`crate::kind`]).
#[derive(Component, Debug, Clone, PartialEq, Reflect)]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkLimbBatch {
    /// The limbs, in the order their residuals are reported.
    pub limbs: Vec<IkLimb>,
    /// IK/FK blend of the whole stage: 1 = solved, 0 = the animated pose untouched.
    pub weight: f32,
}

impl Default for IkLimbBatch {
    fn default() -> Self {
        Self {
            limbs: Vec::new(),
            weight: 1.0,
        }
    }
}

impl IkLimbBatch {
    /// A stage of these limbs, at weight 1.
    #[must_use]
    pub fn new(limbs: impl IntoIterator<Item = IkLimb>) -> Self {
        Self {
            limbs: limbs.into_iter().collect(),
            ..Self::default()
        }
    }
}

/// Marker: while present, the stage on this entity (or, on a character entity, the whole
/// character) is not solved and its bones get their input pose back (like avian's
/// `RigidBodyDisabled`).
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq, Reflect)]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkDisabled;

/// What happened in the last solve of the stage on this entity (limb, rig, full body or
/// custom), or in the set-up of the [`IkHumanoid`](crate::IkHumanoid) on it. Written by the
/// plugin, and only when a value changed.
///
/// Residuals are in the skeleton's model space (the space of the chain root's parent), which
/// is world units for an unscaled character.
#[derive(Component, Debug, Clone, Default, PartialEq, Reflect)]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkStatus {
    /// Set-up is complete: every bone was found and the chain was accepted.
    pub ready: bool,
    /// The last frame wrote a solved pose (false for a stage faded out to weight 0: it is not
    /// solved; the other fields keep its last solve's values).
    pub solved: bool,
    /// Every goal was reached within the solver's tolerance in the last solve.
    pub converged: bool,
    /// Solver iterations used in the last solve (1 for the analytic solver).
    pub iterations: u32,
    /// Largest distance between an end effector and its target after the last solve (before
    /// the IK/FK blend).
    pub position_residual: f32,
    /// Largest angle (radians) between an end effector's rotation and its target rotation,
    /// for goals that constrain rotation.
    pub rotation_residual: f32,
    /// Per-goal position residuals, in goal order (one entry for a limb).
    pub residuals: Vec<f32>,
    /// Full-body humanoid with [`IkBalance`](crate::IkBalance) on: ground-plane distance
    /// between the centre of mass and the support point after the last solve (0 otherwise).
    #[cfg_attr(feature = "serialize", serde(default))]
    pub center_of_mass_residual: f32,
    /// The stage's goals measured on the character's final pose, after every later stage of
    /// its stack (the pose its bones show): the largest position error, model units. Equal
    /// to [`IkStatus::position_residual`] unless a later stage moved the goals (then
    /// [`IkStatus::goals_moved`]); for a stage without measurable goals, its own figure.
    #[cfg_attr(feature = "serialize", serde(default))]
    pub final_position_residual: f32,
    /// As [`IkStatus::final_position_residual`], for rotation goals (radians).
    #[cfg_attr(feature = "serialize", serde(default))]
    pub final_rotation_residual: f32,
    /// A later stage of the character moved this stage's goals away: what this stage reached
    /// ([`IkStatus::converged`], [`IkStatus::position_residual`]) is not what the character
    /// shows. With [`IkKeepGoals`] on the stage, the stack re-solved it on the final pose and
    /// this says it still could not keep them.
    #[cfg_attr(feature = "serialize", serde(default))]
    pub goals_moved: bool,
    /// The problem that stopped the last solve, if any (`None` when it solved).
    pub last_error: Option<IkError>,
    /// Bones or goals that set-up could not map (auto-mapping reports names here).
    pub unmapped: Vec<String>,
}

/// Marker on a stage entity: the later stages of its character must keep this stage's goals
/// (a reaching hand stays on the cup through a look-at's spine turn). When a later stage moved
/// them, the stack solves this stage once more on the final pose; [`IkStatus::goals_moved`]
/// says whether that still could not keep them. Without it, the status only reports the move.
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq, Reflect)]
#[reflect(Component, Default, Debug)]
pub struct IkKeepGoals;

/// Opt-in timing of one character's IK. Insert it on an
/// [`IkCharacter`](crate::IkCharacter)'s entity (the character root: the entity of its
/// [`IkHumanoid`](crate::IkHumanoid), or of a one-stage [`IkLimb`]) and the plugin writes, every
/// frame the character is solved (not while it has [`IkDisabled`]), how long its own work took: reading its pose and targets,
/// solving its stack and choosing the bones to write, timed inside the task that ran it.
///
/// This is the character's own cost, without the rest of [`IkSystems::Solve`](crate::IkSystems)
/// (scheduling, the other characters solved beside it) — what a per-character readout in a
/// game's debug panel wants. It is wall time on the thread that ran the task: a thread
/// preempted mid-solve (a loaded machine) counts the wait. Characters without it are not timed
/// (two clock reads per character and frame are not free in a crowd).
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Reflect)]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkSolveTime {
    /// The last frame's time (zero until the character was solved once).
    pub last: core::time::Duration,
}
