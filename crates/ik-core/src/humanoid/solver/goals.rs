//! The goal set ([`FullBodyGoals`]), the settings ([`FullBodySettings`]) and the report
//! ([`FullBodyReport`]) of the full-body solver.

use super::*;

/// The frame an [`EffectorGoal`] is expressed in.
///
/// A goal relative to another bone is a *relative task* of the same solve: its target moves
/// with that bone while the solver moves it (the Jacobian rows are the difference of the two
/// bones' Jacobians, and the analytic finish closes the limb onto where the anchor ended up),
/// so a left hand held on a rifle that the right hand carries stays on it in the same frame —
/// no second pass, no one-frame lag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum GoalFrame {
    /// Model space (the skeleton's root frame).
    #[default]
    Model,
    /// The frame of another effector's bone (e.g. the left hand relative to the right hand
    /// that holds a two-handed prop). That effector's own goal must be in [`GoalFrame::Model`].
    Effector(Effector),
    /// The frame of a bone by index (a prop bone under a hand, a weapon bone, the chest); not
    /// the effector's own bone or a bone below it.
    Bone(usize),
}

/// A position and orientation goal for one effector bone's origin and rotation, in model space
/// or relative to another bone ([`EffectorGoal::frame`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EffectorGoal {
    /// Target position of the bone's origin, in [`EffectorGoal::frame`] (model space by
    /// default).
    pub position: Vec3,
    /// Target rotation of the bone, in [`EffectorGoal::frame`].
    pub rotation: Quat,
    /// Weight of the position rows (0 ignores the position).
    pub position_weight: f32,
    /// Weight of the orientation rows (0 ignores the orientation).
    pub rotation_weight: f32,
    /// Whether the goal takes part at all.
    pub enabled: bool,
    /// Priority level, 0 first: a goal never gives way to one with a larger number (strict
    /// null-space priority in the Jacobian). Equal levels trade off by weight.
    pub priority: u8,
    /// The frame `position` and `rotation` are in (see [`GoalFrame`]; the pelvis goal must be
    /// in model space).
    #[cfg_attr(feature = "serde", serde(default))]
    pub frame: GoalFrame,
}

impl Default for EffectorGoal {
    fn default() -> Self {
        Self::DISABLED
    }
}

impl EffectorGoal {
    /// A disabled goal.
    pub const DISABLED: Self = Self {
        position: Vec3::ZERO,
        rotation: Quat::IDENTITY,
        position_weight: 1.0,
        rotation_weight: 1.0,
        enabled: false,
        priority: 0,
        frame: GoalFrame::Model,
    };

    /// An enabled 6D goal with unit weights.
    #[must_use]
    pub const fn new(position: Vec3, rotation: Quat) -> Self {
        Self {
            position,
            rotation,
            position_weight: 1.0,
            rotation_weight: 1.0,
            enabled: true,
            priority: 0,
            frame: GoalFrame::Model,
        }
    }

    /// The same goal expressed in `frame`: `position` and `rotation` are then read in that
    /// bone's frame (e.g. the left hand's grip on a rifle, relative to the right hand).
    #[must_use]
    pub const fn in_frame(mut self, frame: GoalFrame) -> Self {
        self.frame = frame;
        self
    }

    /// An enabled position-only goal.
    #[must_use]
    pub const fn position(position: Vec3) -> Self {
        Self {
            rotation_weight: 0.0,
            ..Self::new(position, Quat::IDENTITY)
        }
    }

    pub(super) fn is_finite(&self) -> bool {
        self.position.is_finite()
            && self.rotation.is_finite()
            && self.position_weight.is_finite()
            && self.rotation_weight.is_finite()
    }

    pub(super) fn wants_position(&self) -> bool {
        self.enabled && self.position_weight > 0.0
    }

    pub(super) fn wants_rotation(&self) -> bool {
        self.enabled && self.rotation_weight > 0.0
    }
}

/// Point the head's face direction (the body's forward in the rest pose) at a model-space point.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LookAtGoal {
    /// The point to look at, model space.
    pub target: Vec3,
    /// Weight of the look-at rows.
    pub weight: f32,
    /// Whether the goal takes part.
    pub enabled: bool,
    /// Priority level, as [`EffectorGoal::priority`].
    pub priority: u8,
}

/// Keep the centre of mass over a support point: its projection on the ground plane (normal to
/// the rest body's up direction) should match `target`'s.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CenterOfMassGoal {
    /// The support point (for example between the feet), model space; only its ground-plane
    /// components matter.
    pub target: Vec3,
    /// Weight of the centre-of-mass rows.
    pub weight: f32,
    /// Whether the goal takes part.
    pub enabled: bool,
    /// Priority level, as [`EffectorGoal::priority`].
    pub priority: u8,
}

/// `Default` of the point goals ([`LookAtGoal`], [`CenterOfMassGoal`]): off, at the origin,
/// full weight, priority level 0.
macro_rules! point_goal_default {
    ($($goal:ty),+) => {
        $(impl Default for $goal {
            fn default() -> Self {
                Self {
                    target: Vec3::ZERO,
                    weight: 1.0,
                    enabled: false,
                    priority: 0,
                }
            }
        })+
    };
}
point_goal_default!(LookAtGoal, CenterOfMassGoal);

/// Which effector a residual or goal belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Effector {
    /// The left hand bone.
    LeftHand,
    /// The right hand bone.
    RightHand,
    /// The left foot bone.
    LeftFoot,
    /// The right foot bone.
    RightFoot,
    /// The hips bone.
    Pelvis,
}

impl Effector {
    /// All effectors, in goal order.
    pub const ALL: [Self; 5] = [
        Self::LeftHand,
        Self::RightHand,
        Self::LeftFoot,
        Self::RightFoot,
        Self::Pelvis,
    ];

    /// The humanoid role of the effector bone.
    #[must_use]
    pub const fn bone(self) -> B {
        match self {
            Self::LeftHand => B::LeftHand,
            Self::RightHand => B::RightHand,
            Self::LeftFoot => B::LeftFoot,
            Self::RightFoot => B::RightFoot,
            Self::Pelvis => B::Hips,
        }
    }
}

/// The ready-made full-body goal set: two hands and two feet 6D, the pelvis 6D, a head look-at.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FullBodyGoals {
    /// Goals indexed like [`Effector::ALL`] (left hand, right hand, left foot, right foot, pelvis).
    pub effectors: [EffectorGoal; 5],
    /// The head look-at.
    pub look_at: LookAtGoal,
    /// The optional balance goal (off by default).
    pub center_of_mass: CenterOfMassGoal,
}

impl FullBodyGoals {
    /// The goal of one effector.
    #[must_use]
    pub fn get(&self, e: Effector) -> &EffectorGoal {
        &self.effectors[e as usize]
    }

    /// The goal of one effector, mutably.
    pub fn get_mut(&mut self, e: Effector) -> &mut EffectorGoal {
        &mut self.effectors[e as usize]
    }

    pub(super) fn is_finite(&self) -> bool {
        self.effectors.iter().all(EffectorGoal::is_finite)
            && self.look_at.target.is_finite()
            && self.look_at.weight.is_finite()
            && self.center_of_mass.target.is_finite()
            && self.center_of_mass.weight.is_finite()
    }
}

/// What the posture (null-space) term pulls toward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PostureReference {
    /// The rest pose.
    Rest,
    /// The pose passed in to [`FullBodySolver::solve`] (the animated pose).
    #[default]
    Input,
}

/// Solver settings.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
pub struct FullBodySettings {
    /// Jacobian iteration budget of one [`FullBodySolver::solve`] (one frame of tracking). A
    /// goal it cannot meet in that budget keeps converging over the next frames.
    pub max_iterations: u32,
    /// Jacobian iteration budget of each attempt of [`FullBodySolver::solve_cold`].
    pub cold_iterations: u32,
    /// Extra attempts of [`FullBodySolver::solve_cold`] from perturbed starts when an attempt
    /// does not converge (the best result is kept; default 8: they cost only the goal sets
    /// the first attempt misses). Tracking never restarts.
    pub max_restarts: u32,
    /// Graceful degradation of [`FullBodySolver::solve_cold`] (tracking ranks goals beyond
    /// reach below the others instead, see the module docs): when goals stay unmet after the
    /// attempts, they give way one by one, each with another attempt — the goal with the largest
    /// priority number; among equal priorities the look-at first, then a hand, then a foot
    /// (the humanoid default order: pelvis and feet before hands, hands before the look-at; the
    /// pelvis and the centre of mass at priority 0 never give way);
    /// among those a limb stretched toward a target beyond its reach first, else the goal
    /// missed most, measured in units of this distance for positions (and of
    /// [`FullBodySettings::give_way_angle`] for orientations and the look-at). That goal pulls
    /// with a tenth of its weight and sits out the polish pass, so it cannot drag the goals
    /// that can be met off them. Misses under a fifth of this scale never give way (they are
    /// converging). Model units; 0 (the default) means 5 % of the rest body height; infinity
    /// disables giving way.
    pub give_way_distance: f32,
    /// The angular scale of [`FullBodySettings::give_way_distance`], radians (default 0.2).
    pub give_way_angle: f32,
    /// Success threshold for positions (model units).
    pub position_tolerance: f32,
    /// Success threshold for orientations and the look-at (radians).
    pub rotation_tolerance: f32,
    /// Success threshold for the centre of mass over its support point (model units).
    pub com_tolerance: f32,
    /// Damping of the least-squares step (model units / radians).
    pub damping: f32,
    /// Largest position error fed to one Jacobian step (model units).
    pub max_position_step: f32,
    /// Largest rotation error fed to one Jacobian step (radians).
    pub max_rotation_step: f32,
    /// Finish limbs analytically (hybrid) instead of iterating the Jacobian to full precision.
    pub analytic_limbs: bool,
    /// With `analytic_limbs`, the Jacobian stops at this multiple of the tolerances.
    pub coarse_factor: f32,
    /// The posture reference.
    pub reference: PostureReference,
    /// Gain of the null-space posture term per iteration (0, the default, disables it). It
    /// acts while the solver iterates (at least one step per Jacobian pass when on); a pose that
    /// already meets every goal is returned unchanged.
    pub posture_gain: f32,
    /// Tracking ([`FullBodySolver::solve`]): the per-frame turn bound, radians — no joint turns
    /// more than this from the pose passed in (the previous frame's output when the caller
    /// warm-starts), whatever the goals do (default [`DEFAULT_MAX_TURN`], 15°).
    pub max_turn: f32,
    /// Tracking: per effector ([`Effector::ALL`] order), how much its
    /// goal may pull the joints it shares with other effectors (spine, chest, the hips): 0
    /// moves only its own limb (clavicle, arm or leg), 1 (the default) lets the trunk and
    /// pelvis follow as far as the other goals and the limits allow.
    pub pull: [f32; 5],
    /// Tracking: per humanoid role ([`HumanoidBone::index`](B::index)), how much
    /// the joint resists turning, 0 (the default: free) to 1 (held where the pose passed in
    /// has it). A Gauss–Newton step sees the joint's columns scaled by `1 − stiffness` (a
    /// weighted least-norm step: a stiffer joint takes a smaller share of the motion, the
    /// others make up for it as far as they can). The analytic limb finish still turns a
    /// limb's own joints (shoulder, elbow, wrist; hip, knee, ankle) onto its goal; stiffness
    /// acts on the trunk, neck, head and clavicles fully, and on the limbs through the steps.
    #[cfg_attr(feature = "serde", serde(default))]
    pub stiffness: [f32; B::COUNT],
}

impl Default for FullBodySettings {
    fn default() -> Self {
        Self {
            max_iterations: 6,
            cold_iterations: 30,
            max_restarts: 8,
            give_way_distance: 0.0,
            give_way_angle: 0.2,
            position_tolerance: 1e-4,
            rotation_tolerance: 1e-3,
            com_tolerance: 5e-3,
            damping: 0.02,
            max_position_step: 0.2,
            max_rotation_step: 0.6,
            analytic_limbs: true,
            coarse_factor: 100.0,
            reference: PostureReference::Input,
            posture_gain: 0.0,
            max_turn: DEFAULT_MAX_TURN,
            pull: [1.0; 5],
            stiffness: [0.0; B::COUNT],
        }
    }
}

/// The default [`FullBodySettings::max_turn`]: 15°, in radians.
pub const DEFAULT_MAX_TURN: f32 = 15.0 * core::f32::consts::PI / 180.0;

/// The residual of one goal after a solve.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GoalResidual {
    /// Position error (model units), 0 when the position is not a goal.
    pub position: f32,
    /// Orientation error (radians), 0 when the orientation is not a goal.
    pub rotation: f32,
}

/// What a solve did.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FullBodyReport {
    /// Jacobian iterations used.
    pub iterations: u32,
    /// Whether every enabled goal is within tolerance.
    pub converged: bool,
    /// Residuals indexed like [`Effector::ALL`].
    pub residuals: [GoalResidual; 5],
    /// Look-at angle error (radians), 0 when disabled.
    pub look_at: f32,
    /// Ground-plane distance of the centre of mass from its target, 0 when disabled.
    pub center_of_mass: f32,
    /// Number of joint clamps applied by the last Jacobian step and the limb finish.
    pub limits_hit: u32,
    /// Every enabled residual divided by its tolerance and weighted `1000^−priority`, summed
    /// (measured on the returned pose).
    pub cost: f32,
    /// Restarts used (0 when the first attempt converged).
    pub restarts: u32,
    /// The goals judged infeasible, which give way from the next solve on (see
    /// [`FullBodySettings::give_way_distance`]): indexed like [`Effector::ALL`], then the
    /// look-at (5) and the centre of mass (6). The look-at also gives way in the Jacobian
    /// while the trunk's finish keeps it within a few tolerances (`docs/benchmarks.md`, *The
    /// trunk for the look-at*); a met look-at is not listed.
    pub giving_way: [bool; 7],
}
