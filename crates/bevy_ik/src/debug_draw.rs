//! Debug drawing (feature `debug-draw`): Bevy gizmos for chains, targets, poles, joint-limit
//! cones, residual lines and the centre of mass of balanced humanoids, drawn after transform
//! propagation from the final `GlobalTransform`s. Configure with the [`IkDebugDraw`] resource.

use bevy::app::{App, PostUpdate};
use bevy::color::Color;
use bevy::color::palettes::css;
use bevy::ecs::entity::Entity;
use bevy::ecs::intern::Interned;
use bevy::ecs::query::Without;
use bevy::ecs::reflect::ReflectResource;
use bevy::ecs::resource::Resource;
use bevy::ecs::schedule::common_conditions::resource_exists;
use bevy::ecs::schedule::{IntoScheduleConfigs, ScheduleLabel};
use bevy::ecs::system::{Query, Res};
use bevy::gizmos::config::GizmoConfigStore;
use bevy::gizmos::gizmos::Gizmos;
use bevy::math::{Isometry3d, Quat, Vec3};
use bevy::reflect::prelude::*;
use bevy::transform::TransformSystems;
use bevy::transform::components::GlobalTransform;
use ik_core::Skeleton;
use ik_core::limits::JointLimit;

use ik_core::stack::{FullBodyStage, JacobianStage};

use crate::balance::IkCenterOfMass;
use crate::character::IkCharacter;
use crate::components::{IkDisabled, IkLimb};
use crate::humanoid::{FullBodyData, IkHumanoidTargets};
use crate::rig::{IkRig, RigStage};
use crate::stage::IkStageOf;

/// What the debug drawing shows. Insert or change it at run time.
///
/// Off until asked for: the default has `enabled: false` (every part switched on, so that
/// turning `enabled` on draws everything); [`IkDebugDraw::all`] is the same with `enabled: true`.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_ik::IkDebugDraw;
/// # let mut app = App::new();
/// app.insert_resource(IkDebugDraw::all());
/// ```
#[derive(Resource, Debug, Clone, PartialEq, Reflect)]
#[reflect(Resource, Default, Debug)]
pub struct IkDebugDraw {
    /// Draw anything at all (`false` by default: drawing is off until asked for).
    pub enabled: bool,
    /// Lines along each chain's bones.
    pub chains: bool,
    /// Spheres at targets.
    pub targets: bool,
    /// Crosses at poles and lines from the middle joint to them.
    pub poles: bool,
    /// Swing cones of ball joints with limits (full-body rigs) and hinge axes.
    pub limits: bool,
    /// Lines from each end effector to its target (red when not reached).
    pub residuals: bool,
    /// Full-body humanoids with [`IkBalance`](crate::IkBalance) on: a sphere at the centre of
    /// mass, a line down to its ground projection, a cross at the support point (and, with
    /// `residuals`, the ground-plane line between the two).
    pub center_of_mass: bool,
    /// Radius of target spheres, world units.
    pub target_radius: f32,
    /// Length of limit cones, world units.
    pub cone_length: f32,
}

impl IkDebugDraw {
    /// Everything drawn: the default's parts with `enabled` on.
    #[must_use]
    pub fn all() -> Self {
        Self {
            enabled: true,
            ..Self::default()
        }
    }
}

impl Default for IkDebugDraw {
    fn default() -> Self {
        Self {
            enabled: false,
            chains: true,
            targets: true,
            poles: true,
            limits: true,
            residuals: true,
            center_of_mass: true,
            target_radius: 0.03,
            cone_length: 0.08,
        }
    }
}

pub(crate) fn build(app: &mut App, _schedule: Interned<dyn ScheduleLabel>) {
    app.register_type::<IkDebugDraw>()
        .init_resource::<IkDebugDraw>();
    app.add_systems(
        PostUpdate,
        draw_ik_gizmos
            .after(TransformSystems::Propagate)
            .run_if(resource_exists::<GizmoConfigStore>),
    );
}

const CHAIN: Color = Color::Srgba(css::AQUA);
const TARGET: Color = Color::Srgba(css::ORANGE);
const POLE: Color = Color::Srgba(css::VIOLET);
const LIMIT: Color = Color::Srgba(css::YELLOW);
const REACHED: Color = Color::Srgba(css::LIME);
const MISSED: Color = Color::Srgba(css::RED);
const CENTER_OF_MASS: Color = Color::Srgba(css::FUCHSIA);
const SUPPORT: Color = Color::Srgba(css::WHITE);

/// Residuals below this (world units) draw as reached.
const REACHED_TOLERANCE: f32 = 1e-3;

#[allow(clippy::type_complexity, reason = "system parameters")]
fn draw_ik_gizmos(
    settings: Res<IkDebugDraw>,
    mut gizmos: Gizmos,
    characters: Query<
        (&IkCharacter, Option<&IkHumanoidTargets>),
        (Without<IkDisabled>, Without<IkStageOf>),
    >,
    (limbs, rigs): (Query<&IkLimb>, Query<&IkRig>),
    globals: Query<&GlobalTransform>,
    balances: Query<(&IkCenterOfMass, &GlobalTransform), Without<IkDisabled>>,
) {
    if !settings.enabled {
        return;
    }
    let pos = |e| globals.get(e).ok().map(GlobalTransform::translation);
    for (character, humanoid_targets) in &characters {
        let Some(rt) = character.rt.as_ref() else {
            continue;
        };
        let skeleton = rt.stack.skeleton();
        let entities = rt.entities.as_slice();
        let bone_line = |gizmos: &mut Gizmos, bone: usize| {
            let parent = skeleton.parent(bone).map(|p| entities[p]);
            if let (Some(a), Some(b)) = (parent.and_then(pos), pos(entities[bone])) {
                gizmos.line(a, b, CHAIN);
            }
        };
        for st in &rt.stages {
            let Some(slot) = st.slot.and_then(|i| rt.stack.slot(i)) else {
                continue;
            };
            let solved = st.summary.is_some();
            match (
                slot.stage.as_two_bone().zip(limbs.get(st.entity).ok()),
                slot.stage
                    .get::<JacobianStage>()
                    .zip(st.state.downcast_ref::<RigStage>()),
                slot.stage
                    .get::<FullBodyStage>()
                    .zip(st.state.downcast_ref::<FullBodyData>()),
            ) {
                (Some((limb_stage, limb)), _, _) => {
                    let [root, _, tip] = limb_stage.ik().bones();
                    let (root, tip, target, pole) = (&root, &tip, limb.target, limb.pole);
                    let mut chain = Vec::new();
                    let mut cur = Some(*tip);
                    while let Some(c) = cur {
                        chain.push(entities[c]);
                        if c == *root {
                            break;
                        }
                        cur = skeleton.parent(c);
                    }
                    chain.reverse();
                    if settings.chains {
                        for w in chain.windows(2) {
                            if let (Some(a), Some(b)) = (pos(w[0]), pos(w[1])) {
                                gizmos.line(a, b, CHAIN);
                            }
                        }
                    }
                    let tip_pos = pos(entities[*tip]);
                    draw_target(
                        &mut gizmos,
                        &settings,
                        tip_pos,
                        target.and_then(pos),
                        solved,
                    );
                    if settings.poles
                        && let Some(pole) = pole.and_then(pos)
                    {
                        gizmos.cross(
                            Isometry3d::from_translation(pole),
                            settings.target_radius,
                            POLE,
                        );
                        if let Some(mid) = chain.get(chain.len() / 2).and_then(|&e| pos(e)) {
                            gizmos.line(mid, pole, POLE);
                        }
                    }
                }
                (_, Some((stage, data)), _) => {
                    if settings.chains {
                        for joint in stage.solver().joints() {
                            bone_line(&mut gizmos, joint.bone);
                        }
                    }
                    if let Ok(rig) = rigs.get(st.entity) {
                        for (goal, tasks) in rig.goals.iter().zip(&data.goal_tasks) {
                            let bone = pos(entities[tasks.bone]);
                            draw_target(
                                &mut gizmos,
                                &settings,
                                bone,
                                goal.target.and_then(pos),
                                solved,
                            );
                        }
                    }
                    if settings.limits {
                        for joint in stage.solver().joints() {
                            draw_limit(
                                &mut gizmos,
                                &settings,
                                (skeleton, entities),
                                joint.bone,
                                &joint.limit,
                                &globals,
                            );
                        }
                    }
                }
                (_, _, Some((stage, data))) => {
                    let map = &data.map;
                    let entity_of = |role| map.get(role).map(|i| entities[i]);
                    if settings.chains {
                        for (role, bone) in map.iter() {
                            let parent = map.mapped_parent(role).and_then(entity_of);
                            if let (Some(a), Some(b)) = (parent.and_then(pos), pos(entities[bone]))
                            {
                                gizmos.line(a, b, CHAIN);
                            }
                        }
                    }
                    let targets = humanoid_targets.cloned().unwrap_or_default();
                    let effector_targets = [
                        targets.left_hand,
                        targets.right_hand,
                        targets.left_foot,
                        targets.right_foot,
                        targets.pelvis,
                    ];
                    for (target, bone) in effector_targets.iter().zip(stage.solver.effector_bones())
                    {
                        let effector = pos(entities[bone]);
                        draw_target(
                            &mut gizmos,
                            &settings,
                            effector,
                            target.and_then(pos),
                            solved,
                        );
                    }
                    if let Some(look) = targets.head.and_then(pos) {
                        target_sphere(&mut gizmos, &settings, look);
                        if settings.poles
                            && let Some(head) = pos(entities[stage.solver.head_bone()])
                        {
                            gizmos.line(head, look, POLE);
                        }
                    }
                    if settings.limits {
                        let limits = stage.solver.limits();
                        for (role, bone) in map.iter() {
                            draw_limit(
                                &mut gizmos,
                                &settings,
                                (skeleton, entities),
                                bone,
                                &limits.get(role),
                                &globals,
                            );
                        }
                    }
                }
                _ => {
                    if settings.chains {
                        for &b in slot.stage.bones() {
                            bone_line(&mut gizmos, b);
                        }
                    }
                }
            }
        }
    }
    draw_balance(&mut gizmos, &settings, &balances);
}

/// The centre of mass, its ground projection and the support point of each balanced humanoid
/// (their positions are in the humanoid entity's frame).
fn draw_balance(
    gizmos: &mut Gizmos,
    settings: &IkDebugDraw,
    balances: &Query<(&IkCenterOfMass, &GlobalTransform), Without<IkDisabled>>,
) {
    if !settings.center_of_mass {
        return;
    }
    for (com, global) in balances {
        if !com.active {
            continue;
        }
        let center = global.transform_point(com.center_of_mass);
        let ground = global.transform_point(com.on_ground());
        let support = global.transform_point(com.support);
        if !(center.is_finite() && ground.is_finite() && support.is_finite()) {
            continue;
        }
        let r = settings.target_radius;
        gizmos.sphere(Isometry3d::from_translation(center), r, CENTER_OF_MASS);
        gizmos.line(center, ground, CENTER_OF_MASS);
        gizmos.cross(Isometry3d::from_translation(ground), r, CENTER_OF_MASS);
        gizmos.cross(Isometry3d::from_translation(support), r * 1.5, SUPPORT);
        if settings.residuals {
            let reached = com.offset() < REACHED_TOLERANCE;
            gizmos.line(ground, support, if reached { REACHED } else { MISSED });
        }
    }
}

fn draw_target(
    gizmos: &mut Gizmos,
    settings: &IkDebugDraw,
    effector: Option<Vec3>,
    target: Option<Vec3>,
    solved: bool,
) {
    let Some(target) = target.filter(|t| t.is_finite()) else {
        return;
    };
    target_sphere(gizmos, settings, target);
    if settings.residuals
        && let Some(effector) = effector
    {
        let reached = solved && effector.distance(target) < REACHED_TOLERANCE;
        gizmos.line(effector, target, if reached { REACHED } else { MISSED });
    }
}

/// A target's sphere, when targets are drawn.
fn target_sphere(gizmos: &mut Gizmos, settings: &IkDebugDraw, at: Vec3) {
    if settings.targets {
        gizmos.sphere(
            Isometry3d::from_translation(at),
            settings.target_radius,
            TARGET,
        );
    }
}

/// A swing cone (ellipse of directions around the twist axis) or a hinge axis, at the joint,
/// in the bone's rest frame carried by its parent's current global rotation.
fn draw_limit(
    gizmos: &mut Gizmos,
    settings: &IkDebugDraw,
    (skeleton, entities): (&Skeleton, &[Entity]),
    bone: usize,
    limit: &JointLimit,
    globals: &Query<&GlobalTransform>,
) {
    let Some(b) = skeleton.bone(bone) else {
        return;
    };
    let Ok(joint) = globals.get(entities[bone]) else {
        return;
    };
    let parent_rotation = b
        .parent
        .and_then(|p| globals.get(entities[p]).ok())
        .map_or(Quat::IDENTITY, GlobalTransform::rotation);
    let frame = parent_rotation * b.rest.rotation;
    let apex = joint.translation();
    let len = settings.cone_length;
    match limit {
        JointLimit::SwingTwist(st) => {
            const STEPS: usize = 16;
            let third = st.twist_axis.cross(st.swing_axis);
            let mut prev = None;
            for k in 0..=STEPS {
                let a = k as f32 / STEPS as f32 * core::f32::consts::TAU;
                let swing = st.swing_axis * st.swing_half_angles.x * a.cos()
                    + third * st.swing_half_angles.y * a.sin();
                let dir = frame * (Quat::from_scaled_axis(swing) * st.twist_axis);
                let p = apex + dir * len;
                if k % 4 == 0 {
                    gizmos.line(apex, p, LIMIT);
                }
                if let Some(q) = prev {
                    gizmos.line(q, p, LIMIT);
                }
                prev = Some(p);
            }
        }
        JointLimit::Hinge { axis, .. } => {
            let axis = frame * *axis;
            gizmos.line(apex - axis * len * 0.5, apex + axis * len * 0.5, LIMIT);
        }
        _ => {}
    }
}
