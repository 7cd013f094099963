//! The bevy_ik demo: a glTF character whose arms and legs follow targets you drag with a gizmo,
//! over its idle animation, with an egui panel to tune the solver.
//!
//! ```text
//! cargo run --release --features demo --example demo
//! cargo run --features demo --example demo -- --screenshot shot.png [--frames 60]
//! ```
//!
//! * Click a coloured handle to select it; `T` translate, `R` rotate, `L` local/global axes,
//!   `Esc` deselect. Right mouse drag orbits, middle drag pans, the wheel zooms.
//! * The character (`assets/character.glb`, made by `examples/make_character.rs`) is set up by
//!   [`IkHumanoid`]: bevy_ik recognises its bones by name and spawns the targets and poles.
//! * `--screenshot PATH` runs headless-friendly: scripted target motion, waits until the
//!   character is loaded and actually drawn (pipelines compile asynchronously), saves a PNG and
//!   exits 0. `--frames N` sets the least number of frames after loading (default 60).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bevy::asset::LoadState;
use bevy::camera::visibility::RenderLayers;
use bevy::camera::{CameraOutputMode, Viewport};
use bevy::gltf::Gltf;
use bevy::input::mouse::{AccumulatedMouseMotion, AccumulatedMouseScroll};
use bevy::prelude::*;
use bevy::render::render_resource::{BlendState, TextureFormat};
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};
use bevy::scene::SceneInstanceReady;
use bevy::window::{PrimaryWindow, WindowResolution};
use bevy_egui::{
    EguiContexts, EguiGlobalSettings, EguiPlugin, EguiPrimaryContextPass, PrimaryEguiContext, egui,
};
use bevy_ik::prelude::*;
use egui_plot::{Legend, Line, Plot, PlotPoints};
use serde::{Deserialize, Serialize};
use transform_gizmo_bevy::{
    GizmoCamera, GizmoMode, GizmoOptions, GizmoOrientation, GizmoTarget, TransformGizmoPlugin,
};

/// The character, relative to the asset folder.
const CHARACTER: &str = "character.glb";
/// Where "Save" and "Load" keep the panel's settings.
const SETTINGS_FILE: &str = "bevy_ik_demo.ron";
/// Logical width of the egui side panel (the 3D view gets the rest of the window).
const PANEL_WIDTH: f32 = 330.0;
/// Frames of history in the convergence plot.
const HISTORY: usize = 240;
/// Top centre of the step the scripted motion puts the left foot on.
const STEP: Vec3 = Vec3::new(0.15, 0.16, 0.47);
/// Background colour (sRGB bytes, also used to tell drawn pixels from cleared ones).
const CLEAR: [u8; 3] = [38, 41, 48];

fn main() -> ExitCode {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("demo: {e}\nusage: demo [--screenshot PATH [--frames N]]");
            return ExitCode::FAILURE;
        }
    };
    let outcome = Arc::new(Mutex::new(None));
    let mut app = App::new();
    app.insert_resource(ClearColor(Color::srgb_u8(CLEAR[0], CLEAR[1], CLEAR[2])))
        .insert_resource(GlobalAmbientLight {
            color: Color::srgb(0.85, 0.9, 1.0),
            brightness: 350.0,
            ..default()
        })
        .add_plugins(
            DefaultPlugins
                .set(WindowPlugin {
                    primary_window: Some(Window {
                        title: "bevy_ik demo".into(),
                        resolution: WindowResolution::new(1280, 720),
                        ..default()
                    }),
                    ..default()
                })
                .set(AssetPlugin {
                    file_path: asset_folder(),
                    ..default()
                }),
        )
        .add_plugins((
            IkPlugin::default(),
            EguiPlugin::default(),
            TransformGizmoPlugin,
        ))
        .insert_resource(GizmoOptions {
            gizmo_modes: GizmoMode::all_translate(),
            gizmo_orientation: GizmoOrientation::Global,
            hotkeys: None,
            group_targets: false,
            ..default()
        })
        .insert_resource(DemoSettings {
            scripted_motion: options.screenshot.is_some(),
            ..default()
        })
        .insert_resource(Readouts::default())
        .insert_resource(SolveClock::default())
        .insert_resource(options.clone())
        .insert_resource(ScreenshotState {
            outcome: outcome.clone(),
            ..default()
        })
        .add_systems(Startup, set_up_scene)
        .add_systems(
            Update,
            (
                decorate_targets,
                keyboard,
                select_on_click,
                orbit_camera,
                fit_viewport,
                scripted_motion,
                apply_settings,
                highlight_selection,
                draw_debug,
                drive_screenshot.run_if(|o: Res<Options>| o.screenshot.is_some()),
            ),
        )
        .add_systems(
            PostUpdate,
            (
                start_solve_clock
                    .after(IkSystems::Prepare)
                    .before(IkSystems::Solve),
                stop_solve_clock
                    .after(IkSystems::Solve)
                    .before(IkSystems::Writeback),
                record_readouts.after(IkSystems::Writeback),
            ),
        )
        .add_systems(EguiPrimaryContextPass, panel);
    let exit = app.run();
    let result = outcome.lock().map(|o| o.clone()).unwrap_or(None);
    match (options.screenshot, result, exit) {
        (Some(_), Some(Ok(message)), _) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        (Some(_), Some(Err(message)), _) => {
            eprintln!("demo: {message}");
            ExitCode::FAILURE
        }
        (Some(_), None, _) => {
            eprintln!("demo: the window closed before the screenshot was taken");
            ExitCode::FAILURE
        }
        (None, _, AppExit::Success) => ExitCode::SUCCESS,
        (None, _, AppExit::Error(_)) => ExitCode::FAILURE,
    }
}

/// The asset folder: Bevy's default (`assets` under `BEVY_ASSET_ROOT`, `CARGO_MANIFEST_DIR` or
/// the executable's folder), except when the binary is run directly from the build folder, where
/// the repository's `assets` (known at compile time) is used if it still exists.
fn asset_folder() -> String {
    let repository = concat!(env!("CARGO_MANIFEST_DIR"), "/assets");
    let env_root = std::env::var_os("BEVY_ASSET_ROOT").is_some()
        || std::env::var_os("CARGO_MANIFEST_DIR").is_some();
    if !env_root && std::path::Path::new(repository).join(CHARACTER).is_file() {
        repository.to_owned()
    } else {
        "assets".to_owned()
    }
}

// ---------------------------------------------------------------------------------------------
// Command line

/// Command-line options.
#[derive(Resource, Clone, Debug, Default)]
struct Options {
    /// Save a screenshot here and exit.
    screenshot: Option<PathBuf>,
    /// Least number of frames to run after the character is set up before the screenshot.
    frames: u32,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut options = Self {
            screenshot: None,
            frames: 60,
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--screenshot" => {
                    let path = args.next().ok_or("--screenshot needs a path")?;
                    options.screenshot = Some(PathBuf::from(path));
                }
                "--frames" => {
                    let n = args.next().ok_or("--frames needs a number")?;
                    options.frames = n.parse().map_err(|_| format!("bad frame count `{n}`"))?;
                }
                other => return Err(format!("unknown argument `{other}`")),
            }
        }
        Ok(options)
    }
}

// ---------------------------------------------------------------------------------------------
// Scene

/// The character's root entity (holds the `SceneRoot` and the [`IkHumanoid`]).
#[derive(Component)]
struct Character;

/// The character's glTF file, to notice a failed load.
#[derive(Resource)]
struct CharacterFile(Handle<Gltf>);

/// The 3D camera and its orbit.
#[derive(Component)]
struct Orbit {
    focus: Vec3,
    yaw: f32,
    pitch: f32,
    distance: f32,
}

impl Orbit {
    fn transform(&self) -> Transform {
        let rotation = Quat::from_euler(EulerRot::YXZ, self.yaw, self.pitch, 0.0);
        Transform::from_translation(self.focus + rotation * Vec3::Z * self.distance)
            .looking_at(self.focus, Vec3::Y)
    }
}

/// The animation graph and clip node of the idle animation.
#[derive(Resource)]
struct IdleAnimation {
    graph: Handle<AnimationGraph>,
    node: AnimationNodeIndex,
}

/// The rest local transforms of the character's bones (restored when the animation is off).
#[derive(Resource, Default)]
struct RestPose(Vec<(Entity, Transform)>);

/// The entity that plays the character's animation.
#[derive(Resource)]
struct Player(Entity);

fn set_up_scene(
    mut commands: Commands,
    asset_server: Res<AssetServer>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut graphs: ResMut<Assets<AnimationGraph>>,
    mut egui_settings: ResMut<EguiGlobalSettings>,
) {
    // The 3D camera renders into the part of the window right of the panel; egui gets its own
    // camera over the whole window.
    egui_settings.auto_create_primary_context = false;
    let orbit = Orbit {
        focus: Vec3::new(0.0, 0.95, 0.0),
        yaw: 0.55,
        pitch: -0.12,
        distance: 3.3,
    };
    commands.spawn((
        Camera3d::default(),
        orbit.transform(),
        orbit,
        GizmoCamera,
        Msaa::Sample4,
    ));
    commands.spawn((
        PrimaryEguiContext,
        Camera2d,
        RenderLayers::none(),
        Camera {
            order: 1,
            output_mode: CameraOutputMode::Write {
                blend_state: Some(BlendState::ALPHA_BLENDING),
                clear_color: ClearColorConfig::None,
            },
            clear_color: ClearColorConfig::Custom(Color::NONE),
            ..default()
        },
    ));

    commands.spawn((
        DirectionalLight {
            illuminance: 9000.0,
            shadows_enabled: true,
            ..default()
        },
        Transform::from_xyz(2.0, 4.0, 3.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    commands.spawn((
        Mesh3d(meshes.add(Plane3d::default().mesh().size(8.0, 8.0))),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::srgb(0.36, 0.37, 0.4),
            perceptual_roughness: 0.95,
            ..default()
        })),
    ));
    // A step to put a foot on.
    commands.spawn((
        Mesh3d(meshes.add(Cuboid::new(0.3, 0.16, 0.3))),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::srgb(0.55, 0.42, 0.3),
            perceptual_roughness: 0.8,
            ..default()
        })),
        Transform::from_translation(STEP - Vec3::Y * 0.08),
    ));

    commands.insert_resource(CharacterFile(asset_server.load(CHARACTER)));
    let (graph, node) = AnimationGraph::from_clip(
        asset_server.load(GltfAssetLabel::Animation(0).from_asset(CHARACTER)),
    );
    commands.insert_resource(IdleAnimation {
        graph: graphs.add(graph),
        node,
    });
    commands
        .spawn((
            Name::new("character"),
            Character,
            SceneRoot(asset_server.load(GltfAssetLabel::Scene(0).from_asset(CHARACTER))),
            IkHumanoid::auto(),
        ))
        .observe(start_animation);
}

/// Once the glTF scene has spawned: remember the rest pose and start the idle clip.
fn start_animation(
    ready: On<SceneInstanceReady>,
    mut commands: Commands,
    children: Query<&Children>,
    mut players: Query<&mut AnimationPlayer>,
    bones: Query<(&Name, &Transform)>,
    idle: Res<IdleAnimation>,
    settings: Res<DemoSettings>,
) {
    let mut rest = Vec::new();
    for e in children.iter_descendants(ready.entity) {
        if let Ok((name, t)) = bones.get(e)
            && name.as_str().starts_with("mixamorig:")
        {
            rest.push((e, *t));
        }
        if let Ok(mut player) = players.get_mut(e) {
            let active = player.play(idle.node);
            active.repeat();
            if !settings.animation {
                player.pause_all();
            }
            commands
                .entity(e)
                .insert(AnimationGraphHandle(idle.graph.clone()));
            commands.insert_resource(Player(e));
        }
    }
    commands.insert_resource(RestPose(rest));
}

// ---------------------------------------------------------------------------------------------
// Targets and poles

/// What a handle drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HandleKind {
    Hand,
    Foot,
    Elbow,
    Knee,
}

/// A draggable target or pole handle.
#[derive(Component, Clone, Copy, Debug)]
struct TargetHandle {
    kind: HandleKind,
    /// Index of the limb (left arm, right arm, left leg, right leg).
    limb: usize,
    /// Where it was spawned (restored by "Reset pose").
    home: Transform,
    /// Pick radius.
    radius: f32,
    /// For hands and feet: the direction of the limb's last bone at set-up (mid joint → tip),
    /// used by the scripted motion to turn the target.
    rest_dir: Vec3,
    base_color: Color,
}

/// Limb labels, in the order of [`IkHumanoidTargets::limbs`] for a full humanoid.
const LIMBS: [&str; 4] = ["Left arm", "Right arm", "Left leg", "Right leg"];

/// Gives the targets and poles that [`IkHumanoid`] spawned a visible, pickable handle.
fn decorate_targets(
    mut commands: Commands,
    humanoids: Query<&IkHumanoidTargets, Added<IkHumanoidTargets>>,
    transforms: Query<&Transform>,
    limbs: Query<&IkLimb>,
    globals: Query<&GlobalTransform>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for targets in &humanoids {
        let handles = [
            (targets.left_hand, HandleKind::Hand, 0),
            (targets.right_hand, HandleKind::Hand, 1),
            (targets.left_foot, HandleKind::Foot, 2),
            (targets.right_foot, HandleKind::Foot, 3),
            (targets.left_elbow_pole, HandleKind::Elbow, 0),
            (targets.right_elbow_pole, HandleKind::Elbow, 1),
            (targets.left_knee_pole, HandleKind::Knee, 2),
            (targets.right_knee_pole, HandleKind::Knee, 3),
        ];
        for (entity, kind, limb) in handles {
            let Some(entity) = entity else { continue };
            let Ok(&home) = transforms.get(entity) else {
                continue;
            };
            let rest_dir = targets
                .limbs
                .get(limb)
                .and_then(|&l| limbs.get(l).ok())
                .and_then(|l| match (&l.mid, &l.tip) {
                    (BoneRef::Entity(mid), BoneRef::Entity(tip)) => Some((*mid, *tip)),
                    _ => None,
                })
                .and_then(|(mid, tip)| Some((globals.get(mid).ok()?, globals.get(tip).ok()?)))
                .and_then(|(mid, tip)| (tip.translation() - mid.translation()).try_normalize())
                .unwrap_or(Vec3::NEG_Y);
            let (mesh, radius, color) = match kind {
                HandleKind::Hand => (
                    meshes.add(Sphere::new(0.045)),
                    0.06,
                    Color::srgb(1.0, 0.72, 0.1),
                ),
                HandleKind::Foot => (
                    meshes.add(Cuboid::new(0.08, 0.05, 0.12)),
                    0.07,
                    Color::srgb(1.0, 0.45, 0.15),
                ),
                HandleKind::Elbow | HandleKind::Knee => (
                    meshes.add(Sphere::new(0.028).mesh().uv(12, 8)),
                    0.045,
                    Color::srgb(0.75, 0.35, 1.0),
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
                    kind,
                    limb,
                    home,
                    radius,
                    rest_dir,
                    base_color: color,
                },
            ));
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
        .is_ok_and(|ctx| ctx.wants_keyboard_input())
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

/// The 3D camera's viewport rectangle in logical window coordinates.
fn viewport_rect(camera: &Camera) -> Option<Rect> {
    camera.logical_viewport_rect()
}

/// Left click on a handle selects it (unless the click is on the panel or on the gizmo).
fn select_on_click(
    mouse: Res<ButtonInput<MouseButton>>,
    window: Single<&Window, With<PrimaryWindow>>,
    camera: Single<(&Camera, &GlobalTransform), With<Orbit>>,
    handles: Query<(Entity, &GlobalTransform, &TargetHandle, &Visibility)>,
    selected: Query<(Entity, &GizmoTarget)>,
    mut commands: Commands,
    mut contexts: EguiContexts,
) {
    if !mouse.just_pressed(MouseButton::Left) {
        return;
    }
    if contexts
        .ctx_mut()
        .is_ok_and(|ctx| ctx.is_pointer_over_area() || ctx.wants_pointer_input())
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
    let Some(rect) = viewport_rect(camera).filter(|r| r.contains(cursor)) else {
        return;
    };
    let Ok(ray) = camera.viewport_to_world(camera_transform, cursor - rect.min) else {
        return;
    };
    let hit = handles
        .iter()
        .filter(|(.., v)| **v != Visibility::Hidden)
        .filter_map(|(e, t, h, _)| {
            ray_sphere(ray.origin, *ray.direction, t.translation(), h.radius).map(|d| (d, e))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((_, entity)) = hit {
        for (e, _) in &selected {
            if e != entity {
                commands.entity(e).remove::<GizmoTarget>();
            }
        }
        commands.entity(entity).insert(GizmoTarget::default());
    }
}

/// Distance along the ray to the first hit of the sphere, if any.
fn ray_sphere(origin: Vec3, dir: Vec3, center: Vec3, radius: f32) -> Option<f32> {
    let oc = origin - center;
    let b = oc.dot(dir);
    let c = oc.length_squared() - radius * radius;
    let disc = b * b - c;
    (disc >= 0.0).then(|| -b - disc.sqrt()).filter(|&d| d > 0.0)
}

/// Right drag orbits, middle drag pans, the wheel zooms.
fn orbit_camera(
    mouse: Res<ButtonInput<MouseButton>>,
    motion: Res<AccumulatedMouseMotion>,
    scroll: Res<AccumulatedMouseScroll>,
    window: Single<&Window, With<PrimaryWindow>>,
    mut camera: Single<(&mut Orbit, &mut Transform, &Camera)>,
    mut contexts: EguiContexts,
) {
    if contexts
        .ctx_mut()
        .is_ok_and(|ctx| ctx.is_pointer_over_area())
    {
        return;
    }
    let (orbit, transform, cam) = &mut *camera;
    let inside = window
        .cursor_position()
        .is_some_and(|c| viewport_rect(cam).is_some_and(|r| r.contains(c)));
    let mut changed = false;
    if mouse.pressed(MouseButton::Right) && motion.delta != Vec2::ZERO {
        orbit.yaw -= motion.delta.x * 0.006;
        orbit.pitch = (orbit.pitch - motion.delta.y * 0.006).clamp(-1.45, 1.45);
        changed = true;
    }
    if mouse.pressed(MouseButton::Middle) && motion.delta != Vec2::ZERO {
        let pan = orbit.distance * 0.0016;
        let right = transform.rotation * Vec3::X;
        let up = transform.rotation * Vec3::Y;
        orbit.focus += (-right * motion.delta.x + up * motion.delta.y) * pan;
        changed = true;
    }
    if inside && scroll.delta.y != 0.0 {
        orbit.distance = (orbit.distance * (1.0 - scroll.delta.y * 0.1)).clamp(0.6, 15.0);
        changed = true;
    }
    if changed {
        **transform = orbit.transform();
    }
}

/// Keeps the 3D camera's viewport right of the panel.
fn fit_viewport(
    window: Single<&Window, With<PrimaryWindow>>,
    mut camera: Single<&mut Camera, With<Orbit>>,
) {
    let scale = window.scale_factor();
    let left = ((PANEL_WIDTH * scale) as u32).min(window.physical_width().saturating_sub(1));
    let size = UVec2::new(
        window.physical_width().saturating_sub(left).max(1),
        window.physical_height().max(1),
    );
    let viewport = Viewport {
        physical_position: UVec2::new(left, 0),
        physical_size: size,
        ..default()
    };
    if camera.viewport.as_ref().is_none_or(|v| {
        v.physical_position != viewport.physical_position || v.physical_size != size
    }) {
        camera.viewport = Some(viewport);
    }
}

/// Moves the targets along a fixed script (in screenshot mode, or when enabled in the panel):
/// left hand waving, right hand reaching forward, left foot up on the step.
fn scripted_motion(
    mut settings: ResMut<DemoSettings>,
    mut handles: Query<(&TargetHandle, &mut Transform, Option<&GizmoTarget>)>,
    mut frame: Local<u32>,
) {
    if !settings.scripted_motion {
        *frame = 0;
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
    *frame += 1;
    // Script time runs on frames (30 per second) so a screenshot does not depend on frame rate.
    let t = *frame as f32 / 30.0;
    let ease = {
        let x = (t / 2.0).clamp(0.0, 1.0);
        x * x * (3.0 - 2.0 * x)
    };
    for (handle, mut transform, _) in &mut handles {
        let home = handle.home;
        // World-space goal position and turn (applied to the rest rotation) per handle.
        let (goal, turn) = match (handle.kind, handle.limb) {
            (HandleKind::Hand, 0) => {
                // Waving beside the head: fingers up, palm forward.
                let wave = Vec3::new(0.06 * (t * 3.0).sin(), 0.03 * (t * 6.0).cos(), 0.0);
                let up = Quat::from_rotation_arc(handle.rest_dir, Vec3::Y);
                let tilt = Quat::from_rotation_z(-0.35 * (t * 3.0).sin());
                (
                    Vec3::new(0.34, 1.58, 0.18) + wave,
                    tilt * Quat::from_rotation_y(-1.4) * up,
                )
            }
            (HandleKind::Hand, _) => {
                // Reaching forward, palm down.
                let reach = Vec3::new(0.0, 0.04, 0.03) * (t * 1.3).sin();
                let forward = Quat::from_rotation_arc(handle.rest_dir, Vec3::Z);
                (Vec3::new(-0.3, 1.22, 0.42) + reach, forward)
            }
            (HandleKind::Foot, 2) => (STEP + Vec3::new(0.0, 0.085, -0.07), Quat::IDENTITY),
            _ => (home.translation, Quat::IDENTITY),
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
        let color = if selected {
            Color::WHITE
        } else {
            handle.base_color
        };
        if let Some(m) = materials.get(&material.0)
            && m.base_color != color
            && let Some(m) = materials.get_mut(&material.0)
        {
            m.base_color = color;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Settings (the panel's state; saved and loaded as RON)

/// The tunable settings of one limb.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct LimbUi {
    /// Solve this limb (else it keeps the animated pose: [`IkDisabled`]).
    enabled: bool,
    /// IK/FK blend.
    weight: f32,
    /// How much the hand/foot takes the target's rotation.
    rotation_weight: f32,
    /// Bend toward the pole handle.
    use_pole: bool,
    /// How far the bend plane turns toward the pole.
    pole_weight: f32,
    /// Soft reach band (fraction of full reach).
    soft_reach: f32,
    /// Anatomical flex limits on the elbow/knee (3°–150°) instead of 0–180°.
    flex_limits: bool,
}

impl Default for LimbUi {
    fn default() -> Self {
        Self {
            enabled: true,
            weight: 1.0,
            rotation_weight: 1.0,
            use_pole: true,
            pole_weight: 1.0,
            soft_reach: 0.05,
            flex_limits: true,
        }
    }
}

/// What the demo draws.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct DrawUi {
    handles: bool,
    goal_lines: bool,
    skeleton: bool,
    grid: bool,
}

impl Default for DrawUi {
    fn default() -> Self {
        Self {
            handles: true,
            goal_lines: true,
            skeleton: false,
            grid: true,
        }
    }
}

/// Everything the panel controls.
#[derive(Resource, Clone, Debug, PartialEq, Serialize, Deserialize)]
struct DemoSettings {
    /// Play the idle clip under the IK.
    animation: bool,
    /// Move the targets along the built-in script.
    scripted_motion: bool,
    limbs: [LimbUi; 4],
    draw: DrawUi,
}

impl Default for DemoSettings {
    fn default() -> Self {
        Self {
            animation: true,
            scripted_motion: false,
            limbs: [LimbUi::default(); 4],
            draw: DrawUi::default(),
        }
    }
}

/// Pushes changed settings into the limbs, handles and the animation player.
fn apply_settings(
    settings: Res<DemoSettings>,
    humanoids: Query<Ref<IkHumanoidTargets>>,
    mut limbs: Query<(&mut IkLimb, Has<IkDisabled>)>,
    mut handles: Query<(&TargetHandle, &mut Visibility)>,
    mut players: Query<&mut AnimationPlayer>,
    player: Option<Res<Player>>,
    rest: Option<Res<RestPose>>,
    mut transforms: Query<&mut Transform, Without<TargetHandle>>,
    mut commands: Commands,
    mut was_animated: Local<Option<bool>>,
) {
    let Ok(targets) = humanoids.single() else {
        return;
    };
    if !settings.is_changed() && !targets.is_changed() {
        return;
    }
    let poles = [
        targets.left_elbow_pole,
        targets.right_elbow_pole,
        targets.left_knee_pole,
        targets.right_knee_pole,
    ];
    for (i, &limb_entity) in targets.limbs.iter().enumerate().take(4) {
        let ui = settings.limbs[i];
        let Ok((mut limb, disabled)) = limbs.get_mut(limb_entity) else {
            continue;
        };
        let (flex_min, flex_max) = if ui.flex_limits {
            (3f32.to_radians(), 150f32.to_radians())
        } else {
            (0.0, core::f32::consts::PI)
        };
        let mut new = limb.clone();
        new.weight = ui.weight;
        new.rotation_weight = ui.rotation_weight;
        new.pole = if ui.use_pole { poles[i] } else { None };
        new.pole_weight = ui.pole_weight;
        new.soft_reach = ui.soft_reach;
        new.flex_min = flex_min;
        new.flex_max = flex_max;
        if *limb != new {
            *limb = new;
        }
        match (ui.enabled, disabled) {
            (true, true) => {
                commands.entity(limb_entity).remove::<IkDisabled>();
            }
            (false, false) => {
                commands.entity(limb_entity).insert(IkDisabled);
            }
            _ => {}
        }
    }
    for (handle, mut visibility) in &mut handles {
        let ui = settings.limbs[handle.limb];
        let shown = settings.draw.handles
            && ui.enabled
            && match handle.kind {
                HandleKind::Hand | HandleKind::Foot => true,
                HandleKind::Elbow | HandleKind::Knee => ui.use_pole,
            };
        visibility.set_if_neq(if shown {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        });
    }
    if *was_animated != Some(settings.animation)
        && let Some(player) = player
        && let Ok(mut player) = players.get_mut(player.0)
    {
        if settings.animation {
            player.resume_all();
        } else {
            player.pause_all();
            // Back to the rest pose, so the IK works on the bind pose alone.
            for (e, t) in rest.iter().flat_map(|r| r.0.iter()) {
                if let Ok(mut current) = transforms.get_mut(*e) {
                    current.set_if_neq(*t);
                }
            }
        }
        *was_animated = Some(settings.animation);
    }
}

/// Puts every handle back where it was spawned and restarts the clip.
fn reset_pose(world: &mut World) {
    let mut handles = world.query::<(&TargetHandle, &mut Transform)>();
    for (handle, mut transform) in handles.iter_mut(world) {
        *transform = handle.home;
    }
    let idle = world.get_resource::<IdleAnimation>().map(|i| i.node);
    let player = world.get_resource::<Player>().map(|p| p.0);
    if let (Some(node), Some(player)) = (idle, player)
        && let Some(mut player) = world.get_mut::<AnimationPlayer>(player)
        && let Some(active) = player.animation_mut(node)
    {
        active.seek_to(0.0);
    }
}

// ---------------------------------------------------------------------------------------------
// Readouts

/// Wall time of the IK solve set this frame.
#[derive(Resource, Default)]
struct SolveClock {
    started: Option<Instant>,
    micros: f32,
}

fn start_solve_clock(mut clock: ResMut<SolveClock>) {
    clock.started = Some(Instant::now());
}

fn stop_solve_clock(mut clock: ResMut<SolveClock>) {
    if let Some(start) = clock.started.take() {
        clock.micros = start.elapsed().as_secs_f32() * 1e6;
    }
}

/// Per-limb status and history for the panel.
#[derive(Resource, Default)]
struct Readouts {
    status: [Option<IkStatus>; 4],
    /// Position residual (mm) per limb, last [`HISTORY`] frames.
    history: [Vec<f32>; 4],
    /// Solve set time (µs), smoothed.
    solve_micros: f32,
    /// Frame time (ms), smoothed.
    frame_ms: f32,
    frames: u64,
}

fn record_readouts(
    humanoids: Query<&IkHumanoidTargets>,
    statuses: Query<&IkStatus>,
    clock: Res<SolveClock>,
    time: Res<Time>,
    mut readouts: ResMut<Readouts>,
) {
    let r = &mut *readouts;
    r.frames += 1;
    let smooth = |old: f32, new: f32| {
        if old == 0.0 {
            new
        } else {
            old * 0.95 + new * 0.05
        }
    };
    r.solve_micros = smooth(r.solve_micros, clock.micros);
    r.frame_ms = smooth(r.frame_ms, time.delta_secs() * 1000.0);
    let Ok(targets) = humanoids.single() else {
        return;
    };
    for (i, &limb) in targets.limbs.iter().enumerate().take(4) {
        let status = statuses.get(limb).ok().cloned();
        let residual = status
            .as_ref()
            .filter(|s| s.solved)
            .map_or(f32::NAN, |s| s.position_residual * 1000.0);
        let h = &mut r.history[i];
        if h.len() >= HISTORY {
            h.remove(0);
        }
        h.push(residual);
        r.status[i] = status;
    }
}

// ---------------------------------------------------------------------------------------------
// Debug drawing

fn draw_debug(
    settings: Res<DemoSettings>,
    mut gizmos: Gizmos,
    humanoids: Query<&IkHumanoidTargets>,
    limbs: Query<(&IkLimb, Has<IkDisabled>)>,
    globals: Query<&GlobalTransform>,
    children: Query<&Children>,
    character: Query<Entity, With<Character>>,
    names: Query<&Name>,
) {
    if settings.draw.grid {
        gizmos.grid(
            Isometry3d::new(
                Vec3::new(0.0, 0.001, 0.0),
                Quat::from_rotation_x(-core::f32::consts::FRAC_PI_2),
            ),
            UVec2::splat(16),
            Vec2::splat(0.5),
            Color::srgba(1.0, 1.0, 1.0, 0.08),
        );
    }
    let Ok(targets) = humanoids.single() else {
        return;
    };
    let pos = |e: Entity| globals.get(e).ok().map(GlobalTransform::translation);
    if settings.draw.goal_lines {
        for &limb_entity in &targets.limbs {
            let Ok((limb, disabled)) = limbs.get(limb_entity) else {
                continue;
            };
            if disabled {
                continue;
            }
            let bone = |b: &BoneRef| match b {
                BoneRef::Entity(e) => Some(*e),
                BoneRef::Name(_) => None,
            };
            if let (Some(tip), Some(target)) =
                (bone(&limb.tip).and_then(pos), limb.target.and_then(pos))
            {
                gizmos.line(tip, target, Color::srgb(1.0, 0.85, 0.2));
            }
            if let (Some(mid), Some(pole)) =
                (bone(&limb.mid).and_then(pos), limb.pole.and_then(pos))
            {
                gizmos.line(mid, pole, Color::srgba(0.75, 0.35, 1.0, 0.6));
            }
        }
    }
    if settings.draw.skeleton
        && let Ok(root) = character.single()
    {
        for e in children.iter_descendants(root) {
            if !names
                .get(e)
                .is_ok_and(|n| n.as_str().starts_with("mixamorig:"))
            {
                continue;
            }
            let Some(p) = pos(e) else { continue };
            for c in children.get(e).into_iter().flatten() {
                if let Some(q) = pos(*c) {
                    gizmos.line(p, q, Color::srgb(0.3, 1.0, 0.6));
                }
            }
            gizmos.sphere(
                Isometry3d::from_translation(p),
                0.01,
                Color::srgb(0.3, 1.0, 0.6),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The panel

fn panel(
    mut contexts: EguiContexts,
    mut settings: ResMut<DemoSettings>,
    mut gizmo: ResMut<GizmoOptions>,
    readouts: Res<Readouts>,
    character: Query<&IkStatus, With<Character>>,
    mut message: Local<String>,
    mut commands: Commands,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let mut edited = settings.clone();
    let mut actions = PanelActions::default();
    egui::SidePanel::left("bevy_ik")
        .exact_width(PANEL_WIDTH)
        .resizable(false)
        .show(ctx, |ui| {
            panel_contents(
                ui,
                &mut edited,
                &readouts,
                character.single().ok(),
                &gizmo,
                &message,
                &mut actions,
            );
        });
    if actions.reset {
        commands.queue(reset_pose);
    }
    if actions.save {
        *message = match ron::ser::to_string_pretty(&edited, ron::ser::PrettyConfig::default()) {
            Ok(text) => match std::fs::write(SETTINGS_FILE, text) {
                Ok(()) => format!("Saved {SETTINGS_FILE}"),
                Err(e) => format!("Cannot write {SETTINGS_FILE}: {e}"),
            },
            Err(e) => format!("Cannot serialise the settings: {e}"),
        };
    }
    if actions.load {
        *message = match std::fs::read_to_string(SETTINGS_FILE) {
            Ok(text) => match ron::from_str::<DemoSettings>(&text) {
                Ok(loaded) => {
                    edited = loaded;
                    format!("Loaded {SETTINGS_FILE}")
                }
                Err(e) => format!("Bad {SETTINGS_FILE}: {e}"),
            },
            Err(e) => format!("Cannot read {SETTINGS_FILE}: {e}"),
        };
    }
    if *settings != edited {
        *settings = edited;
    }
    if let Some(modes) = actions.gizmo_modes {
        gizmo.gizmo_modes = modes;
    }
    Ok(())
}

/// What the panel asked for this frame.
#[derive(Default)]
struct PanelActions {
    reset: bool,
    save: bool,
    load: bool,
    gizmo_modes: Option<transform_gizmo_bevy::EnumSet<GizmoMode>>,
}

fn panel_contents(
    ui: &mut egui::Ui,
    settings: &mut DemoSettings,
    readouts: &Readouts,
    status: Option<&IkStatus>,
    gizmo: &GizmoOptions,
    message: &str,
    actions: &mut PanelActions,
) {
    ui.heading("bevy_ik");
    ui.label(format!(
        "{:.1} ms/frame ({:.0} fps) · IK solve {:.0} µs",
        readouts.frame_ms,
        1000.0 / readouts.frame_ms.max(0.01),
        readouts.solve_micros
    ));
    match status {
        Some(s) if s.ready => {
            ui.label(format!(
                "Humanoid mapped: 4 limbs{}",
                if s.unmapped.is_empty() {
                    String::new()
                } else {
                    format!(" ({} optional roles missing)", s.unmapped.len())
                }
            ));
        }
        Some(s) => {
            ui.label(match &s.last_error {
                Some(e) => format!("Waiting for the character: {e}"),
                None => "Waiting for the character…".to_owned(),
            });
        }
        None => {
            ui.label("Loading…");
        }
    }
    ui.separator();
    ui.horizontal(|ui| {
        ui.checkbox(&mut settings.animation, "Idle animation");
        ui.checkbox(&mut settings.scripted_motion, "Scripted targets");
    });
    ui.horizontal(|ui| {
        if ui.button("Reset pose").clicked() {
            actions.reset = true;
        }
        if ui.button("Save").on_hover_text(SETTINGS_FILE).clicked() {
            actions.save = true;
        }
        if ui.button("Load").on_hover_text(SETTINGS_FILE).clicked() {
            actions.load = true;
        }
    });
    if !message.is_empty() {
        ui.small(message);
    }
    ui.horizontal(|ui| {
        ui.label("Gizmo:");
        let translate = gizmo.gizmo_modes == GizmoMode::all_translate();
        if ui.selectable_label(translate, "Translate (T)").clicked() {
            actions.gizmo_modes = Some(GizmoMode::all_translate());
        }
        if ui.selectable_label(!translate, "Rotate (R)").clicked() {
            actions.gizmo_modes = Some(GizmoMode::all_rotate());
        }
    });
    ui.small("Click a handle to select it · right drag orbit · middle drag pan · wheel zoom");
    ui.separator();

    egui::ScrollArea::vertical().show(ui, |ui| {
        for (i, name) in LIMBS.iter().enumerate() {
            let limb = &mut settings.limbs[i];
            let readout = readouts.status[i].as_ref();
            let header = match readout {
                Some(s) if s.solved => format!(
                    "{name}: {:.1} mm{}",
                    s.position_residual * 1000.0,
                    if s.converged { "" } else { " (out of reach)" }
                ),
                Some(s) if !s.ready => format!("{name}: not set up"),
                _ => format!("{name}: off"),
            };
            egui::CollapsingHeader::new(header)
                .id_salt(name)
                .default_open(i == 0)
                .show(ui, |ui| {
                    ui.horizontal(|ui| {
                        ui.checkbox(&mut limb.enabled, "Solve");
                        ui.label("Analytic two-bone");
                    });
                    ui.add(egui::Slider::new(&mut limb.weight, 0.0..=1.0).text("IK weight"));
                    ui.add(
                        egui::Slider::new(&mut limb.rotation_weight, 0.0..=1.0)
                            .text("Rotation weight"),
                    );
                    ui.horizontal(|ui| {
                        ui.checkbox(&mut limb.use_pole, "Pole");
                        ui.add_enabled(
                            limb.use_pole,
                            egui::Slider::new(&mut limb.pole_weight, 0.0..=1.0).text("weight"),
                        );
                    });
                    ui.add(egui::Slider::new(&mut limb.soft_reach, 0.0..=0.3).text("Soft reach"));
                    ui.checkbox(&mut limb.flex_limits, "Joint limit (flex 3°–150°)");
                    if let Some(s) = readout {
                        ui.small(format!(
                            "residual {:.2} mm · {:.1}° · {} iteration{}",
                            s.position_residual * 1000.0,
                            s.rotation_residual.to_degrees(),
                            s.iterations,
                            if s.iterations == 1 { "" } else { "s" }
                        ));
                        if let Some(e) = &s.last_error {
                            ui.colored_label(egui::Color32::LIGHT_RED, e.to_string());
                        }
                    }
                });
        }
        ui.separator();
        ui.label("Draw");
        ui.horizontal_wrapped(|ui| {
            ui.checkbox(&mut settings.draw.handles, "Handles");
            ui.checkbox(&mut settings.draw.goal_lines, "Goal lines");
            ui.checkbox(&mut settings.draw.skeleton, "Skeleton");
            ui.checkbox(&mut settings.draw.grid, "Grid");
        });
        ui.separator();
        ui.label("Position residual (mm)");
        let colors = [
            egui::Color32::from_rgb(255, 184, 28),
            egui::Color32::from_rgb(80, 200, 255),
            egui::Color32::from_rgb(255, 110, 60),
            egui::Color32::from_rgb(120, 230, 120),
        ];
        Plot::new("residuals")
            .height(140.0)
            .legend(Legend::default())
            .include_y(0.0)
            .include_y(1.0)
            .allow_scroll(false)
            .allow_drag(false)
            .allow_zoom(false)
            .show(ui, |plot| {
                for (i, name) in LIMBS.iter().enumerate() {
                    let points: PlotPoints = readouts.history[i]
                        .iter()
                        .enumerate()
                        .filter(|(_, v)| v.is_finite())
                        .map(|(x, &y)| [x as f64, f64::from(y)])
                        .collect();
                    plot.line(Line::new(*name, points).color(colors[i]));
                }
            });
    });
}

// ---------------------------------------------------------------------------------------------
// Headless screenshot

/// Progress of `--screenshot`.
#[derive(Resource, Default)]
struct ScreenshotState {
    /// Frames since the character's limbs were set up.
    frames_ready: u32,
    /// Frames since the program started.
    frames: u32,
    /// A capture is in flight.
    pending: bool,
    /// The character was seen drawn; frame at which a handle was selected.
    selected_at: Option<u32>,
    /// Ok(message) once the file is written, Err(message) on failure; read by `main`.
    outcome: Arc<Mutex<Option<Result<String, String>>>>,
    /// Results of the last probe, filled by the capture observer.
    probe: Arc<Mutex<Option<Probe>>>,
    started: Option<Instant>,
}

/// Pixel counts of a captured frame.
#[derive(Clone, Copy, Debug)]
struct Probe {
    /// Shirt-blue pixels (the character is drawn).
    character: u32,
    /// Handle-yellow pixels.
    handles: u32,
    /// Gizmo-green pixels.
    gizmo: u32,
    /// Pixels of the 3D view that differ from the clear colour.
    drawn: u32,
    total: u32,
}

const MAX_FRAMES: u32 = 4000;
/// Wall-clock limit of `--screenshot`, in seconds.
const MAX_SECONDS: f32 = 720.0;

fn drive_screenshot(
    options: Res<Options>,
    mut state: ResMut<ScreenshotState>,
    humanoids: Query<&IkHumanoidTargets>,
    statuses: Query<&IkStatus>,
    handles: Query<(Entity, &TargetHandle)>,
    window: Single<&Window, With<PrimaryWindow>>,
    asset_server: Res<AssetServer>,
    file: Res<CharacterFile>,
    mut commands: Commands,
    mut exit: MessageWriter<AppExit>,
) {
    let Some(path) = options.screenshot.clone() else {
        return;
    };
    let state = &mut *state;
    state.frames += 1;
    let started = *state.started.get_or_insert_with(Instant::now);
    if state.outcome.lock().is_ok_and(|o| o.is_some()) {
        exit.write(AppExit::Success);
        return;
    }
    let failure = if let Some(LoadState::Failed(e)) = asset_server.get_load_state(&file.0) {
        Some(format!("cannot load the character: {e}"))
    } else if state.frames > MAX_FRAMES || started.elapsed().as_secs_f32() > MAX_SECONDS {
        Some(format!(
            "gave up after {} frames ({:.0} s): the character was not seen drawn",
            state.frames,
            started.elapsed().as_secs_f32()
        ))
    } else {
        None
    };
    if let Some(message) = failure {
        if let Ok(mut o) = state.outcome.lock() {
            *o = Some(Err(message));
        }
        exit.write(AppExit::error());
        return;
    }
    if state.frames % 50 == 0 {
        info!(
            "screenshot: frame {}, {:.1} s, {} frames since the character was set up",
            state.frames,
            started.elapsed().as_secs_f32(),
            state.frames_ready
        );
    }
    let ready = humanoids.single().is_ok_and(|t| {
        t.limbs.len() == 4
            && t.limbs
                .iter()
                .all(|&l| statuses.get(l).is_ok_and(|s| s.ready && s.solved))
    });
    if !ready {
        return;
    }
    state.frames_ready += 1;
    let probe = state.probe.lock().ok().and_then(|mut p| p.take());
    if let Some(probe) = probe {
        state.pending = false;
        let seen = probe.character * 400 > probe.total && probe.handles > 30;
        match state.selected_at {
            None if seen => {
                // Drawn: select the left hand so its gizmo shows, give it time to draw too.
                if let Some((e, _)) = handles
                    .iter()
                    .find(|(_, h)| h.kind == HandleKind::Hand && h.limb == 0)
                {
                    commands.entity(e).insert(GizmoTarget::default());
                }
                state.selected_at = Some(state.frames_ready);
            }
            Some(_) if seen && probe.gizmo > 30 => {
                // The frame already saved by the observer is the final one.
                let seconds = started.elapsed().as_secs_f32();
                if let Ok(mut o) = state.outcome.lock() {
                    *o = Some(Ok(format!(
                        "screenshot saved to {} after {} frames ({:.1} s, {:.1} ms/frame average); {} of {} view pixels drawn",
                        path.display(),
                        state.frames,
                        seconds,
                        seconds * 1000.0 / state.frames as f32,
                        probe.drawn,
                        probe.total
                    )));
                }
                return;
            }
            _ => {}
        }
    }
    let settle = state.selected_at.map_or(0, |s| s + 20);
    if state.pending
        || state.frames_ready < options.frames.max(settle)
        || state.frames_ready % 5 != 0
    {
        return;
    }
    state.pending = true;
    let final_candidate = state.selected_at.is_some();
    let probe_slot = state.probe.clone();
    let scale = window.scale_factor();
    let left = (PANEL_WIDTH * scale) as u32;
    let mut save = final_candidate.then(|| save_to_disk(path.clone()));
    commands.spawn(Screenshot::primary_window()).observe(
        move |captured: On<ScreenshotCaptured>| {
            let probe = probe_image(&captured.image, left);
            let accept =
                probe.character * 400 > probe.total && probe.handles > 30 && probe.gizmo > 30;
            if accept && let Some(save) = save.as_mut() {
                save(captured);
            }
            if let Ok(mut slot) = probe_slot.lock() {
                *slot = Some(probe);
            }
        },
    );
}

/// Counts telling pixels in the 3D view (right of `left`) of a captured frame.
fn probe_image(image: &Image, left: u32) -> Probe {
    let mut probe = Probe {
        character: 0,
        handles: 0,
        gizmo: 0,
        drawn: 0,
        total: 0,
    };
    let Some(data) = image.data.as_ref() else {
        return probe;
    };
    let (w, h) = (image.width(), image.height());
    let bgra = matches!(
        image.texture_descriptor.format,
        TextureFormat::Bgra8Unorm | TextureFormat::Bgra8UnormSrgb
    );
    for y in 0..h {
        for x in left.min(w)..w {
            let i = ((y * w + x) * 4) as usize;
            let Some(px) = data.get(i..i + 4) else {
                continue;
            };
            let (r, g, b) = if bgra {
                (i32::from(px[2]), i32::from(px[1]), i32::from(px[0]))
            } else {
                (i32::from(px[0]), i32::from(px[1]), i32::from(px[2]))
            };
            probe.total += 1;
            let clear = [CLEAR[0], CLEAR[1], CLEAR[2]].map(i32::from);
            if (r - clear[0]).abs() + (g - clear[1]).abs() + (b - clear[2]).abs() > 12 {
                probe.drawn += 1;
            }
            if b > r + 45 && b > g + 5 && b > 70 && g > 40 {
                probe.character += 1;
            }
            if r > 180 && g > 100 && b < 100 {
                probe.handles += 1;
            }
            if g > 170 && r < 110 && b < 190 && g > b + 40 {
                probe.gizmo += 1;
            }
        }
    }
    probe
}
