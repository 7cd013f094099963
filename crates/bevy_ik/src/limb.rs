//! The analytic two-bone limb as a registered stage kind: [`IkLimb`] builds an ik-core
//! [`TwoBoneStage`] and hands it its target, pole and weights every frame.

use bevy::ecs::entity::Entity;
use bevy::math::Vec3;
use ik_core::analytic::{LimbGoal, Pole, TwoBoneIk};
use ik_core::stack::{AnyStage, TwoBoneStage};

use crate::components::{BoneRef, IkLimb};
use crate::error::IkError;
use crate::kind::{
    IkBoneResolver, IkBuildContext, IkGatherContext, IkStageComponent, IkStageEntity,
    IkStageSummary,
};
use crate::pipeline::finite_weight;

impl IkStageComponent for IkLimb {
    type Key = ([BoneRef; 3], Option<Entity>);
    type State = ();

    fn key(&self) -> Self::Key {
        (
            [self.root.clone(), self.mid.clone(), self.tip.clone()],
            self.hierarchy,
        )
    }

    fn search_root(&self) -> Option<Entity> {
        self.hierarchy
    }

    fn resolve(&self, r: &mut IkBoneResolver<'_, '_, '_>) -> Result<Vec<Entity>, IkError> {
        let search = self.hierarchy.unwrap_or(r.character());
        let root = r.find(&self.root, search)?;
        let mid = r.find(&self.mid, search)?;
        let tip = r.find(&self.tip, search)?;
        let path = r.chain(root, tip).ok_or(IkError::NotAChain)?;
        if !path[1..path.len().saturating_sub(1)].contains(&mid) {
            return Err(IkError::NotAChain);
        }
        Ok(vec![root, mid, tip])
    }

    fn build(
        &self,
        cx: &IkBuildContext<'_, '_, '_>,
        bones: &[usize],
    ) -> Result<(AnyStage, ()), IkError> {
        let &[root, mid, tip] = bones else {
            return Err(IkError::NotAChain);
        };
        let skeleton = cx.skeleton();
        let ik = TwoBoneIk::try_with_settings(skeleton, root, mid, tip, self.settings)
            .map_err(|e| IkError::InvalidChain(e.into()))?;
        Ok((
            AnyStage::two_bone(TwoBoneStage::new(skeleton, ik, LimbGoal::new(Vec3::ZERO))),
            (),
        ))
    }

    fn weight(&self) -> f32 {
        self.weight
    }

    /// Target and pole read now (model space), weights, and the settings when they changed.
    fn gather(
        &self,
        _entity: &IkStageEntity<'_, '_, '_>,
        stage: &mut AnyStage,
        _state: &mut (),
        cx: &mut IkGatherContext<'_, '_, '_, '_>,
    ) -> Result<(), IkError> {
        // `let … else`, not `ok_or(error)?`: the latter builds the error and runs its drop
        // glue on the common path (two calls a limb and frame, ~130 instructions; callgrind).
        let Some(stage) = stage.as_two_bone_mut() else {
            return Err(IkError::StageTypeMismatch);
        };
        let Some(target) = self.target else {
            return Err(IkError::NoTarget);
        };
        let target = cx.read(target, false)?;
        let pole = match self.pole {
            None => None,
            Some(p) => Some(cx.read(p, true)?.position),
        };
        let settings = self.settings;
        if *stage.ik().settings() != settings {
            stage
                .set_settings(settings)
                .map_err(|e| IkError::InvalidSettings(e.into()))?;
        }
        let rotation_weight = finite_weight(self.rotation_weight);
        let mut goal = LimbGoal::new(target.position).with_weights(
            1.0,
            rotation_weight,
            finite_weight(self.pole_weight),
        );
        goal.pole = match (pole, self.swivel.filter(|a| a.is_finite())) {
            (Some(p), _) => Pole::Position(p),
            (None, Some(angle)) => Pole::Swivel(angle),
            (None, None) => Pole::Keep,
        };
        goal.orientation = (rotation_weight > 0.0).then_some(target.rotation);
        stage.goal = goal;
        Ok(())
    }

    /// The tip's rotation residual, measured on the solved pose when the tip turns toward the
    /// target; the one goal's position residual.
    fn summarise(stage: &mut AnyStage, _state: &(), summary: &mut IkStageSummary<'_>) {
        if let Some(stage) = stage.as_two_bone()
            && let Some(want) = stage.goal.orientation
        {
            let tip = summary.model_transform(stage.ik().bones()[2]);
            summary.rotation_residual = tip.rotation.angle_between(want);
        }
        let residual = summary.position_residual;
        summary.residuals.push(residual);
    }
}
