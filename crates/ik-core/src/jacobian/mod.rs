//! Generic Jacobian inverse kinematics: joints mapped to columns, tasks stacked as row blocks,
//! weighted damped least squares with strict priority levels, a null-space posture term and
//! joint limits.
//!
//! # Model
//!
//! * A [`JointSpec`] attaches one joint to a skeleton bone: [`JointKind::Hinge`] (1 DOF),
//!   [`JointKind::Ball`] (3 DOF; a step is a rotation vector `ω` applied as
//!   `local ← local · exp(ω)`, so there are no Euler singularities), [`JointKind::Slider`]
//!   (1 DOF translation), [`JointKind::Floating`] (3 translation + 3 rotation: a movable root)
//!   or [`JointKind::Fixed`]. Each joint has a [`JointLimit`] (relative to the bone's rest
//!   transform), a stiffness (the weighted pseudo-inverse uses `W = diag(stiffness)`: a stiffer
//!   joint moves less) and a lock (also switchable per solve in [`Goals::joints_locked`]).
//!   A hinge axis is given in the bone's rest local frame — the frame of the rest-relative
//!   rotation `rest⁻¹ · local`, the same frame as [`JointLimit::Hinge`]'s axis — so one axis
//!   describes both the joint and its limit; a slider axis is in the parent's frame.
//! * A [`TaskSpec`] is a block of rows of the stacked Jacobian: the position of a bone point
//!   (cross-product form, with a per-axis [`AxisMask`]), the orientation of a bone, look-at (a
//!   bone-local axis points at a model-space point; 2 rows), the centre of mass over a support
//!   point or convex polygon on the ground plane (2 rows; per-bone masses from the caller), and
//!   posture following (toward the rest pose or the incoming animated pose, per-joint weights),
//!   which is not a row block but the redundancy term `(I − J⁺J)z` in the null space of every
//!   row task. Each task has a priority level (0 = highest), a weight and an enabled flag.
//! * [`JacobianSolver::try_new`] validates everything and maps joints to columns and tasks to
//!   rows once. [`Goals`] carries the per-solve targets, weights, per-channel blend weights and
//!   enabled flags; [`JacobianScratch`] holds every buffer. [`JacobianSolver::solve`] does not
//!   allocate (a test counts allocations).
//!
//! # Algorithm
//!
//! Each iteration runs forward kinematics over the bones that matter (ancestors of task and
//! joint bones, in the skeleton's flat order), evaluates the task errors and — unless every
//! task is within tolerance — builds the Jacobian. Position rows are divided by a length scale
//! (the skeleton's size) so damping and tolerances do not depend on the rig's units; columns
//! are scaled by `1/√stiffness` (weighted pseudo-inverse). Levels are solved in order with the
//! recursive null-space projection of Siciliano–Slotine:
//!
//! ```text
//! Ĵₖ = Jₖ Pₖ₋₁,   Δq ← Δq + Ĵₖᵀ (Ĵₖ Ĵₖᵀ + λₖ² I)⁻¹ (eₖ − Jₖ Δq),   Pₖ = Pₖ₋₁ − Ĵₖᵀ (Ĵₖ Ĵₖᵀ + ε I)⁻¹ Ĵₖ
//! ```
//!
//! Only rows×rows systems are factorised (Cholesky); `P` (dof × dof) is formed only between
//! levels (a single level never builds it: the posture term applies the last level's
//! projector to `z` alone as `z − Ĵᵀ (Ĵ Ĵᵀ + ε I)⁻¹ Ĵ z`), and the first level, with `P₀ = I`
//! and `Δq = 0`, is solved directly. The step uses the adaptive damping
//! `λₖ² = μ (λ_min² + c · ½|eₖ|²)` (Levenberg–Marquardt after Sugihara), bounded below so a
//! stretched arm stays finite; the projectors use a tiny fixed `ε` instead, because a damped
//! projector leaks lower-priority motion into higher-priority rows to first order.
//!
//! A step is kept only if it does not make the merit of the highest level that changed worse
//! (lexicographic over levels); otherwise `μ` grows and the pose is restored, so residuals never
//! increase. When a lower level (or the posture term) pushes a level that was within tolerance
//! out of it by second-order drift, a correction step on the higher levels alone is taken
//! before the step is judged. The step is clamped per iteration; the solve ends when every
//! task is within tolerance (and the posture term has settled), after `max_iterations`, or
//! after `stall_iterations` iterations without progress (unreachable goals).
//!
//! Joint limits: after every step each joint is clamped ([`JointLimit::clamp`]); a clamped
//! joint is *saturated* and the outward normal of its limit is removed from its columns, so it
//! can still slide along the limit (a ball joint on its cone keeps two of three DOF); it is
//! released when the task-space descent direction points back inside. The returned pose
//! therefore never violates a limit.
//!
//! # Warm start
//!
//! The input pose is the starting point, and the scratch carries the damping factor and the
//! active set of saturated joints from one solve to the next (frame to frame). Hence a solve
//! whose goals are already met returns the pose bit for bit. Call [`JacobianScratch::reset`]
//! before a solve that is unrelated to the previous one (a restart from another pose).
//!
//! # Dense algebra and performance
//!
//! The step runs on the crate's one dense `f32` damped-least-squares kernel
//! (`jacobian::dense`, shared with [`crate::humanoid::FullBodySolver`]): `J` row-major in
//! the scratch, Cholesky on the rows × rows normal matrices, the prioritised step with a
//! damping per level, the null-space projectors and the projected posture term. This solver's part is the
//! orchestration — the damping factor, the accept/reject rule on `f64` merits, the correction
//! step and the active set — and the first solved level's `J Jᵀ`, which it fills from the task
//! sparsity (a task row is non-zero only in the columns of the joints above its bone; set-up
//! records, for each pair of tasks, the column ranges they share; the lower triangle only) over
//! the rows of the active tasks (a disabled task's rows leave the step). Kinematics are `f32`
//! glam as before. Until the port the step was `f64` on `nalgebra` (`DMatrix`, `Cholesky`,
//! `gemv`/`gemm`); the `f32` kernel keeps every test at its tolerance and is faster in the same
//! bench run — the numbers are in `jacobian::dense`'s module docs.
//!
//! Why a hand kernel and not `nalgebra` (the workspace's rule: a well-kept crate unless a
//! hand kernel measures ≥ 2× faster): the work of a step is dominated by the first level's
//! `J Jᵀ`, and the sparse kernel that fills it measured 3.4× faster than `nalgebra`'s dense
//! `gemm_tr` on a 57-DOF, 29-row humanoid-shaped rig (`perf` samples over 20 000 cold solves:
//! 1 031 against 3 536; whole cold solve 99 µs against 173 µs in the same criterion run, when
//! only that product was hand-written). The rest of the step (Cholesky of at most 36 × 36
//! rows, the projections) sits on the same row-major `f32` buffers; as a whole the step
//! measured 0.82× the time per iteration of the `nalgebra` `f64` step it replaced.
//!
//! # Hybrid use
//!
//! A solver can own any subset of the skeleton's joints: e.g. a Jacobian pass over pelvis
//! and spine with hand/foot position tasks, followed by analytic limbs on the result. Bones
//! without a joint keep their incoming transform; [`JacobianScratch::model_transforms`] gives
//! the model-space transforms of the last evaluated pose.

pub(crate) mod dense;
mod solve;

use glam::{Quat, Vec3};
use thiserror::Error;

use crate::limits::JointLimit;
use crate::pose::BoneTransform;
use crate::skeleton::{Skeleton, SkeletonError};

/// Errors from setting up or calling the Jacobian solver.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum JacobianError {
    /// A joint or task refers to a bone the skeleton does not have.
    #[error("{what} {index} refers to bone {bone}, but the skeleton has {len} bones")]
    BoneOutOfRange {
        /// `"joint"`, `"task"` or `"mass of task"`.
        what: &'static str,
        /// Index of the joint or task.
        index: usize,
        /// The bone index given.
        bone: usize,
        /// Bones in the skeleton.
        len: usize,
    },
    /// Two joints drive the same bone.
    #[error("joints {first} and {second} both drive bone {bone}")]
    DuplicateJoint {
        /// The first joint.
        first: usize,
        /// The second joint.
        second: usize,
        /// The bone.
        bone: usize,
    },
    /// A joint has a zero or non-finite axis, stiffness or limit, or a limit that does not
    /// fit its kind (e.g. a slider limit on a ball joint, or a hinge limit about another axis).
    #[error("joint {joint}: {what}")]
    InvalidJoint {
        /// The joint.
        joint: usize,
        /// What is wrong.
        what: &'static str,
    },
    /// A task has no rows, a zero axis, a bad mass table (a mass outside `[0, 1e12]`), bad
    /// weights, or a non-finite value or a point beyond ±[`crate::skeleton::MAX_COORDINATE`].
    #[error("task {task}: {what}")]
    InvalidTask {
        /// The task.
        task: usize,
        /// What is wrong.
        what: &'static str,
    },
    /// A setting is out of range.
    #[error("invalid solver setting: {what}")]
    InvalidSettings {
        /// What is wrong.
        what: &'static str,
    },
    /// The skeleton passed to `solve` is not the one the solver was built for.
    #[error("the solver was built for {expected} bones, the skeleton has {found}")]
    SkeletonMismatch {
        /// Bones at set-up.
        expected: usize,
        /// Bones now.
        found: usize,
    },
    /// The goals or scratch were not made for this solver.
    #[error("goals have {found} tasks / joints, the solver has {expected}")]
    GoalsMismatch {
        /// Tasks (or joints) of the solver.
        expected: usize,
        /// Tasks (or joints) in the goals.
        found: usize,
    },
    /// An enabled task has a non-finite target, weight or support polygon, or a target point
    /// beyond ±[`crate::skeleton::MAX_COORDINATE`].
    #[error("the goal of task {task} is not finite")]
    NonFiniteGoal {
        /// The task.
        task: usize,
    },
    /// The pose does not match the skeleton or is not finite.
    #[error(transparent)]
    Pose(#[from] SkeletonError),
}

/// The smallest [`JointSpec::stiffness`] a solver accepts.
pub const MIN_STIFFNESS: f32 = 1e-6;

/// The largest [`JointSpec::stiffness`] a solver accepts.
pub const MAX_STIFFNESS: f32 = 1e6;

/// The degrees of freedom a joint adds to its bone.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum JointKind {
    /// One rotation about `axis`, a unit vector in the bone's rest local frame (the frame of the
    /// rest-relative rotation `rest⁻¹ · local`, as for [`JointLimit::Hinge`]); a step is
    /// `local ← local · R(axis, Δθ)`.
    Hinge {
        /// Unit rotation axis.
        axis: Vec3,
    },
    /// Three rotational DOF; a step is `local ← local · exp(ω)`.
    Ball,
    /// One translation along `axis`, a unit vector in the parent's frame.
    Slider {
        /// Unit slide axis.
        axis: Vec3,
    },
    /// A movable root: translation along the parent frame's three axes plus a ball rotation.
    Floating,
    /// No degree of freedom (the bone keeps its incoming transform).
    Fixed,
}

impl JointKind {
    /// Number of degrees of freedom.
    #[must_use]
    pub fn dof(&self) -> usize {
        match self {
            Self::Hinge { .. } | Self::Slider { .. } => 1,
            Self::Ball => 3,
            Self::Floating => 6,
            Self::Fixed => 0,
        }
    }
}

/// A joint attached to a skeleton bone.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct JointSpec {
    /// The bone whose local transform the joint changes.
    pub bone: usize,
    /// The degrees of freedom.
    pub kind: JointKind,
    /// The limit, relative to the bone's rest transform.
    pub limit: JointLimit,
    /// Stiffness, in [[`MIN_STIFFNESS`], [`MAX_STIFFNESS`]]: the weighted pseudo-inverse moves
    /// a joint of stiffness `k` like a joint of stiffness 1 whose columns are scaled by `1/√k`.
    /// Default 1.
    pub stiffness: f32,
    /// A locked joint keeps its incoming transform (no columns).
    pub locked: bool,
}

impl JointSpec {
    fn new(bone: usize, kind: JointKind, limit: JointLimit) -> Self {
        Self {
            bone,
            kind,
            limit,
            stiffness: 1.0,
            locked: false,
        }
    }

    /// A hinge about `axis` (bone rest local frame) with the angle range `[min, max]` relative
    /// to rest (radians). `axis` is normalised at set-up.
    #[must_use]
    pub fn hinge(bone: usize, axis: Vec3, min: f32, max: f32) -> Self {
        let axis = axis.normalize_or_zero();
        Self::new(
            bone,
            JointKind::Hinge { axis },
            JointLimit::Hinge { axis, min, max },
        )
    }

    /// An unlimited ball joint; add a limit with [`JointSpec::with_limit`].
    #[must_use]
    pub fn ball(bone: usize) -> Self {
        Self::new(bone, JointKind::Ball, JointLimit::Free)
    }

    /// A slider along `axis` (parent frame) with the offset range `[min, max]` from rest.
    #[must_use]
    pub fn slider(bone: usize, axis: Vec3, min: f32, max: f32) -> Self {
        let axis = axis.normalize_or_zero();
        Self::new(
            bone,
            JointKind::Slider { axis },
            JointLimit::Slider { axis, min, max },
        )
    }

    /// A movable root (3 translation + 3 rotation), unlimited.
    #[must_use]
    pub fn floating(bone: usize) -> Self {
        Self::new(bone, JointKind::Floating, JointLimit::Free)
    }

    /// A fixed joint.
    #[must_use]
    pub fn fixed(bone: usize) -> Self {
        Self::new(bone, JointKind::Fixed, JointLimit::Free)
    }

    /// The same joint with another limit.
    #[must_use]
    pub fn with_limit(mut self, limit: JointLimit) -> Self {
        self.limit = limit;
        self
    }

    /// The same joint with another stiffness.
    #[must_use]
    pub fn with_stiffness(mut self, stiffness: f32) -> Self {
        self.stiffness = stiffness;
        self
    }

    /// The same joint, locked or not.
    #[must_use]
    pub fn with_locked(mut self, locked: bool) -> Self {
        self.locked = locked;
        self
    }
}

/// Which model-space axes of a position or orientation task are constrained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct AxisMask {
    /// Constrain X.
    pub x: bool,
    /// Constrain Y.
    pub y: bool,
    /// Constrain Z.
    pub z: bool,
}

impl AxisMask {
    /// All three axes.
    pub const ALL: Self = Self {
        x: true,
        y: true,
        z: true,
    };
    /// X and Z (e.g. a horizontal position).
    pub const XZ: Self = Self {
        x: true,
        y: false,
        z: true,
    };
    /// Y only.
    pub const Y: Self = Self {
        x: false,
        y: true,
        z: false,
    };

    /// The flags as an array `[x, y, z]`.
    #[must_use]
    pub fn to_array(self) -> [bool; 3] {
        [self.x, self.y, self.z]
    }

    /// Number of constrained axes.
    #[must_use]
    pub fn count(self) -> usize {
        usize::from(self.x) + usize::from(self.y) + usize::from(self.z)
    }
}

impl Default for AxisMask {
    fn default() -> Self {
        Self::ALL
    }
}

/// The pose a posture task pulls toward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PostureReference {
    /// The skeleton's rest pose.
    #[default]
    Rest,
    /// The pose passed into `solve` (the incoming animated pose).
    Incoming,
}

/// A point mass attached to a bone, for centre-of-mass tasks.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BoneMass {
    /// The bone carrying the mass.
    pub bone: usize,
    /// Mass (≥ 0, any unit).
    pub mass: f32,
    /// Centre of the mass in the bone's local frame (e.g. half-way to the child).
    pub local_center: Vec3,
}

/// What a task constrains.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum TaskKind {
    /// The model-space position of `local_point` (in `bone`'s frame) reaches
    /// [`TaskGoal::point`] on the axes in `axes`. Rows: `axes.count()`.
    Position {
        /// The bone.
        bone: usize,
        /// The point in the bone's local frame.
        local_point: Vec3,
        /// Constrained model axes.
        axes: AxisMask,
    },
    /// The model-space rotation of `bone` reaches [`TaskGoal::rotation`]; `axes` selects
    /// components of the rotation-vector error in model axes. Rows: `axes.count()`.
    Orientation {
        /// The bone.
        bone: usize,
        /// Constrained model axes of the angular error.
        axes: AxisMask,
    },
    /// `local_axis` of `bone` points from the bone's origin at [`TaskGoal::point`]. Rows: 2
    /// (rotations about the axis itself are left free). Channel weights `x`, `y` weight them.
    LookAt {
        /// The bone.
        bone: usize,
        /// The aiming axis in the bone's local frame.
        local_axis: Vec3,
    },
    /// The centre of mass of `masses`, projected along `up` onto the ground plane, lies on
    /// [`TaskGoal::point`] or, when [`TaskGoal::support_polygon`] has ≥ 3 vertices, inside that
    /// convex polygon (inactive while inside). Rows: 2; channel weights `x`, `y` weight them.
    CenterOfMass {
        /// Point masses.
        masses: Vec<BoneMass>,
        /// The up direction (normal of the ground plane), model space.
        up: Vec3,
    },
    /// Pull every joint toward a reference pose in the null space of all row tasks (the
    /// redundancy term `(I − J⁺J)z`, `z = gain · weight_j · (q_ref − q)`, scaled by the goal's
    /// weight capped at 1). At most one per solver; its level is ignored. No rows.
    Posture {
        /// Rest pose or incoming pose.
        reference: PostureReference,
        /// One weight per joint (≥ 0); empty means 1 for every joint.
        joint_weights: Vec<f32>,
        /// Fraction of the remaining difference removed per iteration, in `(0, 1]`.
        gain: f32,
    },
}

/// A task: what it constrains, its priority level, weight and default enabled flag.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TaskSpec {
    /// What the task constrains.
    pub kind: TaskKind,
    /// Priority level: 0 is the highest; a level only acts in the null space of all lower
    /// numbers.
    pub level: u8,
    /// Default weight within its level (copied into [`Goals`]).
    pub weight: f32,
    /// Default enabled flag (copied into [`Goals`]).
    pub enabled: bool,
}

impl TaskSpec {
    /// A task of `kind` at level 0, weight 1, enabled.
    #[must_use]
    pub fn new(kind: TaskKind) -> Self {
        Self {
            kind,
            level: 0,
            weight: 1.0,
            enabled: true,
        }
    }

    /// Position of `local_point` of `bone`, all axes.
    #[must_use]
    pub fn position(bone: usize, local_point: Vec3) -> Self {
        Self::new(TaskKind::Position {
            bone,
            local_point,
            axes: AxisMask::ALL,
        })
    }

    /// Orientation of `bone`, all axes.
    #[must_use]
    pub fn orientation(bone: usize) -> Self {
        Self::new(TaskKind::Orientation {
            bone,
            axes: AxisMask::ALL,
        })
    }

    /// `local_axis` of `bone` aims at the goal point.
    #[must_use]
    pub fn look_at(bone: usize, local_axis: Vec3) -> Self {
        Self::new(TaskKind::LookAt { bone, local_axis })
    }

    /// Centre of mass of `masses` over the support (ground plane normal `up`).
    #[must_use]
    pub fn center_of_mass(masses: Vec<BoneMass>, up: Vec3) -> Self {
        Self::new(TaskKind::CenterOfMass { masses, up })
    }

    /// Posture following toward `reference` with `gain`, all joints weighted 1.
    #[must_use]
    pub fn posture(reference: PostureReference, gain: f32) -> Self {
        Self::new(TaskKind::Posture {
            reference,
            joint_weights: Vec::new(),
            gain,
        })
    }

    /// The same task at priority `level` (0 = highest).
    #[must_use]
    pub fn at_level(mut self, level: u8) -> Self {
        self.level = level;
        self
    }

    /// The same task with another default weight.
    #[must_use]
    pub fn with_weight(mut self, weight: f32) -> Self {
        self.weight = weight;
        self
    }

    /// The same task with another axis mask (position and orientation tasks; others unchanged).
    #[must_use]
    pub fn with_axes(mut self, mask: AxisMask) -> Self {
        match &mut self.kind {
            TaskKind::Position { axes, .. } | TaskKind::Orientation { axes, .. } => *axes = mask,
            _ => {}
        }
        self
    }

    /// The same task, enabled by default or not.
    #[must_use]
    pub fn with_enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Number of rows the task adds to the stacked Jacobian.
    #[must_use]
    pub fn rows(&self) -> usize {
        match &self.kind {
            TaskKind::Position { axes, .. } | TaskKind::Orientation { axes, .. } => axes.count(),
            TaskKind::LookAt { .. } | TaskKind::CenterOfMass { .. } => 2,
            TaskKind::Posture { .. } => 0,
        }
    }
}

/// Solver settings.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SolverSettings {
    /// Most steps per solve (rejected steps count).
    pub max_iterations: u32,
    /// Position / centre-of-mass tolerance, model units.
    pub position_tolerance: f32,
    /// Orientation / look-at tolerance, radians.
    pub angle_tolerance: f32,
    /// Floor of the squared damping `λ²` (normalised units), keeps singular postures bounded.
    pub min_damping: f32,
    /// Adaptive part of `λ²`: `error_damping · ½|e|²` per level (normalised units).
    pub error_damping: f32,
    /// Largest rotation of any joint in one step, radians.
    pub max_step_angle: f32,
    /// Largest translation of any joint in one step, as a fraction of the length scale.
    pub max_step_translation: f32,
    /// The posture term stops the solve once its step is below this (radians); with a
    /// posture task the solve only ends early when the tasks are met and this holds.
    pub posture_tolerance: f32,
    /// Stop after this many consecutive iterations in which no level's merit fell by 0.1 %
    /// (and the posture residual did not move): unreachable goals end early instead of
    /// spending the whole budget. 0 disables.
    pub stall_iterations: u32,
    /// Length used to normalise position rows (model units); `None` derives it from the
    /// skeleton's rest extent.
    pub length_scale: Option<f32>,
}

impl Default for SolverSettings {
    fn default() -> Self {
        Self {
            max_iterations: 64,
            position_tolerance: 1e-4,
            angle_tolerance: 1e-3,
            min_damping: 1e-4,
            error_damping: 0.5,
            max_step_angle: 0.5,
            max_step_translation: 0.25,
            posture_tolerance: 1e-4,
            stall_iterations: 4,
            length_scale: None,
        }
    }
}

impl SolverSettings {
    fn validate(&self) -> Result<(), JacobianError> {
        let bad = |what| Err(JacobianError::InvalidSettings { what });
        let pos = |v: f32| v.is_finite() && v > 0.0;
        if !pos(self.position_tolerance) || !pos(self.angle_tolerance) {
            return bad("tolerances must be finite and > 0");
        }
        if !(pos(self.min_damping) && self.error_damping.is_finite() && self.error_damping >= 0.0) {
            return bad("min_damping must be > 0 and error_damping ≥ 0");
        }
        if !pos(self.max_step_angle) || !pos(self.max_step_translation) {
            return bad("step limits must be finite and > 0");
        }
        if !pos(self.posture_tolerance) {
            return bad("posture_tolerance must be finite and > 0");
        }
        if let Some(l) = self.length_scale
            && !pos(l)
        {
            return bad("length_scale must be finite and > 0");
        }
        Ok(())
    }
}

/// The per-solve goal of one task. Which fields a task reads depends on its kind; the others
/// are ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskGoal {
    /// Whether the task acts in this solve (a disabled task's rows are zero).
    pub enabled: bool,
    /// Weight of the task within its level (≥ 0).
    pub weight: f32,
    /// Per-channel blend weights in `[0, 1]`: model X/Y/Z for position and orientation tasks,
    /// the two rows (`x`, `y`) of look-at and centre-of-mass tasks.
    pub channel_weights: Vec3,
    /// Target point (position, look-at, centre-of-mass support point), model space.
    pub point: Vec3,
    /// Target model-space rotation (orientation tasks).
    pub rotation: Quat,
    /// Convex support polygon (centre-of-mass tasks), model space; fewer than 3 vertices means
    /// "use `point`". Capacity for 16 vertices is reserved, so refilling it does not allocate.
    pub support_polygon: Vec<Vec3>,
}

/// Per-solve targets for every task of one solver, plus run-time joint locks. Make it with
/// [`JacobianSolver::goals`]; mutate the fields between solves (no allocation).
#[derive(Clone, Debug, PartialEq)]
pub struct Goals {
    /// One goal per task, in the order the tasks were given.
    pub tasks: Vec<TaskGoal>,
    /// One flag per joint: a locked joint keeps its incoming transform in this solve.
    pub joints_locked: Vec<bool>,
}

/// Outcome of one solve. Per-task residuals and limit flags are in the scratch
/// ([`JacobianScratch::residuals`], [`JacobianScratch::limited_joints`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolveReport {
    /// Steps taken (accepted and rejected).
    pub iterations: u32,
    /// Steps rejected because they made a residual worse.
    pub rejected_steps: u32,
    /// Every enabled row task is within tolerance (and the posture term has settled).
    pub converged: bool,
    /// Joints whose limit clamped during the solve.
    pub limits_hit: u32,
    /// Largest residual of an enabled position / centre-of-mass task, model units.
    pub max_position_residual: f32,
    /// Largest residual of an enabled orientation / look-at task, radians.
    pub max_angle_residual: f32,
}

/// Reusable buffers of one [`JacobianSolver`]; make it with [`JacobianSolver::scratch`].
#[derive(Clone, Debug)]
pub struct JacobianScratch {
    pub(crate) model: Vec<BoneTransform>,
    /// The shared dense kernel's buffers: `J` (row-major, `rows × dof`), `e`, `dq`, the
    /// posture pull `z`, the factorisations and projectors.
    pub(crate) dls: dense::DlsBuffers,
    /// The level of each row in this iteration (`usize::MAX`: an inactive task, left out).
    pub(crate) row_level: Vec<usize>,
    /// Each active task's first row among the active rows of its level.
    pub(crate) task_pos: Vec<usize>,
    pub(crate) col_ang: Vec<Vec3>,
    pub(crate) col_lin: Vec<Vec3>,
    pub(crate) col_pivot: Vec<Vec3>,
    pub(crate) residuals: Vec<f32>,
    pub(crate) prev_residuals: Vec<f32>,
    pub(crate) merit: Vec<f64>,
    pub(crate) prev_merit: Vec<f64>,
    pub(crate) level_energy: Vec<f64>,
    pub(crate) task_point: Vec<Vec3>,
    pub(crate) task_u: Vec<Vec3>,
    pub(crate) task_b: Vec<[Vec3; 2]>,
    pub(crate) task_active: Vec<bool>,
    pub(crate) saved_rot: Vec<Quat>,
    pub(crate) saved_trans: Vec<Vec3>,
    pub(crate) ref_rot: Vec<Quat>,
    pub(crate) ref_trans: Vec<Vec3>,
    pub(crate) saturated: Vec<bool>,
    pub(crate) normal: Vec<[f32; 6]>,
    pub(crate) saved_saturated: Vec<bool>,
    pub(crate) saved_normal: Vec<[f32; 6]>,
    pub(crate) limited: Vec<bool>,
    pub(crate) com_mass: Vec<f32>,
    pub(crate) com_moment: Vec<Vec3>,
    pub(crate) mu: f64,
    pub(crate) last_converged: bool,
    pub(crate) shape: (usize, usize, usize, usize),
}

impl JacobianScratch {
    /// Residual of each task after the last solve, in task order: model units for position
    /// and centre-of-mass tasks, radians for orientation and look-at (over the masked-in
    /// channels whose blend weight is non-zero), the largest remaining joint difference
    /// (radians, translations as fractions of the length scale) for a posture task; 0 for
    /// disabled tasks.
    #[must_use]
    pub fn residuals(&self) -> &[f32] {
        &self.residuals
    }

    /// For each joint, whether its limit clamped during the last solve.
    #[must_use]
    pub fn limited_joints(&self) -> &[bool] {
        &self.limited
    }

    /// Forgets the warm-start state carried from one solve to the next (the damping factor
    /// and which joints sit on their limits). Call it when the next solve is unrelated to the
    /// last one (a new target far away, a restart from another pose, a teleport).
    pub fn reset(&mut self) {
        self.mu = 1.0;
        self.last_converged = false;
        self.saturated.fill(false);
    }

    /// Model-space transforms of the bones the solver evaluates (others are stale), after the
    /// last solve or evaluation.
    #[must_use]
    pub fn model_transforms(&self) -> &[BoneTransform] {
        &self.model
    }
}

/// Where a task's rows live and which joints move it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TaskLayout {
    pub(crate) row: usize,
    pub(crate) rows: usize,
    pub(crate) level: usize,
    /// Range into `JacobianSolver::task_joints`.
    pub(crate) joints: (usize, usize),
    pub(crate) total_mass: f32,
    pub(crate) up: Vec3,
    pub(crate) plane: [Vec3; 2],
}

/// A set-up Jacobian solver: joints mapped to columns, tasks to row blocks, levels ordered.
/// Immutable while solving; see the module docs for the algorithm.
#[derive(Clone, Debug, PartialEq)]
pub struct JacobianSolver {
    pub(crate) bone_count: usize,
    pub(crate) joints: Vec<JointSpec>,
    pub(crate) col_start: Vec<usize>,
    pub(crate) col_scale: Vec<f32>,
    pub(crate) dof: usize,
    pub(crate) tasks: Vec<TaskSpec>,
    pub(crate) layout: Vec<TaskLayout>,
    pub(crate) task_joints: Vec<usize>,
    /// `(first row, rows)` of each level, highest priority first.
    pub(crate) levels: Vec<(usize, usize)>,
    pub(crate) level_tasks: Vec<Vec<usize>>,
    /// For every pair `(a, b)`, `b ≤ a`, of tasks of a level (level-local indices, pair index
    /// `a(a+1)/2 + b`), the column ranges both tasks depend on: the sparsity of `J Jᵀ`.
    pub(crate) pair_ranges: Vec<Vec<(usize, usize)>>,
    pub(crate) rows: usize,
    pub(crate) fk_bones: Vec<usize>,
    pub(crate) posture: Option<usize>,
    pub(crate) length_scale: f32,
    pub(crate) settings: SolverSettings,
    pub(crate) rest: Vec<BoneTransform>,
    pub(crate) parents: Vec<Option<usize>>,
}

impl JacobianSolver {
    /// Validates `joints` and `tasks` against `skeleton` and lays out columns and rows.
    ///
    /// # Errors
    /// [`JacobianError::BoneOutOfRange`], [`JacobianError::DuplicateJoint`],
    /// [`JacobianError::InvalidJoint`] (zero/non-finite axis, stiffness outside
    /// [[`MIN_STIFFNESS`], [`MAX_STIFFNESS`]], malformed limit or one not fitting
    /// the kind), [`JacobianError::InvalidTask`] (no rows, zero axis, bad masses or weights,
    /// a second posture task) or [`JacobianError::InvalidSettings`].
    pub fn try_new(
        skeleton: &Skeleton,
        joints: Vec<JointSpec>,
        tasks: Vec<TaskSpec>,
        settings: SolverSettings,
    ) -> Result<Self, JacobianError> {
        settings.validate()?;
        let len = skeleton.len();
        let mut joint_of_bone = vec![usize::MAX; len];
        let mut joints = joints;
        for (j, spec) in joints.iter_mut().enumerate() {
            validate_joint(j, spec, len)?;
            if joint_of_bone[spec.bone] != usize::MAX {
                return Err(JacobianError::DuplicateJoint {
                    first: joint_of_bone[spec.bone],
                    second: j,
                    bone: spec.bone,
                });
            }
            joint_of_bone[spec.bone] = j;
        }
        let mut col_start = Vec::with_capacity(joints.len() + 1);
        let mut col_scale = Vec::with_capacity(joints.len());
        let mut dof = 0;
        for spec in &joints {
            col_start.push(dof);
            col_scale.push(spec.stiffness.recip().sqrt());
            if !spec.locked && !matches!(spec.limit, JointLimit::Locked) {
                dof += spec.kind.dof();
            }
        }
        col_start.push(dof);

        let mut tasks = tasks;
        let mut posture = None;
        for (t, task) in tasks.iter_mut().enumerate() {
            validate_task(t, task, len, joints.len())?;
            if matches!(task.kind, TaskKind::Posture { .. }) {
                if posture.is_some() {
                    return Err(JacobianError::InvalidTask {
                        task: t,
                        what: "only one posture task per solver",
                    });
                }
                posture = Some(t);
            }
        }

        // Bones evaluated by FK: every ancestor of a task bone, a mass bone or a joint bone.
        let mut needed = vec![false; len];
        let mark = |b: usize, needed: &mut Vec<bool>| {
            for a in skeleton.ancestors_inclusive(b) {
                if needed[a] {
                    break;
                }
                needed[a] = true;
            }
        };
        for spec in &joints {
            mark(spec.bone, &mut needed);
        }
        for task in &tasks {
            match &task.kind {
                TaskKind::Position { bone, .. }
                | TaskKind::Orientation { bone, .. }
                | TaskKind::LookAt { bone, .. } => mark(*bone, &mut needed),
                TaskKind::CenterOfMass { masses, .. } => {
                    for m in masses {
                        mark(m.bone, &mut needed);
                    }
                }
                TaskKind::Posture { .. } => {}
            }
        }
        let fk_bones: Vec<usize> = (0..len).filter(|&b| needed[b]).collect();

        // Levels in ascending order; rows laid out level by level.
        let mut level_ids: Vec<u8> = tasks
            .iter()
            .filter(|t| t.rows() > 0)
            .map(|t| t.level)
            .collect();
        level_ids.sort_unstable();
        level_ids.dedup();
        let mut layout = vec![
            TaskLayout {
                row: 0,
                rows: 0,
                level: 0,
                joints: (0, 0),
                total_mass: 0.0,
                up: Vec3::Y,
                plane: [Vec3::X, Vec3::Z],
            };
            tasks.len()
        ];
        let mut levels = Vec::with_capacity(level_ids.len());
        let mut level_tasks = Vec::with_capacity(level_ids.len());
        let mut row = 0;
        let mut task_joints = Vec::new();
        for (li, &lv) in level_ids.iter().enumerate() {
            let start = row;
            let mut members = Vec::new();
            for (t, task) in tasks.iter().enumerate() {
                if task.level != lv || task.rows() == 0 {
                    continue;
                }
                members.push(t);
                let l = &mut layout[t];
                l.row = row;
                l.rows = task.rows();
                l.level = li;
                row += l.rows;
                let j0 = task_joints.len();
                for (j, spec) in joints.iter().enumerate() {
                    if col_start[j + 1] == col_start[j] {
                        continue;
                    }
                    let moves = match &task.kind {
                        TaskKind::Position { bone, .. }
                        | TaskKind::Orientation { bone, .. }
                        | TaskKind::LookAt { bone, .. } => {
                            skeleton.is_ancestor_or_self(spec.bone, *bone)
                        }
                        TaskKind::CenterOfMass { masses, .. } => masses.iter().any(|m| {
                            m.mass > 0.0 && skeleton.is_ancestor_or_self(spec.bone, m.bone)
                        }),
                        TaskKind::Posture { .. } => false,
                    };
                    if moves {
                        task_joints.push(j);
                    }
                }
                l.joints = (j0, task_joints.len());
                if let TaskKind::CenterOfMass { masses, up } = &task.kind {
                    l.total_mass = masses.iter().map(|m| m.mass).sum();
                    let up = up.normalize();
                    l.up = up;
                    let a = up.any_orthonormal_vector();
                    l.plane = [a, up.cross(a)];
                }
            }
            levels.push((start, row - start));
            level_tasks.push(members);
        }

        let mut pair_ranges = Vec::new();
        for members in &level_tasks {
            for (a, &ta) in members.iter().enumerate() {
                for &tb in &members[..=a] {
                    let ja = &task_joints[layout[ta].joints.0..layout[ta].joints.1];
                    let jb = &task_joints[layout[tb].joints.0..layout[tb].joints.1];
                    let mut ranges: Vec<(usize, usize)> = Vec::new();
                    for &j in ja.iter().filter(|j| jb.contains(j)) {
                        let (c0, c1) = (col_start[j], col_start[j + 1]);
                        match ranges.last_mut() {
                            Some(last) if last.1 == c0 => last.1 = c1,
                            _ => ranges.push((c0, c1)),
                        }
                    }
                    pair_ranges.push(ranges);
                }
            }
        }
        let rest_model = skeleton.rest_model_transforms();
        let length_scale = settings.length_scale.unwrap_or_else(|| {
            let origin = joints
                .iter()
                .map(|j| j.bone)
                .min()
                .map_or(Vec3::ZERO, |b| rest_model[b].translation);
            let ext = fk_bones
                .iter()
                .map(|&b| rest_model[b].translation.distance(origin))
                .fold(0.0f32, f32::max);
            if ext > 1e-6 { ext } else { 1.0 }
        });

        Ok(Self {
            bone_count: len,
            joints,
            col_start,
            col_scale,
            dof,
            tasks,
            layout,
            task_joints,
            levels,
            level_tasks,
            pair_ranges,
            rows: row,
            fk_bones,
            posture,
            length_scale,
            settings,
            rest: skeleton.bones().iter().map(|b| b.rest).collect(),
            parents: skeleton.bones().iter().map(|b| b.parent).collect(),
        })
    }

    /// The joints, in column order.
    #[must_use]
    pub fn joints(&self) -> &[JointSpec] {
        &self.joints
    }

    /// The tasks, in the order given.
    #[must_use]
    pub fn tasks(&self) -> &[TaskSpec] {
        &self.tasks
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &SolverSettings {
        &self.settings
    }

    /// Replaces the settings (iteration budget, tolerances, damping...). The length scale is
    /// fixed at set-up and not changed.
    ///
    /// # Errors
    /// [`JacobianError::InvalidSettings`].
    pub fn set_settings(&mut self, settings: SolverSettings) -> Result<(), JacobianError> {
        settings.validate()?;
        self.settings = settings;
        Ok(())
    }

    /// Number of unlocked degrees of freedom (columns).
    #[must_use]
    pub fn dof(&self) -> usize {
        self.dof
    }

    /// Number of task rows.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of distinct priority levels with rows.
    #[must_use]
    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// The length that normalises position rows (model units).
    #[must_use]
    pub fn length_scale(&self) -> f32 {
        self.length_scale
    }

    /// Default goals: each task's default weight and enabled flag, full channel weights,
    /// targets at the origin / identity, joints locked as in their specs.
    #[must_use]
    pub fn goals(&self) -> Goals {
        Goals {
            tasks: self
                .tasks
                .iter()
                .map(|t| TaskGoal {
                    enabled: t.enabled,
                    weight: t.weight,
                    channel_weights: Vec3::ONE,
                    point: Vec3::ZERO,
                    rotation: Quat::IDENTITY,
                    support_polygon: Vec::with_capacity(16),
                })
                .collect(),
            joints_locked: self.joints.iter().map(|j| j.locked).collect(),
        }
    }

    /// Scratch buffers sized for this solver.
    #[must_use]
    pub fn scratch(&self) -> JacobianScratch {
        let (n, m) = (self.dof, self.rows);
        let nj = self.joints.len();
        let nt = self.tasks.len();
        JacobianScratch {
            model: vec![BoneTransform::IDENTITY; self.bone_count],
            dls: dense::DlsBuffers::new(m, n),
            row_level: vec![0; m],
            task_pos: vec![0; nt],
            col_ang: vec![Vec3::ZERO; n],
            col_lin: vec![Vec3::ZERO; n],
            col_pivot: vec![Vec3::ZERO; n],
            residuals: vec![0.0; nt],
            prev_residuals: vec![0.0; nt],
            merit: vec![0.0; self.levels.len()],
            prev_merit: vec![0.0; self.levels.len()],
            level_energy: vec![0.0; self.levels.len()],
            task_point: vec![Vec3::ZERO; nt],
            task_u: vec![Vec3::ZERO; nt],
            task_b: vec![[Vec3::ZERO; 2]; nt],
            task_active: vec![false; nt],
            saved_rot: vec![Quat::IDENTITY; nj],
            saved_trans: vec![Vec3::ZERO; nj],
            ref_rot: vec![Quat::IDENTITY; nj],
            ref_trans: vec![Vec3::ZERO; nj],
            saturated: vec![false; nj],
            normal: vec![[0.0; 6]; nj],
            saved_saturated: vec![false; nj],
            saved_normal: vec![[0.0; 6]; nj],
            limited: vec![false; nj],
            com_mass: vec![0.0; self.bone_count],
            com_moment: vec![Vec3::ZERO; self.bone_count],
            mu: 1.0,
            last_converged: false,
            shape: (n, m, nj, nt),
        }
    }
}

fn validate_joint(j: usize, spec: &mut JointSpec, len: usize) -> Result<(), JacobianError> {
    let bad = |what| Err(JacobianError::InvalidJoint { joint: j, what });
    if spec.bone >= len {
        return Err(JacobianError::BoneOutOfRange {
            what: "joint",
            index: j,
            bone: spec.bone,
            len,
        });
    }
    if !(MIN_STIFFNESS..=MAX_STIFFNESS).contains(&spec.stiffness) {
        return bad("stiffness must be in [1e-6, 1e6]");
    }
    let unit = |a: Vec3| a.is_finite() && (a.length() - 1.0).abs() < 1e-3;
    match &mut spec.kind {
        JointKind::Hinge { axis } | JointKind::Slider { axis } => match axis.try_normalize() {
            Some(a) if a.is_finite() => *axis = a,
            _ => return bad("zero or non-finite axis"),
        },
        JointKind::Ball | JointKind::Floating | JointKind::Fixed => {}
    }
    let ok = spec.limit.is_valid()
        && match (spec.kind, spec.limit) {
            (_, JointLimit::Free | JointLimit::Locked) | (JointKind::Fixed, _) => true,
            (JointKind::Hinge { axis }, JointLimit::Hinge { axis: la, min, max })
            | (JointKind::Slider { axis }, JointLimit::Slider { axis: la, min, max }) => {
                unit(la)
                    && axis.dot(la) > 0.9999
                    && min.is_finite()
                    && max.is_finite()
                    && min <= max
            }
            (JointKind::Ball, JointLimit::Hinge { axis: la, min, max }) => {
                unit(la) && min.is_finite() && max.is_finite() && min <= max
            }
            (JointKind::Ball, JointLimit::SwingTwist(l)) => {
                unit(l.twist_axis)
                    && unit(l.swing_axis)
                    && l.twist_axis.dot(l.swing_axis).abs() < 1e-3
                    && l.swing_half_angles.is_finite()
                    && l.swing_half_angles.min_element() >= 0.0
                    && l.twist_min.is_finite()
                    && l.twist_max.is_finite()
                    && l.twist_min <= l.twist_max
            }
            _ => false,
        };
    if ok {
        Ok(())
    } else {
        bad("limit does not fit the joint kind, or is not finite / unit / ordered")
    }
}

fn validate_task(
    t: usize,
    task: &mut TaskSpec,
    len: usize,
    joints: usize,
) -> Result<(), JacobianError> {
    let bad = |what| Err(JacobianError::InvalidTask { task: t, what });
    let bone_ok = |b: usize| {
        if b < len {
            Ok(())
        } else {
            Err(JacobianError::BoneOutOfRange {
                what: "task",
                index: t,
                bone: b,
                len,
            })
        }
    };
    if !(task.weight.is_finite() && task.weight >= 0.0) {
        return bad("weight must be finite and ≥ 0");
    }
    match &mut task.kind {
        TaskKind::Position {
            bone,
            local_point,
            axes,
        } => {
            bone_ok(*bone)?;
            if !(local_point.is_finite()
                && local_point.abs().max_element() <= crate::skeleton::MAX_COORDINATE)
            {
                return bad("non-finite or out-of-range local point");
            }
            if axes.count() == 0 {
                return bad("no axis selected");
            }
        }
        TaskKind::Orientation { bone, axes } => {
            bone_ok(*bone)?;
            if axes.count() == 0 {
                return bad("no axis selected");
            }
        }
        TaskKind::LookAt { bone, local_axis } => {
            bone_ok(*bone)?;
            match local_axis.try_normalize() {
                Some(a) => *local_axis = a,
                None => return bad("zero or non-finite aim axis"),
            }
        }
        TaskKind::CenterOfMass { masses, up } => {
            if up.try_normalize().is_none() {
                return bad("zero or non-finite up vector");
            }
            let mut total = 0.0;
            for m in masses.iter() {
                if m.bone >= len {
                    return Err(JacobianError::BoneOutOfRange {
                        what: "mass of task",
                        index: t,
                        bone: m.bone,
                        len,
                    });
                }
                if !((0.0..=1e12).contains(&m.mass)
                    && m.local_center.is_finite()
                    && m.local_center.abs().max_element() <= crate::skeleton::MAX_COORDINATE)
                {
                    return bad("masses must be finite and ≥ 0");
                }
                total += m.mass;
            }
            if total <= 0.0 || !total.is_finite() {
                return bad("total mass must be > 0");
            }
        }
        TaskKind::Posture {
            joint_weights,
            gain,
            ..
        } => {
            if !(gain.is_finite() && *gain > 0.0 && *gain <= 1.0) {
                return bad("posture gain must be in (0, 1]");
            }
            if !joint_weights.is_empty() && joint_weights.len() != joints {
                return bad("posture needs one weight per joint (or none)");
            }
            if joint_weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) {
                return bad("posture weights must be finite and ≥ 0");
            }
        }
    }
    Ok(())
}
