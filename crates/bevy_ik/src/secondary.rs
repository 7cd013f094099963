//! Secondary motion and chains as stages of a character: [`IkSpringChain`] (spring bones:
//! hair, skirts, tails, ears; with [`IkSpringCollider`] entities), [`IkChain`] (FABRIK / CCD
//! over a chain of any length, with target and pole entities), [`IkSpline`] (bones laid along
//! a curve: control-point entities or a Bevy [`CubicCurve`](bevy::math::cubic_splines::CubicCurve)) and [`IkVelocityLimit`] (bones
//! never turn faster than a set speed).
//!
//! Each is sugar over [`IkCustom`], like the [behaviours](crate::behaviours): put it on a
//! stage entity of a character (`(IkSpringChain { .. }, IkStageOf(character))`); a system
//! inserts (and, when its structure changes, replaces) the entity's `IkCustom` with the
//! ik-core stage ([`SpringBoneStage`], [`ChainIkStage`], [`SplineIkStage`],
//! [`AngularVelocityLimiter`]) built on the character's skeleton, keyed by its structure
//! ([`IkCustom::with_key`]). The component is also the stage's [`IkStageInput`]: every frame,
//! between set-up and solve, its per-frame fields and the frame's time step go into the built
//! stage. Its status is the stage entity's [`IkStatus`](crate::IkStatus), like any stage (a
//! spline's fit error is its position residual).
//!
//! What is structure (a change rebuilds the stage, and a spring's simulation starts again
//! from the animated pose) and what is read every frame:
//!
//! | component | structure | per frame |
//! |---|---|---|
//! | [`IkSpringChain`] | joints and their parameters, tail, centre, colliders (and their shapes), settings | weight, time step, the character's place in the world |
//! | [`IkChain`] | root, tip, limits | target, pole, method, iterations, tolerance, tip rotation, weight |
//! | [`IkSpline`] | root, tip | curve, twist, weight |
//! | [`IkVelocityLimit`] | bones | speed, time step |
//!
//! VRM avatars get their spring chains and colliders from the file (feature `vrm`, see
//! [`crate::vrm`]); any other glTF gets them by component.
//!
//! ## Systems
//!
//! ```text
//! AnimationSystems
//!   (after move_reach_targets)
//!   sync_secondary_stages        IkSpringChain/IkChain/IkSpline/IkVelocityLimit → IkCustom
//! IkSystems::Prepare             set_up_characters builds the stages
//!   (after set-up)               apply_stage_inputs::<T>: weights, goals, dt into the stages
//!   clear_spring_resets          IkSpringReset markers removed once applied
//! IkSystems::Solve               solve_characters
//! ```

use core::fmt::Write as _;

use bevy::ecs::change_detection::DetectChanges;
use bevy::ecs::entity::Entity;
use bevy::ecs::query::{Changed, Has, With};
use bevy::ecs::system::{Commands, Query};
use bevy::ecs::world::Ref;
use bevy::math::Vec3;
use ik_core::Skeleton;
use ik_core::chain::{ChainGoal, ChainIk, ChainIkStage};
use ik_core::spline::{CurveKind, SplineGoal, SplineIk, SplineIkStage};
use ik_core::spring::{ColliderDesc, SpringBoneStage, SpringChainDesc};
use ik_core::stack::StackError;
use ik_core::velocity::AngularVelocityLimiter;

use crate::components::BoneRef;
pub use crate::components::secondary::{
    IkChain, IkChainMethod, IkColliderShape, IkCurveKind, IkSpline, IkSplineCurve, IkSpringChain,
    IkSpringCollider, IkSpringJoint, IkSpringReset, IkSpringTail, IkVelocityLimit,
};
use crate::stage::{IkCustom, IkStageContext, IkStageInput, IkStageInputPlugin, sync_custom};

/// The structural key of a spring chain: everything its builder reads but the bone
/// identities (floats as their exact `Debug` text, so any change of value is a change).
fn spring_key(chain: &IkSpringChain, shapes: &[Option<IkColliderShape>]) -> String {
    let mut key = String::new();
    for j in &chain.joints {
        let _ = write!(
            key,
            "{:?}{:?}{:?}{:?}{:?};",
            j.hit_radius, j.stiffness, j.gravity_power, j.gravity_dir, j.drag_force
        );
    }
    let _ = write!(
        key,
        "{:?}{}{:?}{:?}",
        chain.tail,
        chain.center.is_some(),
        shapes,
        chain.settings
    );
    key
}

fn spring_custom(chain: &IkSpringChain, shapes: Vec<Option<IkColliderShape>>) -> IkCustom {
    let key = spring_key(chain, &shapes);
    let joints: Vec<IkSpringJoint> = chain.joints.clone();
    let tail = chain.tail.into();
    let has_center = chain.center.is_some();
    let settings = chain.settings;
    let bones = joints
        .iter()
        .map(|j| j.bone.clone())
        .chain(chain.center.clone())
        .chain(chain.colliders.iter().map(|&e| BoneRef::Entity(e)))
        .collect::<Vec<_>>();
    IkCustom::new(bones, move |s: &Skeleton, b: &[usize]| {
        let n = joints.len();
        let center = has_center.then(|| b[n]);
        let first_collider = n + usize::from(has_center);
        let colliders: Vec<ColliderDesc> = shapes
            .iter()
            .zip(&b[first_collider..])
            .filter_map(|(shape, &bone)| {
                shape.map(|shape| ColliderDesc {
                    bone: Some(bone),
                    shape,
                })
            })
            .collect();
        let desc = SpringChainDesc {
            joints: joints
                .iter()
                .zip(b)
                .map(|(j, &bone)| j.desc(bone))
                .collect(),
            tail,
            center,
            colliders: (0..colliders.len()).collect(),
            weight: 1.0,
        };
        SpringBoneStage::try_with_settings(s, &[desc], &colliders, settings).map_err(Into::into)
    })
    .with_key(key)
}

fn chain_custom(chain: &IkChain) -> IkCustom {
    let limits = chain.limits.clone();
    let settings = chain.settings();
    IkCustom::new(
        [chain.root.clone(), chain.tip.clone()],
        move |s: &Skeleton, b: &[usize]| {
            let c = s.chain(b[0], b[1])?;
            let ik = ChainIk::try_new(s, &c, &limits, settings)?;
            // Until a target is handed in, the goal is where the tip stands at rest.
            let tip = s.rest_model_transforms()[b[1]].translation;
            Ok::<_, StackError>(ChainIkStage::new(ik, ChainGoal::new(tip)))
        },
    )
    .with_key(format!("{:?}", chain.limits))
}

fn spline_custom(spline: &IkSpline) -> IkCustom {
    IkCustom::new(
        [spline.root.clone(), spline.tip.clone()],
        |s: &Skeleton, b: &[usize]| {
            let c = s.chain(b[0], b[1])?;
            let ik = SplineIk::try_new(s, &c)?;
            Ok::<_, StackError>(SplineIkStage::new(ik, SplineGoal::default()))
        },
    )
    .with_key(())
}

fn velocity_custom(limit: &IkVelocityLimit) -> IkCustom {
    let speed = limit.max_speed.to_radians();
    IkCustom::new(limit.bones.clone(), move |_: &Skeleton, b: &[usize]| {
        Ok::<_, StackError>(AngularVelocityLimiter::new(b, speed))
    })
    .with_key(())
}

/// Inserts each component's [`IkCustom`] where there is none or its structure changed; the
/// per-frame inputs go in through [`IkStageInput`].
#[allow(clippy::type_complexity, reason = "system parameters")]
pub(crate) fn sync_secondary_stages(
    mut commands: Commands,
    springs: Query<(Entity, Ref<IkSpringChain>, Option<&IkCustom>)>,
    chains: Query<(Entity, Ref<IkChain>, Option<&IkCustom>)>,
    splines: Query<(Entity, Ref<IkSpline>, Option<&IkCustom>)>,
    limits: Query<(Entity, Ref<IkVelocityLimit>, Option<&IkCustom>)>,
    colliders: Query<&IkSpringCollider>,
    changed_colliders: Query<(), Changed<IkSpringCollider>>,
) {
    let any_collider_changed = !changed_colliders.is_empty();
    for (e, chain, custom) in &springs {
        if !(chain.is_changed() || custom.is_none() || any_collider_changed) {
            continue;
        }
        let shapes: Vec<Option<IkColliderShape>> = chain
            .colliders
            .iter()
            .map(|&c| colliders.get(c).ok().map(|c| c.shape))
            .collect();
        sync_custom(&mut commands, e, custom, spring_custom(&chain, shapes));
    }
    for (e, chain, custom) in &chains {
        if chain.is_changed() || custom.is_none() {
            sync_custom(&mut commands, e, custom, chain_custom(&chain));
        }
    }
    for (e, spline, custom) in &splines {
        if spline.is_changed() || custom.is_none() {
            sync_custom(&mut commands, e, custom, spline_custom(&spline));
        }
    }
    for (e, limit, custom) in &limits {
        if limit.is_changed() || custom.is_none() {
            sync_custom(&mut commands, e, custom, velocity_custom(&limit));
        }
    }
}

/// Removes the [`IkSpringReset`] markers once their stages were reset.
pub(crate) fn clear_spring_resets(
    mut commands: Commands,
    resets: Query<Entity, With<IkSpringReset>>,
) {
    for e in &resets {
        commands.entity(e).remove::<IkSpringReset>();
    }
}

impl IkStageInput for IkSpringChain {
    type Stage = SpringBoneStage;
    type Data = (&'static Self, Has<IkSpringReset>);

    fn apply((chain, reset): (&Self, bool), stage: &mut SpringBoneStage, cx: &IkStageContext) {
        stage.dt = cx.delta_secs();
        stage.model_to_world = cx.model_to_world();
        stage.set_weight(0, chain.weight);
        if reset {
            stage.reset();
        }
    }
}

impl IkStageInput for IkChain {
    type Stage = ChainIkStage;
    type Data = &'static Self;

    fn apply(chain: &Self, stage: &mut ChainIkStage, cx: &IkStageContext) {
        let settings = chain.settings();
        if *stage.ik().settings() != settings {
            // Bad values are reported by keeping the last good settings.
            let _ = stage.ik_mut().set_settings(settings);
        }
        stage.goal.pole = chain
            .pole
            .and_then(|p| cx.in_model_space(p))
            .map(|t| t.translation);
        stage.target_sets_tip_rotation = chain.tip_rotation;
        if !chain.tip_rotation {
            stage.goal.tip_rotation = None;
        }
    }

    fn weight(chain: &&Self) -> Option<f32> {
        Some(if chain.target.is_some() {
            chain.weight
        } else {
            0.0
        })
    }

    fn target(chain: &&Self) -> Option<Option<Entity>> {
        Some(chain.target)
    }
}

/// `segment`'s Bézier control points from its polynomial coefficients
/// (`a + bt + ct² + dt³`): exact.
fn bezier_points(coeff: [Vec3; 4]) -> [Vec3; 4] {
    let [a, b, c, d] = coeff;
    [a, a + b / 3.0, a + b * (2.0 / 3.0) + c / 3.0, a + b + c + d]
}

impl IkStageInput for IkSpline {
    type Stage = SplineIkStage;
    type Data = &'static Self;

    fn apply(spline: &Self, stage: &mut SplineIkStage, cx: &IkStageContext) {
        let goal = &mut stage.goal;
        goal.twist_start = spline.twist_start.to_radians();
        goal.twist_end = spline.twist_end.to_radians();
        // In place: the same number of points every frame allocates nothing.
        goal.points.clear();
        match &spline.curve {
            IkSplineCurve::Points { kind, points } => {
                goal.kind = match kind {
                    IkCurveKind::CatmullRom => CurveKind::CatmullRom,
                    IkCurveKind::Bezier => CurveKind::Bezier,
                };
                // A missing point leaves the curve malformed: the stage reports it.
                for &p in points {
                    goal.points
                        .push(cx.in_model_space(p).map_or(Vec3::NAN, |t| t.translation));
                }
            }
            IkSplineCurve::Cubic(curve) => {
                goal.kind = CurveKind::Bezier;
                for (i, segment) in curve.segments().iter().enumerate() {
                    let [p0, c0, c1, p1] = bezier_points(segment.coeff);
                    if i == 0 {
                        goal.points.push(p0);
                    }
                    goal.points.extend([c0, c1, p1]);
                }
            }
        }
    }

    fn weight(spline: &&Self) -> Option<f32> {
        Some(spline.weight)
    }
}

impl IkStageInput for IkVelocityLimit {
    type Stage = AngularVelocityLimiter;
    type Data = &'static Self;

    fn apply(limit: &Self, stage: &mut AngularVelocityLimiter, cx: &IkStageContext) {
        stage.dt = cx.delta_secs();
        stage.max_speed = limit.max_speed.to_radians();
    }

    fn weight(_: &&Self) -> Option<f32> {
        Some(1.0)
    }
}

/// Registers the components and systems.
pub(crate) fn build(
    app: &mut bevy::app::App,
    schedule: bevy::ecs::intern::Interned<dyn bevy::ecs::schedule::ScheduleLabel>,
) {
    use bevy::ecs::schedule::IntoScheduleConfigs;
    app.register_type::<IkSpringChain>()
        .register_type::<IkSpringJoint>()
        .register_type::<IkSpringTail>()
        .register_type::<IkSpringReset>()
        .register_type::<IkSpringCollider>()
        .register_type::<IkChain>()
        .register_type::<IkChainMethod>()
        .register_type::<IkSpline>()
        .register_type::<IkSplineCurve>()
        .register_type::<IkCurveKind>()
        .register_type::<IkVelocityLimit>();
    app.add_systems(
        schedule,
        (
            // After the reach targets, which write `IkCustom` weights this system reads.
            sync_secondary_stages
                .after(bevy::app::AnimationSystems)
                .after(crate::behaviours::move_reach_targets)
                .before(crate::IkSystems::Prepare),
            clear_spring_resets
                .in_set(crate::IkSystems::Prepare)
                .after(crate::stage::StageInputSystems),
        ),
    );
    app.add_plugins((
        IkStageInputPlugin::<IkSpringChain>::new(),
        IkStageInputPlugin::<IkChain>::new(),
        IkStageInputPlugin::<IkSpline>::new(),
        IkStageInputPlugin::<IkVelocityLimit>::new(),
    ));
}
