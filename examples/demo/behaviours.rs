//! The behaviour stages on the demo character, switched from the panel: a look-at chain
//! ([`IkLookAt`]: the head, neck and spine follow a draggable point, the eyes first where the
//! rig has eye bones), aim ([`IkAim`]: a flashlight prop in the right hand points at a
//! draggable point, its top kept up), twist distribution ([`IkTwist`], with a close-up of
//! the right wrist and its twist bones drawn) and a two-handed grip ([`IkGrip`] on the
//! full-body humanoid: the left hand holds a staff the right hand carries, solved as a
//! relative task of the same solve — drag the right hand or the pelvis and the left hand
//! stays on the staff).
//!
//! Each behaviour is a stage entity of the character (`IkStageOf`), after the solver's own
//! stages, with a pickable handle (a [`TargetHandle`] the scripted motion leaves at home).
//! `BEVY_IK_DEMO_BEHAVIOURS=look,aim,twist,closeup,grip` switches them on at start (for
//! screenshots).

use bevy::prelude::*;
use bevy_egui::egui;
use bevy_ik::ik_core::behaviours::twist::is_twist_name;
use bevy_ik::ik_core::humanoid::HumanoidBone;
use bevy_ik::prelude::*;

use crate::camera::Orbit;
use crate::character::{BodyFrame, Character};
use crate::handles::{Role, TargetHandle};

/// Adds the behaviours' panel state and systems.
pub struct BehavioursPlugin;

impl Plugin for BehavioursPlugin {
    fn build(&self, app: &mut App) {
        let mut ui = BehaviourUi::default();
        if let Ok(list) = std::env::var("BEVY_IK_DEMO_BEHAVIOURS") {
            for word in list.split(',') {
                match word.trim() {
                    "look" => ui.look_at = true,
                    "aim" => ui.aim = true,
                    "twist" => ui.twist = true,
                    "closeup" => ui.close_up = true,
                    "grip" => ui.grip = true,
                    _ => {}
                }
            }
        }
        app.insert_resource(ui)
            .init_resource::<BehaviourInfo>()
            .init_resource::<Spawned>()
            .add_systems(
                Update,
                (
                    spawn_behaviours,
                    // After the camera frames a new character, or it would undo the zoom.
                    close_up.after(crate::camera::frame_character),
                    draw_behaviours,
                ),
            );
    }
}

/// The panel's switches.
#[derive(Resource, Default, Clone, PartialEq)]
pub struct BehaviourUi {
    /// Look-at chain on.
    pub look_at: bool,
    /// Aim on.
    pub aim: bool,
    /// Twist distribution on.
    pub twist: bool,
    /// The camera on the right wrist.
    pub close_up: bool,
    /// The left hand grips a staff the right hand holds (full body).
    pub grip: bool,
}

/// What the panel shows about the behaviours.
#[derive(Resource, Default)]
pub struct BehaviourInfo {
    /// Per stage: name, ready, last error.
    pub stages: Vec<(&'static str, bool, Option<String>)>,
    /// Twist/roll helper bones found by name on the character.
    pub twist_bones: usize,
}

/// The entities spawned for each behaviour.
#[derive(Resource, Default)]
struct Spawned {
    character: Option<Entity>,
    look: Vec<Entity>,
    aim: Vec<Entity>,
    twist: Vec<Entity>,
    /// The staff of the two-handed grip (a child of the right hand bone), while the grip is on.
    grip: Vec<Entity>,
    /// The aim's prop (origin, axis in the hand's frame) and target, for drawing.
    aim_ray: Option<(Entity, Vec3, Vec3, Entity)>,
    look_target: Option<Entity>,
}

/// The panel section (called by `panel.rs`).
pub fn controls(ui: &mut egui::Ui, state: &mut BehaviourUi, info: &BehaviourInfo) {
    ui.checkbox(&mut state.look_at, "Look-at chain: head follows the cyan handle")
        .on_hover_text("IkLookAt: eyes → head → neck → spine share the turn, elliptic limits, smoothing; a target behind fades back to the animation");
    ui.checkbox(
        &mut state.aim,
        "Aim: flashlight in the right hand at the red handle",
    )
    .on_hover_text("IkAim: chest → hand turn so an offset ray hits the target, its top kept up");
    ui.horizontal(|ui| {
        ui.checkbox(&mut state.twist, "Twist distribution")
            .on_hover_text("IkTwist: the wrist's twist spread over forearm twist bones");
        ui.checkbox(&mut state.close_up, "Wrist close-up");
    });
    ui.checkbox(
        &mut state.grip,
        "Two-handed grip: the left hand holds the right hand's staff",
    )
    .on_hover_text("IkGrip on the full-body humanoid: the left hand's goal is relative to the right hand, solved in the same solve (no one-frame lag); drag the right hand or the pelvis");
    ui.small(format!(
        "Twist bones on this rig (by name): {}",
        info.twist_bones
    ));
    for (name, ready, error) in &info.stages {
        match error {
            Some(e) => ui.colored_label(egui::Color32::LIGHT_RED, format!("{name}: {e}")),
            None => ui.small(format!(
                "{name}: {}",
                if *ready { "ready" } else { "setting up" }
            )),
        };
    }
}

fn despawn_all(commands: &mut Commands, list: &mut Vec<Entity>) {
    for e in list.drain(..) {
        commands.entity(e).try_despawn();
    }
}

#[allow(clippy::too_many_arguments)]
fn spawn_behaviours(
    ui: Res<BehaviourUi>,
    mut spawned: ResMut<Spawned>,
    mut info: ResMut<BehaviourInfo>,
    characters: Query<(Entity, &IkHumanoidBones), With<Character>>,
    mut humanoids: Query<&mut IkHumanoid, With<Character>>,
    frame: Option<Res<BodyFrame>>,
    globals: Query<&GlobalTransform>,
    statuses: Query<&IkStatus>,
    names: Query<(Entity, &Name)>,
    parents: Query<&ChildOf>,
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let current = characters.iter().next();
    if spawned.character != current.map(|c| c.0) {
        let s = &mut *spawned;
        for list in [&mut s.look, &mut s.aim, &mut s.twist, &mut s.grip] {
            despawn_all(&mut commands, list);
        }
        s.aim_ray = None;
        s.look_target = None;
        s.character = current.map(|c| c.0);
        info.twist_bones = current.map_or(0, |(ch, _)| {
            names
                .iter()
                .filter(|(e, n)| {
                    is_twist_name(n.as_str()) && parents.iter_ancestors(*e).any(|a| a == ch)
                })
                .count()
        });
    }
    let (Some((character, bones)), Some(frame)) = (current, frame) else {
        return;
    };
    let s = frame.scale;
    let global = |r: HumanoidBone| bones.get(r).and_then(|e| globals.get(e).ok().copied());
    let handle = |commands: &mut Commands,
                  meshes: &mut Assets<Mesh>,
                  materials: &mut Assets<StandardMaterial>,
                  at: Vec3,
                  color: Color| {
        let transform = Transform::from_translation(at);
        commands
            .spawn((
                Name::new("behaviour target"),
                transform,
                Mesh3d(meshes.add(Sphere::new(0.04 * s))),
                MeshMaterial3d(materials.add(StandardMaterial {
                    base_color: color,
                    unlit: true,
                    ..default()
                })),
                TargetHandle {
                    // A pole-like handle: the scripted motion leaves it at home.
                    role: Role::RightFoot,
                    pole: true,
                    home: transform,
                    radius: 0.06 * s,
                    rest_dir: frame.up,
                    base_color: color,
                },
            ))
            .id()
    };
    if ui.look_at && spawned.look.is_empty() {
        if let Some(head) = global(HumanoidBone::Head) {
            let at = head.translation() + frame.vector(Vec3::new(0.45, 0.1, 0.7));
            let h = handle(
                &mut commands,
                &mut meshes,
                &mut materials,
                at,
                Color::srgb(0.2, 0.9, 1.0),
            );
            let stage = commands
                .spawn((Name::new("look-at"), IkLookAt::at(h), IkStageOf(character)))
                .id();
            spawned.look = vec![stage, h];
            spawned.look_target = Some(h);
        }
    } else if !ui.look_at && !spawned.look.is_empty() {
        despawn_all(&mut commands, &mut spawned.look);
        spawned.look_target = None;
    }
    if ui.aim && spawned.aim.is_empty() {
        let root = [HumanoidBone::Chest, HumanoidBone::Spine]
            .into_iter()
            .find(|&r| bones.get(r).is_some());
        if let (Some(root), Some(hand), Some(hand_e)) = (
            root,
            global(HumanoidBone::RightHand),
            bones.get(HumanoidBone::RightHand),
        ) {
            let to_local = hand.affine().inverse();
            let axis = (hand.rotation().inverse() * frame.forward).normalize();
            let up = (hand.rotation().inverse() * frame.up).normalize();
            let origin = to_local.transform_vector3(frame.vector(Vec3::new(0.0, 0.03, 0.14)));
            let inv_scale = 1.0 / hand.scale().x.abs().max(1e-6);
            let prop = commands
                .spawn((
                    Name::new("flashlight"),
                    Mesh3d(meshes.add(Cuboid::new(0.035 * s, 0.035 * s, 0.16 * s))),
                    MeshMaterial3d(materials.add(StandardMaterial {
                        base_color: Color::srgb(0.25, 0.25, 0.3),
                        ..default()
                    })),
                    Transform {
                        translation: origin * 0.5,
                        rotation: Quat::from_rotation_arc(Vec3::Z, axis),
                        scale: Vec3::splat(inv_scale),
                    },
                    ChildOf(hand_e),
                ))
                .id();
            let at = hand.translation() + frame.vector(Vec3::new(-0.3, 0.25, 1.2));
            let h = handle(
                &mut commands,
                &mut meshes,
                &mut materials,
                at,
                Color::srgb(1.0, 0.25, 0.2),
            );
            let stage = commands
                .spawn((
                    Name::new("aim"),
                    IkAim {
                        target: Some(h),
                        root: root.into(),
                        tip: HumanoidBone::RightHand.into(),
                        axis,
                        origin,
                        pole_axis: Some(up),
                        pole: Vec3::Y,
                        ..IkAim::default()
                    },
                    IkStageOf(character),
                ))
                .id();
            spawned.aim = vec![stage, h, prop];
            spawned.aim_ray = Some((hand_e, origin, axis, h));
        }
    } else if !ui.aim && !spawned.aim.is_empty() {
        despawn_all(&mut commands, &mut spawned.aim);
        spawned.aim_ray = None;
    }
    if ui.twist && spawned.twist.is_empty() {
        let stage = commands
            .spawn((Name::new("twist"), IkTwist::default(), IkStageOf(character)))
            .id();
        spawned.twist = vec![stage];
    } else if !ui.twist && !spawned.twist.is_empty() {
        despawn_all(&mut commands, &mut spawned.twist);
    }
    let full_body = humanoids
        .get(character)
        .is_ok_and(|h| h.solver == IkHumanoidSolver::FullBody);
    if ui.grip && spawned.grip.is_empty() && full_body {
        if let (Some(right), Some(left), Some(right_e), Ok(mut humanoid)) = (
            global(HumanoidBone::RightHand),
            global(HumanoidBone::LeftHand),
            bones.get(HumanoidBone::RightHand),
            humanoids.get_mut(character),
        ) {
            // The grip point: ahead of the right hand and toward the body's middle, where a
            // staff held in front would be; the left hand keeps its current orientation. The
            // offset is expressed in the right hand bone's own frame (whatever its axes and
            // scale), as `IkGrip` wants it.
            let grip_at = right.translation() + frame.vector(Vec3::new(0.12, 0.05, 0.3));
            let left_goal = GlobalTransform::from(Transform {
                translation: grip_at,
                rotation: left.rotation(),
                scale: Vec3::ONE,
            });
            humanoid.grip = Some(IkGrip::left_on_right(left_goal.reparented_to(&right)));
            // The staff: from behind the right hand through the grip point and beyond.
            let from = right.translation() - (grip_at - right.translation()) * 0.4;
            let to = grip_at + (grip_at - right.translation()) * 0.5;
            let staff = GlobalTransform::from(Transform {
                translation: (from + to) * 0.5,
                rotation: Quat::from_rotation_arc(Vec3::Y, (to - from).normalize()),
                scale: Vec3::ONE,
            });
            let prop = commands
                .spawn((
                    Name::new("staff"),
                    Mesh3d(meshes.add(Cylinder::new(0.015 * s, from.distance(to)))),
                    MeshMaterial3d(materials.add(StandardMaterial {
                        base_color: Color::srgb(0.55, 0.35, 0.2),
                        ..default()
                    })),
                    staff.reparented_to(&right),
                    ChildOf(right_e),
                ))
                .id();
            spawned.grip = vec![prop];
        }
    } else if (!ui.grip || !full_body) && !spawned.grip.is_empty() {
        despawn_all(&mut commands, &mut spawned.grip);
        if let Ok(mut humanoid) = humanoids.get_mut(character)
            && humanoid.grip.is_some()
        {
            humanoid.grip = None;
        }
    }
    info.stages = [
        ("look-at", spawned.look.first()),
        ("aim", spawned.aim.first()),
        ("twist", spawned.twist.first()),
    ]
    .into_iter()
    .filter_map(|(n, e)| {
        let st = statuses.get(*e?).ok()?;
        Some((n, st.ready, st.last_error.as_ref().map(ToString::to_string)))
    })
    .collect();
}

/// Puts the orbit camera on the right wrist while the close-up is on.
fn close_up(
    ui: Res<BehaviourUi>,
    characters: Query<&IkHumanoidBones, With<Character>>,
    globals: Query<&GlobalTransform>,
    frame: Option<Res<BodyFrame>>,
    mut orbits: Query<(&mut Orbit, &mut Transform)>,
    mut was: Local<bool>,
) {
    let (Some(frame), Some(bones)) = (frame, characters.iter().next()) else {
        return;
    };
    // Zoom in once when switched on (and the character is there) or when the camera framed a
    // newly opened character; follow the wrist after.
    let turned_on = ui.close_up && (!*was || frame.is_changed());
    *was = ui.close_up;
    if !ui.close_up {
        return;
    }
    let Some(wrist) = bones
        .get(HumanoidBone::RightHand)
        .and_then(|e| globals.get(e).ok())
    else {
        return;
    };
    for (mut orbit, mut transform) in &mut orbits {
        if orbit.focus != wrist.translation() || turned_on {
            orbit.focus = wrist.translation();
            if turned_on {
                orbit.distance = (0.45 * frame.scale).max(orbit.range.0);
            }
            let t = orbit.transform();
            transform.set_if_neq(t);
        }
    }
}

/// The aim ray, the look line and (close-up) the forearm's and wrist's axes.
fn draw_behaviours(
    spawned: Res<Spawned>,
    ui: Res<BehaviourUi>,
    characters: Query<&IkHumanoidBones, With<Character>>,
    globals: Query<&GlobalTransform>,
    frame: Option<Res<BodyFrame>>,
    names: Query<(Entity, &Name)>,
    parents: Query<&ChildOf>,
    mut gizmos: Gizmos,
) {
    let Some(frame) = frame else { return };
    if let Some((hand, origin, axis, target)) = spawned.aim_ray
        && let (Ok(h), Ok(t)) = (globals.get(hand), globals.get(target))
    {
        let o = h.transform_point(origin);
        let d = (h.rotation() * axis).normalize();
        let len = o.distance(t.translation());
        gizmos.line(o, o + d * len, Color::srgb(1.0, 0.9, 0.3));
    }
    let Some(bones) = characters.iter().next() else {
        return;
    };
    if let Some(t) = spawned.look_target
        && let (Some(head), Ok(t)) = (
            bones
                .get(HumanoidBone::Head)
                .and_then(|e| globals.get(e).ok()),
            globals.get(t),
        )
    {
        gizmos.line(
            head.translation(),
            t.translation(),
            Color::srgb(0.2, 0.9, 1.0),
        );
    }
    if ui.close_up {
        let s = 0.08 * frame.scale;
        let lower = bones.get(HumanoidBone::RightLowerArm);
        let mut axes = |e: Entity| {
            if let Ok(g) = globals.get(e) {
                let p = g.translation();
                let r = g.rotation();
                gizmos.line(p, p + r * Vec3::X * s, Color::srgb(1.0, 0.2, 0.2));
                gizmos.line(p, p + r * Vec3::Y * s, Color::srgb(0.2, 1.0, 0.2));
                gizmos.line(p, p + r * Vec3::Z * s, Color::srgb(0.3, 0.4, 1.0));
            }
        };
        for role in [HumanoidBone::RightLowerArm, HumanoidBone::RightHand] {
            if let Some(e) = bones.get(role) {
                axes(e);
            }
        }
        if let Some(lower) = lower {
            for (e, n) in &names {
                if is_twist_name(n.as_str()) && parents.iter_ancestors(e).any(|a| a == lower) {
                    axes(e);
                }
            }
        }
    }
}
