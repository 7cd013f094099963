//! The analytic two-bone limb as registered stage kinds: [`IkLimb`] builds an ik-core
//! [`TwoBoneStage`] and hands it its target, pole and weights every frame; [`IkLimbBatch`]
//! builds one [`LimbBatchStage`] for a run of limbs and hands each limb the same (one limb's
//! resolve, build and goal are shared by both).

use bevy::ecs::entity::Entity;
use bevy::math::Vec3;
use ik_core::Skeleton;
use ik_core::analytic::{LimbGoal, Pole, TwoBoneIk};
use ik_core::stack::{AnyStage, LimbBatchStage, TwoBoneStage};

use crate::components::{BoneRef, IkLimb, IkLimbBatch};
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
        resolve_limb(self, r).map(Vec::from)
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
        let ik = limb_ik(self, skeleton, [root, mid, tip])?;
        Ok((
            AnyStage::two_bone(TwoBoneStage::new(skeleton, ik, LimbGoal::new(Vec3::ZERO))),
            (),
        ))
    }

    crate::kind::weight_field!();

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
        // Written in place (no copy of the goal through a `Result`: ~6 instructions a limb and
        // frame; callgrind). On an error below the stage is not solved this frame.
        write_limb_goal(self, cx, &mut stage.goal)?;
        let settings = self.settings;
        if *stage.ik().settings() != settings {
            stage
                .set_settings(settings)
                .map_err(|e| IkError::InvalidSettings(e.into()))?;
        }
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

/// `limb`'s root, mid and tip (searched under its hierarchy root, or the character), checked
/// to be one chain with `mid` strictly between root and tip.
fn resolve_limb(limb: &IkLimb, r: &mut IkBoneResolver<'_, '_, '_>) -> Result<[Entity; 3], IkError> {
    let search = limb.hierarchy.unwrap_or(r.character());
    let root = r.find(&limb.root, search)?;
    let mid = r.find(&limb.mid, search)?;
    let tip = r.find(&limb.tip, search)?;
    let path = r.chain(root, tip).ok_or(IkError::NotAChain)?;
    if !path[1..path.len().saturating_sub(1)].contains(&mid) {
        return Err(IkError::NotAChain);
    }
    Ok([root, mid, tip])
}

/// `limb`'s solver on `bones` (root, mid, tip) of `skeleton`, with its settings.
fn limb_ik(limb: &IkLimb, skeleton: &Skeleton, bones: [usize; 3]) -> Result<TwoBoneIk, IkError> {
    let [root, mid, tip] = bones;
    TwoBoneIk::try_with_settings(skeleton, root, mid, tip, limb.settings)
        .map_err(|e| IkError::InvalidChain(e.into()))
}

/// Writes `limb`'s goal this frame into `out` (left as it was on an error): its target (and
/// pole) read now, in model space; the pole, else the swivel angle, else the animated bend
/// plane; the rotation goal when `rotation_weight` is above 0.
#[inline(always)]
fn write_limb_goal(
    limb: &IkLimb,
    cx: &IkGatherContext<'_, '_, '_, '_>,
    out: &mut LimbGoal,
) -> Result<(), IkError> {
    // `let … else`, not `ok_or(error)?`: the latter builds the error and runs its drop glue on
    // the common path (two calls a limb and frame, ~130 instructions; callgrind).
    let Some(target) = limb.target else {
        return Err(IkError::NoTarget);
    };
    let target = cx.read(target, false)?;
    let pole = match limb.pole {
        None => None,
        Some(p) => Some(cx.read(p, true)?.position),
    };
    let rotation_weight = finite_weight(limb.rotation_weight);
    let mut goal = LimbGoal::new(target.position).with_weights(
        1.0,
        rotation_weight,
        finite_weight(limb.pole_weight),
    );
    goal.pole = match (pole, limb.swivel.filter(|a| a.is_finite())) {
        (Some(p), _) => Pole::Position(p),
        (None, Some(angle)) => Pole::Swivel(angle),
        (None, None) => Pole::Keep,
    };
    goal.orientation = (rotation_weight > 0.0).then_some(target.rotation);
    *out = goal;
    Ok(())
}

/// The limbs' structure: a change rebuilds the stage.
type BatchKey = Vec<(
    [BoneRef; 3],
    Option<Entity>,
    ik_core::analytic::LimbSettings,
)>;

impl IkStageComponent for IkLimbBatch {
    type Key = BatchKey;
    type State = ();

    fn key(&self) -> BatchKey {
        self.limbs
            .iter()
            .map(|l| {
                (
                    [l.root.clone(), l.mid.clone(), l.tip.clone()],
                    l.hierarchy,
                    l.settings,
                )
            })
            .collect()
    }

    fn search_root(&self) -> Option<Entity> {
        self.limbs.iter().find_map(|l| l.hierarchy)
    }

    /// Every limb's root, mid and tip, in order.
    fn resolve(&self, r: &mut IkBoneResolver<'_, '_, '_>) -> Result<Vec<Entity>, IkError> {
        let mut bones = Vec::with_capacity(3 * self.limbs.len());
        for limb in &self.limbs {
            bones.extend(resolve_limb(limb, r)?);
        }
        Ok(bones)
    }

    fn build(
        &self,
        cx: &IkBuildContext<'_, '_, '_>,
        bones: &[usize],
    ) -> Result<(AnyStage, ()), IkError> {
        if bones.len() != 3 * self.limbs.len() {
            return Err(IkError::NotAChain);
        }
        let skeleton = cx.skeleton();
        let limbs = self
            .limbs
            .iter()
            .zip(bones.chunks_exact(3))
            .map(|(limb, b)| {
                let ik = limb_ik(limb, skeleton, [b[0], b[1], b[2]])?;
                Ok((ik, LimbGoal::new(Vec3::ZERO)))
            })
            .collect::<Result<Vec<_>, IkError>>()?;
        let stage = LimbBatchStage::try_new(skeleton, limbs)
            .map_err(|e| IkError::InvalidChain(e.into()))?;
        Ok((AnyStage::new(stage), ()))
    }

    crate::kind::weight_field!();

    /// Every limb's goal (as [`IkLimb`]'s) and weight.
    fn gather(
        &self,
        entity: &IkStageEntity<'_, '_, '_>,
        stage: &mut AnyStage,
        _state: &mut (),
        cx: &mut IkGatherContext<'_, '_, '_, '_>,
    ) -> Result<(), IkError> {
        let Some(stage) = stage.get_mut::<LimbBatchStage>() else {
            return Err(IkError::StageTypeMismatch);
        };
        if stage.len() != self.limbs.len() {
            return Err(IkError::NotAStage(entity.id()));
        }
        let mut goal = LimbGoal::new(Vec3::ZERO);
        for (i, limb) in self.limbs.iter().enumerate() {
            write_limb_goal(limb, cx, &mut goal)?;
            // (In range: the stage was built with these limbs; the weight is finite.)
            let _ = stage.set_goal(i, goal);
            let _ = stage.set_weight(i, finite_weight(limb.weight));
        }
        Ok(())
    }

    /// One position residual per limb (its solve's, or measured on the final pose for a limb
    /// the solver rejected); the largest rotation residual of the limbs whose tip turns toward
    /// the target, measured on the solved pose.
    fn summarise(stage: &mut AnyStage, _state: &(), summary: &mut IkStageSummary<'_>) {
        let Some(stage) = stage.get::<LimbBatchStage>() else {
            return;
        };
        let mut rotation = 0.0_f32;
        for ((bones, report), goal) in stage
            .limb_bones()
            .zip(stage.reports())
            .zip((0..stage.len()).map(|i| stage.goal(i)))
        {
            let want = goal.and_then(|g| g.orientation);
            // The tip on the solved pose, where a figure needs it (as `IkLimb`'s summary).
            let tip =
                (want.is_some() || report.is_err()).then(|| summary.model_transform(bones[2]));
            if let (Some(want), Some(tip)) = (want, tip) {
                rotation = rotation.max(tip.rotation.angle_between(want));
            }
            let residual = match (report, goal, tip) {
                (Ok(r), _, _) => r.position_error,
                (Err(_), Some(g), Some(tip)) => tip.translation.distance(g.target),
                (Err(_), _, _) => 0.0,
            };
            summary.push_residual(residual);
        }
        summary.rotation_residual = rotation;
    }
}
