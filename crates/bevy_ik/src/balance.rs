//! Balance for full-body humanoids: [`IkBalance`] (a field of
//! [`IkHumanoid`](crate::IkHumanoid)) keeps the centre of mass over a support point between
//! the feet targets, with ik-core's [`CenterOfMassGoal`](ik_core::humanoid::CenterOfMassGoal);
//! [`IkCenterOfMass`] reports where it ended up.
//!
//! Each frame, when the full-body stage's targets are read, the support point is placed on the
//! line between the two foot targets ([`IkBalance::support_bias`]) and handed to the full-body
//! solver as its balance goal (only the ground-plane components matter: the height is free).
//! After the character's whole stack has run, the centre of mass of its output pose (de Leva
//! segment masses) is written to [`IkCenterOfMass`] and the full-body solver's remaining
//! ground-plane distance to
//! [`IkStatus::center_of_mass_residual`](crate::IkStatus::center_of_mass_residual).

use bevy::ecs::component::Component;
use bevy::ecs::reflect::ReflectComponent;
use bevy::math::Vec3;
use bevy::reflect::prelude::*;

pub(crate) fn register(app: &mut bevy::app::App) {
    app.register_type::<IkBalance>()
        .register_type::<IkCenterOfMass>();
}

/// Keep a full-body humanoid's centre of mass over its feet (the
/// [`IkHumanoid::balance`](crate::IkHumanoid::balance) field; off by default).
///
/// Read every frame, so it can be switched and tuned live. Only used by the full-body solver
/// ([`IkHumanoidSolver::FullBody`](crate::IkHumanoidSolver::FullBody)) with both legs set up:
/// the support point lies on the line between the left and right foot *targets*, and the
/// solver moves the body (hips, spine, arms within what their own targets allow) so that the
/// centre of mass projects onto it along the body's rest up direction. The balance goal
/// trades off against the other goals by [`IkBalance::weight`] on its [`IkBalance::priority`]
/// level, like any other full-body goal.
///
/// The solver never returns a pose it scores worse than the one it started from, scoring each
/// goal's error in units of its tolerance ([`FullBodySettings`](ik_core::humanoid::FullBodySettings):
/// 0.1 mm for positions, 5 mm for the centre of mass by default). So balance shows when
/// targets move (or animation supplies the starting pose): switched on for a still character
/// whose every other goal is already met, it does not pull the hands and pelvis off their
/// targets to re-centre the body.
#[derive(Debug, Clone, Copy, PartialEq, Reflect)]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
#[cfg_attr(feature = "serialize", serde(default))]
pub struct IkBalance {
    /// Add the balance goal to the full-body solve.
    pub enabled: bool,
    /// Weight of the centre-of-mass rows against the effector goals (weight 1 each). Zero or
    /// less switches the goal off; a non-finite weight stops the solve and is recorded in the
    /// humanoid's status (the character keeps its animated pose).
    pub weight: f32,
    /// Priority level (0 first), as [`IkGoal::priority`](crate::IkGoal::priority): on the
    /// effectors' level (0) it trades off by weight; on a later level it only uses the freedom
    /// the other goals leave.
    pub priority: u8,
    /// Where the support point lies between the feet targets: 0 = over the left foot target,
    /// 0.5 = midway, 1 = over the right foot target (clamped to `[0, 1]`; NaN means 0.5).
    pub support_bias: f32,
}

impl Default for IkBalance {
    fn default() -> Self {
        Self {
            enabled: false,
            weight: 1.0,
            priority: 0,
            support_bias: 0.5,
        }
    }
}

impl IkBalance {
    /// Balance on: centre of mass midway between the feet, weight 1, priority 0.
    #[must_use]
    pub fn on() -> Self {
        Self {
            enabled: true,
            ..Self::default()
        }
    }

    /// The support point (model space) for the given left and right foot target positions.
    #[must_use]
    pub fn support_point(&self, left_foot: Vec3, right_foot: Vec3) -> Vec3 {
        let t = if self.support_bias.is_nan() {
            0.5
        } else {
            self.support_bias.clamp(0.0, 1.0)
        };
        left_foot.lerp(right_foot, t)
    }
}

/// Where a full-body humanoid's centre of mass is, written by the plugin after each solve
/// while its [`IkBalance`] is on (inserted with [`IkHumanoid`](crate::IkHumanoid)), measured on the character's
/// output pose (after every stage and the weight blends). Positions
/// are in the humanoid entity's frame (the skeleton's model space).
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Reflect)]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkCenterOfMass {
    /// The values below describe this frame's solved pose (balance on, the rig solved).
    pub active: bool,
    /// The centre of mass of the output pose (after every stage and blend), from the de Leva
    /// segment masses.
    pub center_of_mass: Vec3,
    /// The support point the balance goal aimed the centre of mass at.
    pub support: Vec3,
    /// The ground-plane normal: the body's up direction in the rest pose (unit; zero until
    /// first measured).
    pub up: Vec3,
}

impl IkCenterOfMass {
    /// The centre of mass projected along [`IkCenterOfMass::up`] onto the ground plane
    /// through the support point.
    #[must_use]
    pub fn on_ground(&self) -> Vec3 {
        self.center_of_mass - self.up * (self.center_of_mass - self.support).dot(self.up)
    }

    /// The ground-plane distance between the centre of mass and the support point.
    #[must_use]
    pub fn offset(&self) -> f32 {
        self.on_ground().distance(self.support)
    }
}
