//! The draggable handles: the targets and poles [`IkHumanoid`] spawns get a mesh sized to the
//! character, a click selects one for transform-gizmo-bevy's gizmo, the keyboard switches the
//! gizmo's mode, the scripted motion moves them, and the goal lines, skeleton and grid are drawn.
//!
//! The targets are children of the character's root, which stays at the origin:
//! transform-gizmo-bevy edits an entity's local `Transform` as if it were global.

use bevy::gizmos::config::{GizmoConfig, GizmoConfigGroup};
use bevy::mesh::skinning::SkinnedMesh;
use bevy::prelude::*;
use bevy::window::PrimaryWindow;
use bevy_egui::EguiContexts;
use bevy_ik::ik_core::humanoid::HumanoidBone;
use bevy_ik::prelude::*;
use serde::{Deserialize, Serialize};
use transform_gizmo_bevy::{GizmoMode, GizmoOptions, GizmoOrientation, GizmoTarget};

use crate::camera::{Orbit, viewport_rect};
use crate::character::{BodyFrame, Character, PropsShown};
use crate::settings::DemoSettings;
use crate::solver::{SolverSetup, goal_lines, head_look_at};

/// Top centre of the step the scripted motion puts the left foot on, in body units (see
/// [`BodyFrame::point`]).
pub const STEP: Vec3 = Vec3::new(0.18, 0.12, 0.38);

/// Selecting, dragging and drawing the handles.
pub struct HandlesPlugin;

impl Plugin for HandlesPlugin {
    fn build(&self, app: &mut App) {
        app.insert_gizmo_config(
            HandleOutlines,
            GizmoConfig {
                // In front of everything: a handle inside the character's mesh stays seen.
                depth_bias: -1.0,
                ..default()
            },
        )
        .add_systems(
            Update,
            (
                decorate_targets,
                keyboard,
                select_on_click,
                scripted_motion,
                highlight_selection,
                draw_overlay,
                draw_handle_outlines,
            ),
        );
    }
}

/// The handles' outlines, drawn over everything: a target sits on its bone, so on a bulky
/// character (the CC0 robot's hands and feet, say) the handle's mesh is inside the
/// character's and only its outline shows where to click.
#[derive(Default, Reflect, GizmoConfigGroup)]
struct HandleOutlines;

/// One circle a handle, facing the camera, of the handle's pick radius (where a click selects
/// it) in the handle's colour (white when selected).
fn draw_handle_outlines(
    mut gizmos: Gizmos<HandleOutlines>,
    camera: Query<&GlobalTransform, With<Orbit>>,
    handles: Query<(
        &TargetHandle,
        &GlobalTransform,
        &ViewVisibility,
        Has<GizmoTarget>,
    )>,
) {
    let Ok(camera) = camera.single() else {
        return;
    };
    let facing = camera.rotation();
    for (handle, at, visible, selected) in &handles {
        if !visible.get() {
            continue;
        }
        let color = handle.color(selected);
        gizmos.circle(
            Isometry3d::new(at.translation(), facing),
            handle.radius,
            color,
        );
    }
}

/// The goals of the character, in the panel's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// The left hand's target.
    LeftHand,
    /// The right hand's target.
    RightHand,
    /// The left foot's target.
    LeftFoot,
    /// The right foot's target.
    RightFoot,
    /// The pelvis' target.
    Pelvis,
    /// The head's (look-at) target.
    Head,
}

impl Role {
    /// Every goal, in the panel's order.
    pub const ALL: [Role; 6] = [
        Role::LeftHand,
        Role::RightHand,
        Role::LeftFoot,
        Role::RightFoot,
        Role::Pelvis,
        Role::Head,
    ];

    /// The panel's name.
    pub fn label(self) -> &'static str {
        match self {
            Role::LeftHand => "Left hand",
            Role::RightHand => "Right hand",
            Role::LeftFoot => "Left foot",
            Role::RightFoot => "Right foot",
            Role::Pelvis => "Pelvis",
            Role::Head => "Head",
        }
    }

    /// The summary line's name.
    pub fn key(self) -> &'static str {
        match self {
            Role::LeftHand => "left_hand",
            Role::RightHand => "right_hand",
            Role::LeftFoot => "left_foot",
            Role::RightFoot => "right_foot",
            Role::Pelvis => "pelvis",
            Role::Head => "head",
        }
    }

    /// The analytic limb of this role (index into [`IkHumanoidTargets::limbs`]).
    pub fn limb(self) -> Option<usize> {
        match self {
            Role::LeftHand => Some(0),
            Role::RightHand => Some(1),
            Role::LeftFoot => Some(2),
            Role::RightFoot => Some(3),
            Role::Pelvis | Role::Head => None,
        }
    }

    /// The humanoid bone the goal moves.
    pub fn bone(self) -> HumanoidBone {
        match self {
            Role::LeftHand => HumanoidBone::LeftHand,
            Role::RightHand => HumanoidBone::RightHand,
            Role::LeftFoot => HumanoidBone::LeftFoot,
            Role::RightFoot => HumanoidBone::RightFoot,
            Role::Pelvis => HumanoidBone::Hips,
            Role::Head => HumanoidBone::Head,
        }
    }

    /// The target entity [`IkHumanoid`] spawned for this role.
    pub fn target(self, t: &IkHumanoidTargets) -> Option<Entity> {
        match self {
            Role::LeftHand => t.left_hand,
            Role::RightHand => t.right_hand,
            Role::LeftFoot => t.left_foot,
            Role::RightFoot => t.right_foot,
            Role::Pelvis => t.pelvis,
            Role::Head => t.head,
        }
    }

    /// The pole entity of this role's limb, if any.
    pub fn pole(self, t: &IkHumanoidTargets) -> Option<Entity> {
        match self {
            Role::LeftHand => t.left_elbow_pole,
            Role::RightHand => t.right_elbow_pole,
            Role::LeftFoot => t.left_knee_pole,
            Role::RightFoot => t.right_knee_pole,
            Role::Pelvis | Role::Head => None,
        }
    }

    /// Position in [`Role::ALL`].
    pub fn index(self) -> usize {
        Role::ALL.iter().position(|&r| r == self).unwrap_or(0)
    }
}

/// A draggable target or pole handle.
#[derive(Component, Clone, Copy, Debug)]
pub struct TargetHandle {
    /// The goal it drives.
    pub role: Role,
    /// An elbow or knee pole rather than the role's target.
    pub pole: bool,
    /// Where it was put at set-up (restored by "Reset pose").
    pub home: Transform,
    /// Pick radius.
    pub radius: f32,
    /// For hands and feet: the direction of the limb's last bone at set-up, used by the scripted
    /// motion to turn the target.
    pub rest_dir: Vec3,
    /// Colour when not selected.
    pub base_color: Color,
}

impl TargetHandle {
    /// The colour it is drawn in: white when selected.
    fn color(&self, selected: bool) -> Color {
        if selected {
            Color::WHITE
        } else {
            self.base_color
        }
    }
}

/// The head's aiming axis in its own frame (the character's forward at set-up), for the rig's
/// look-at goal.
#[derive(Resource, Clone, Copy)]
pub struct HeadAxis(pub Vec3);

/// On the character's root once its targets have handles.
#[derive(Component)]
pub(crate) struct Decorated;

/// Gives the targets and poles that [`IkHumanoid`] spawned a visible, pickable handle sized to
/// the character — at first, and for the new targets after a mode switch (targets the modes
/// share keep their handle); in the rig mode puts the head's target in front of the face for
/// the look-at goal.
#[allow(clippy::too_many_arguments, reason = "system parameters")]
pub(crate) fn decorate_targets(
    mut commands: Commands,
    humanoids: Query<
        (
            Entity,
            Ref<IkHumanoidTargets>,
            &IkHumanoidBones,
            Ref<SolverSetup>,
            Has<Decorated>,
        ),
        With<Character>,
    >,
    handles: Query<(), With<TargetHandle>>,
    head_axis: Option<Res<HeadAxis>>,
    frame: Option<Res<BodyFrame>>,
    mut transforms: Query<&mut Transform>,
    globals: Query<&GlobalTransform>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let Some(frame) = frame else { return };
    let s = frame.scale;
    for (root, targets, bones, setup, decorated) in &humanoids {
        if decorated && !targets.is_changed() && !setup.is_changed() {
            continue;
        }
        if !decorated {
            commands.entity(root).insert(Decorated);
        }
        let position = |role: HumanoidBone| bones.get(role).and_then(|e| globals.get(e).ok());
        for role in Role::ALL {
            for pole in [false, true] {
                let entity = if pole {
                    role.pole(&targets)
                } else {
                    role.target(&targets)
                };
                let Some(entity) = entity else { continue };
                let Ok(mut transform) = transforms.get_mut(entity) else {
                    continue;
                };
                if role == Role::Head
                    && !pole
                    && head_axis.is_none()
                    && let Some((axis, offset)) =
                        head_look_at(&setup, position(HumanoidBone::Head), &frame)
                {
                    commands.insert_resource(HeadAxis(axis));
                    transform.translation += offset;
                }
                if handles.contains(entity) {
                    continue;
                }
                let rest_dir = match role {
                    Role::LeftHand => Some((HumanoidBone::LeftLowerArm, HumanoidBone::LeftHand)),
                    Role::RightHand => Some((HumanoidBone::RightLowerArm, HumanoidBone::RightHand)),
                    Role::LeftFoot => Some((HumanoidBone::LeftLowerLeg, HumanoidBone::LeftFoot)),
                    Role::RightFoot => Some((HumanoidBone::RightLowerLeg, HumanoidBone::RightFoot)),
                    Role::Pelvis | Role::Head => None,
                }
                .and_then(|(a, b)| Some((position(a)?, position(b)?)))
                .and_then(|(a, b)| (b.translation() - a.translation()).try_normalize())
                .unwrap_or(-frame.up);
                let (mesh, radius, color) = match (role, pole) {
                    (_, true) => (
                        meshes.add(Sphere::new(0.028 * s).mesh().uv(12, 8)),
                        0.045 * s,
                        Color::srgb(0.75, 0.35, 1.0),
                    ),
                    (Role::LeftHand | Role::RightHand, _) => (
                        meshes.add(Sphere::new(0.045 * s)),
                        0.06 * s,
                        Color::srgb(1.0, 0.72, 0.1),
                    ),
                    (Role::LeftFoot | Role::RightFoot, _) => (
                        meshes.add(Cuboid::new(0.08 * s, 0.05 * s, 0.12 * s)),
                        0.07 * s,
                        Color::srgb(1.0, 0.45, 0.15),
                    ),
                    (Role::Pelvis, _) => (
                        meshes.add(Cuboid::new(0.2 * s, 0.03 * s, 0.12 * s)),
                        0.09 * s,
                        Color::srgb(0.2, 0.85, 0.85),
                    ),
                    (Role::Head, _) => (
                        meshes.add(Sphere::new(0.035 * s)),
                        0.055 * s,
                        Color::srgb(0.3, 0.95, 0.5),
                    ),
                };
                commands.entity(entity).insert((
                    Mesh3d(mesh),
                    MeshMaterial3d(materials.add(StandardMaterial {
                        base_color: color,
                        unlit: true,
                        ..default()
                    })),
                    TargetHandle {
                        role,
                        pole,
                        home: *transform,
                        radius,
                        rest_dir,
                        base_color: color,
                    },
                ));
            }
        }
    }
}

/// Keys: translate / rotate / axes / deselect.
fn keyboard(
    keys: Res<ButtonInput<KeyCode>>,
    mut options: ResMut<GizmoOptions>,
    mut commands: Commands,
    selected: Query<Entity, With<GizmoTarget>>,
    mut contexts: EguiContexts,
) {
    if contexts
        .ctx_mut()
        .is_ok_and(|ctx| ctx.egui_wants_keyboard_input())
    {
        return;
    }
    if keys.just_pressed(KeyCode::KeyT) || keys.just_pressed(KeyCode::KeyG) {
        options.gizmo_modes = GizmoMode::all_translate();
    }
    if keys.just_pressed(KeyCode::KeyR) {
        options.gizmo_modes = GizmoMode::all_rotate();
    }
    if keys.just_pressed(KeyCode::KeyL) {
        options.gizmo_orientation = match options.gizmo_orientation {
            GizmoOrientation::Global => GizmoOrientation::Local,
            GizmoOrientation::Local => GizmoOrientation::Global,
        };
    }
    if keys.just_pressed(KeyCode::Escape) {
        for e in &selected {
            commands.entity(e).remove::<GizmoTarget>();
        }
    }
}

/// The handles a click can pick.
pub type HandleQuery<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static GlobalTransform,
        &'static TargetHandle,
        &'static Visibility,
    ),
>;

/// Left click on a handle selects it (unless the click is on the panel or on the gizmo).
fn select_on_click(
    mouse: Res<ButtonInput<MouseButton>>,
    window: Single<&Window, With<PrimaryWindow>>,
    camera: Single<(&Camera, &GlobalTransform), With<Orbit>>,
    handles: HandleQuery,
    selected: Query<(Entity, &GizmoTarget)>,
    mut commands: Commands,
    mut contexts: EguiContexts,
) {
    if !mouse.just_pressed(MouseButton::Left) {
        return;
    }
    if contexts
        .ctx_mut()
        .is_ok_and(|ctx| ctx.is_pointer_over_egui() || ctx.egui_wants_pointer_input())
    {
        return;
    }
    if selected
        .iter()
        .any(|(_, g)| g.is_focused() || g.is_active())
    {
        return;
    }
    let (camera, camera_transform) = *camera;
    let Some(cursor) = window.cursor_position() else {
        return;
    };
    if let Some(entity) = pick_handle(camera, camera_transform, cursor, &handles) {
        for (e, _) in &selected {
            if e != entity {
                commands.entity(e).remove::<GizmoTarget>();
            }
        }
        commands.entity(entity).insert(GizmoTarget::default());
    }
}

/// The visible handle under `cursor` (logical window coordinates), nearest first.
pub fn pick_handle(
    camera: &Camera,
    camera_transform: &GlobalTransform,
    cursor: Vec2,
    handles: &HandleQuery,
) -> Option<Entity> {
    if !viewport_rect(camera).is_some_and(|r| r.contains(cursor)) {
        return None;
    }
    // Window coordinates: the camera accounts for its viewport's offset itself.
    let ray = camera.viewport_to_world(camera_transform, cursor).ok()?;
    handles
        .iter()
        .filter(|(.., v)| **v != Visibility::Hidden)
        .filter_map(|(e, t, h, _)| {
            ray_sphere(ray.origin, *ray.direction, t.translation(), h.radius).map(|d| (d, e))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, e)| e)
}

/// Distance along the ray to the first hit of the sphere, if any.
pub fn ray_sphere(origin: Vec3, dir: Vec3, center: Vec3, radius: f32) -> Option<f32> {
    let oc = origin - center;
    let b = oc.dot(dir);
    let c = oc.length_squared() - radius * radius;
    let disc = b * b - c;
    (disc >= 0.0).then(|| -b - disc.sqrt()).filter(|&d| d > 0.0)
}

/// Moves the targets along a fixed script (in screenshot mode, or when enabled in the panel):
/// left hand waving and the head watching it, right hand reaching forward, left foot up on the
/// step, the pelvis dropping a little. Positions are in body units ([`BodyFrame::point`]), so
/// the script fits any character's size and facing.
fn scripted_motion(
    mut settings: ResMut<DemoSettings>,
    frame: Option<Res<BodyFrame>>,
    mut handles: Query<(&TargetHandle, &mut Transform, Option<&GizmoTarget>)>,
    mut tick: Local<u32>,
) {
    let Some(frame) = frame else { return };
    if !settings.scripted_motion {
        *tick = 0;
        return;
    }
    if handles
        .iter()
        .any(|(.., g)| g.is_some_and(GizmoTarget::is_active))
    {
        // The user grabbed a handle: hand control back.
        settings.scripted_motion = false;
        return;
    }
    *tick += 1;
    // Script time runs on frames (30 per second) so a screenshot does not depend on frame rate.
    let t = *tick as f32 / 30.0;
    let ease = {
        let x = (t / 2.0).clamp(0.0, 1.0);
        x * x * (3.0 - 2.0 * x)
    };
    let wave_at = Vec3::new(0.34, 1.58, 0.18)
        + Vec3::new(0.06 * (t * 3.0).sin(), 0.03 * (t * 6.0).cos(), 0.0);
    for (handle, mut transform, _) in &mut handles {
        let home = handle.home;
        // Goal position and turn (applied to the rest rotation) per handle.
        let (goal, turn) = match (handle.role, handle.pole) {
            (Role::LeftHand, false) => {
                // Waving beside the head: fingers up, palm forward.
                let up = Quat::from_rotation_arc(handle.rest_dir, frame.up);
                let tilt = Quat::from_axis_angle(frame.forward, -0.35 * (t * 3.0).sin());
                let palm = Quat::from_axis_angle(frame.up, -1.4);
                (frame.point(wave_at), tilt * palm * up)
            }
            (Role::RightHand, false) => {
                // Reaching forward.
                let reach = Vec3::new(0.0, 0.04, 0.03) * (t * 1.3).sin();
                let forward = Quat::from_rotation_arc(handle.rest_dir, frame.forward);
                (frame.point(Vec3::new(-0.3, 1.22, 0.42) + reach), forward)
            }
            (Role::LeftFoot, false) => (
                frame.point(STEP + Vec3::new(0.0, 0.085, -0.07)),
                Quat::IDENTITY,
            ),
            // Poles and the right foot stay where they are.
            (Role::RightFoot, _) | (_, true) => (home.translation, Quat::IDENTITY),
            (Role::Pelvis, _) => (
                home.translation
                    + frame.vector(Vec3::new(0.02, -0.03, 0.02 + 0.01 * (t * 1.3).sin())),
                Quat::IDENTITY,
            ),
            (Role::Head, _) => (
                frame.point(wave_at + Vec3::new(0.0, 0.05, 0.15)),
                Quat::IDENTITY,
            ),
        };
        let position = home.translation.lerp(goal, ease);
        let rotation = Quat::IDENTITY.slerp(turn, ease) * home.rotation;
        if transform.translation != position || transform.rotation != rotation {
            transform.translation = position;
            transform.rotation = rotation;
        }
    }
}

/// Brightens the selected handle.
fn highlight_selection(
    handles: Query<(
        &TargetHandle,
        &MeshMaterial3d<StandardMaterial>,
        Has<GizmoTarget>,
    )>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for (handle, material, selected) in &handles {
        let color = handle.color(selected);
        if let Some(m) = materials.get(&material.0)
            && m.base_color != color
            && let Some(mut m) = materials.get_mut(&material.0)
        {
            m.base_color = color;
        }
    }
}

/// Puts every handle back where it was spawned and restarts the clip.
pub fn reset_pose(world: &mut World) {
    let mut handles = world.query::<(&TargetHandle, &mut Transform)>();
    for (handle, mut transform) in handles.iter_mut(world) {
        *transform = handle.home;
    }
    crate::character::restart_animation(world);
}

/// Goal lines, the skeleton and the ground grid.
fn draw_overlay(
    settings: Res<DemoSettings>,
    frame: Option<Res<BodyFrame>>,
    props: Res<PropsShown>,
    mut gizmos: Gizmos,
    humanoids: Query<
        (
            Entity,
            &IkHumanoidTargets,
            &IkHumanoidBones,
            Option<&IkRig>,
            &SolverSetup,
        ),
        With<Character>,
    >,
    limbs: Query<(&IkLimb, Has<IkDisabled>)>,
    globals: Query<&GlobalTransform>,
    children: Query<&Children>,
    skins: Query<&SkinnedMesh>,
) {
    let scale = frame.as_ref().map_or(1.0, |f| f.scale);
    if settings.draw.grid && props.0 {
        gizmos.grid(
            Isometry3d::new(
                Vec3::new(0.0, 0.001 * scale, 0.0),
                Quat::from_rotation_x(-core::f32::consts::FRAC_PI_2),
            ),
            UVec2::splat(16),
            Vec2::splat(0.5 * scale),
            Color::srgba(1.0, 1.0, 1.0, 0.08),
        );
    }
    let Ok((root, targets, bones, rig, setup)) = humanoids.single() else {
        return;
    };
    let pos = |e: Entity| globals.get(e).ok().map(GlobalTransform::translation);
    let goal_color = Color::srgb(1.0, 0.85, 0.2);
    let pole_color = Color::srgba(0.75, 0.35, 1.0, 0.6);
    if settings.draw.goal_lines {
        goal_lines(setup, targets, bones, rig, &limbs, |from, to, pole| {
            if let (Some(a), Some(b)) = (pos(from), pos(to)) {
                gizmos.line(a, b, if pole { pole_color } else { goal_color });
            }
        });
    }
    if settings.draw.skeleton {
        // The skins' joints (every rig has them, whatever its naming).
        let mut bones: Vec<Entity> = children
            .iter_descendants(root)
            .filter_map(|e| skins.get(e).ok())
            .flat_map(|s| s.joints.iter().copied())
            .collect();
        bones.sort_unstable();
        bones.dedup();
        let color = Color::srgb(0.3, 1.0, 0.6);
        for &e in &bones {
            let Some(p) = pos(e) else { continue };
            for c in children.get(e).into_iter().flatten() {
                if bones.binary_search(c).is_ok()
                    && let Some(q) = pos(*c)
                {
                    gizmos.line(p, q, color);
                }
            }
            gizmos.sphere(Isometry3d::from_translation(p), 0.01 * scale, color);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ray_hits_a_sphere_in_front_and_misses_behind_or_beside() {
        let hit = ray_sphere(Vec3::ZERO, Vec3::Z, Vec3::new(0.0, 0.0, 5.0), 1.0);
        assert!(hit.is_some_and(|d| (d - 4.0).abs() < 1e-5), "{hit:?}");
        assert_eq!(
            ray_sphere(Vec3::ZERO, Vec3::Z, Vec3::new(0.0, 0.0, -5.0), 1.0),
            None
        );
        assert_eq!(
            ray_sphere(Vec3::ZERO, Vec3::Z, Vec3::new(2.0, 0.0, 5.0), 1.0),
            None
        );
    }

    #[test]
    fn roles_have_distinct_indices_keys_and_bones() {
        for (i, r) in Role::ALL.into_iter().enumerate() {
            assert_eq!(r.index(), i);
            assert!(Role::ALL.iter().filter(|o| o.key() == r.key()).count() == 1);
            assert!(Role::ALL.iter().filter(|o| o.bone() == r.bone()).count() == 1);
        }
    }
}
