//! The thin adapter between the plugin's per-frame data and ik-core's solvers: builds core
//! goals from gathered model-space targets and turns core reports into status values.

use bevy::math::{Quat, Vec3};
use ik_core::analytic::{LimbGoal, LimbSettings, Pole, TwoBoneIk};
use ik_core::{Pose, Skeleton};

use crate::error::IkError;

/// A limb's goal this frame, in model space.
pub(crate) struct LimbInput {
    pub target: Vec3,
    pub target_rotation: Quat,
    pub rotation_weight: f32,
    pub pole: Option<Vec3>,
    pub swivel: Option<f32>,
    pub pole_weight: f32,
}

/// What one limb solve reports.
pub(crate) struct LimbSolveReport {
    pub reached: bool,
    pub position_residual: f32,
    pub rotation_residual: f32,
}

/// The cached analytic solver of one limb.
#[derive(Debug)]
pub(crate) struct LimbSolver {
    ik: TwoBoneIk,
}

impl LimbSolver {
    pub(crate) fn try_new(
        skeleton: &Skeleton,
        [root, mid, tip]: [usize; 3],
        settings: LimbSettings,
    ) -> Result<Self, IkError> {
        TwoBoneIk::try_with_settings(skeleton, root, mid, tip, settings)
            .map(|ik| Self { ik })
            .map_err(|e| IkError::InvalidChain(e.to_string()))
    }

    pub(crate) fn set_settings(&mut self, settings: LimbSettings) -> Result<(), IkError> {
        if *self.ik.settings() == settings {
            return Ok(());
        }
        self.ik
            .set_settings(settings)
            .map_err(|e| IkError::InvalidSettings(e.to_string()))
    }

    pub(crate) fn solve(
        &self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        input: &LimbInput,
    ) -> Result<LimbSolveReport, IkError> {
        let mut goal =
            LimbGoal::new(input.target).with_weights(1.0, input.rotation_weight, input.pole_weight);
        goal.pole = match (input.pole, input.swivel) {
            (Some(p), _) => Pole::Position(p),
            (None, Some(angle)) => Pole::Swivel(angle),
            (None, None) => Pole::Keep,
        };
        if input.rotation_weight > 0.0 {
            goal.orientation = Some(input.target_rotation);
        }
        let report = self
            .ik
            .solve(skeleton, pose, &goal)
            .map_err(|e| IkError::Solver(e.to_string()))?;
        let rotation_residual = if goal.orientation.is_some() {
            let tip = skeleton.model_transform(pose, self.ik.bones()[2]);
            tip.rotation.angle_between(input.target_rotation)
        } else {
            0.0
        };
        let [l1, l2] = report.lengths;
        Ok(LimbSolveReport {
            reached: report.reachable && report.position_error <= 1e-4 * (l1 + l2).max(1.0),
            position_residual: report.position_error,
            rotation_residual,
        })
    }
}
