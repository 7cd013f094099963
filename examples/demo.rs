//! The `bevy_ik` demo: a glTF character whose hands, feet, pelvis and head follow targets you
//! drag with a gizmo, over its idle animation, with an egui panel to tune the solver.
//!
//! ```text
//! cargo run --release --features demo --example demo
//! cargo run --features demo --example demo -- --screenshot shot.png [--frames 60]
//!     [--solver full-body|rig|limbs] [--settings saved.ron] [--yaw DEGREES]
//! ```
//!
//! * Click a coloured handle to select it; `T` translate, `R` rotate, `L` local/global axes,
//!   `Esc` deselect. Right mouse drag orbits, middle drag pans, the wheel zooms.
//! * The character (`assets/character.glb`, made by `examples/make_character.rs`) is set up by
//!   [`IkHumanoid`]: `bevy_ik` recognises its bones by name and spawns the targets (and poles).
//! * Three solvers: the humanoid's hybrid full-body solver (default), a general Jacobian
//!   [`IkRig`] the demo builds on the mapped bones (per-goal weights, priority levels, blends),
//!   or four analytic [`IkLimb`]s with elbow and knee poles. Switching re-creates the character.
//! * `--screenshot PATH` runs headless-friendly: scripted target motion, waits until the
//!   character is loaded and actually drawn (pipelines compile asynchronously; the pixels of
//!   captured frames are checked), selects a handle through the mouse-picking code, saves a PNG
//!   and exits 0 (1 on failure). `--frames N` sets the least number of frames after set-up.
//!
//! The targets are children of the character's root, which stays at the origin:
//! transform-gizmo-bevy edits an entity's local `Transform` as if it were global.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bevy::asset::LoadState;
use bevy::camera::visibility::RenderLayers;
use bevy::camera::{CameraOutputMode, Viewport};
use bevy::gltf::Gltf;
use bevy::input::mouse::{AccumulatedMouseScroll, MouseScrollUnit};
use bevy::prelude::*;
use bevy::render::render_resource::{BlendState, TextureFormat};
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};
use bevy::scene::SceneInstanceReady;
use bevy::window::{PrimaryWindow, WindowResolution};
use bevy_egui::{
    EguiContexts, EguiGlobalSettings, EguiPlugin, EguiPrimaryContextPass, PrimaryEguiContext, egui,
};
use bevy_ik::ik_core::humanoid::{FullBodySettings, HumanoidBone};
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
const STEP: Vec3 = Vec3::new(0.18, 0.12, 0.38);
/// Background colour (sRGB bytes, also used to tell drawn pixels from cleared ones).
const CLEAR: [u8; 3] = [38, 41, 48];

fn main() -> ExitCode {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "demo: {e}\nusage: demo [--screenshot PATH [--frames N]] [--solver full-body|rig|limbs] [--settings FILE.ron] [--yaw DEGREES]"
            );
            return ExitCode::FAILURE;
        }
    };
    let mut settings = match &options.settings {
        None => DemoSettings::default(),
        Some(path) => match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| ron::from_str::<DemoSettings>(&text).map_err(|e| e.to_string()))
        {
            Ok(s) => s,
            Err(e) => {
                eprintln!("demo: cannot load settings from {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        },
    };
    if let Some(solver) = options.solver {
        settings.solver = solver;
    }
    settings.scripted_motion |= options.screenshot.is_some();
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
        .insert_resource(settings)
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
                spawn_character,
                attach_rig,
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
    /// Start with this solver.
    solver: Option<SolverUi>,
    /// Start with the camera at this yaw (degrees, 0 = in front of the character).
    yaw: Option<f32>,
    /// Start with the panel settings saved in this RON file.
    settings: Option<PathBuf>,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut options = Self {
            screenshot: None,
            frames: 60,
            solver: None,
            yaw: None,
            settings: None,
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
                "--solver" => {
                    options.solver = Some(match args.next().as_deref() {
                        Some("full-body") => SolverUi::FullBody,
                        Some("rig") => SolverUi::Rig,
                        Some("limbs") => SolverUi::Limbs,
                        other => {
                            return Err(format!(
                                "--solver takes full-body, rig or limbs, not {other:?}"
                            ));
                        }
                    });
                }
                "--settings" => {
                    let path = args.next().ok_or("--settings needs a path")?;
                    options.settings = Some(PathBuf::from(path));
                }
                "--yaw" => {
                    let n = args.next().ok_or("--yaw needs degrees")?;
                    options.yaw = Some(n.parse().map_err(|_| format!("bad yaw `{n}`"))?);
                }
                other => return Err(format!("unknown argument `{other}`")),
            }
        }
        Ok(options)
    }
}

// ---------------------------------------------------------------------------------------------
// Scene

/// The character's root entity (holds the `SceneRoot` and the [`IkHumanoid`]), with the
/// settings it was set up with.
#[derive(Component)]
struct Character {
    solver: SolverUi,
    full_body: FullBodyUi,
}

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
    options: Res<Options>,
) {
    // The 3D camera renders into the part of the window right of the panel; egui gets its own
    // camera over the whole window.
    egui_settings.auto_create_primary_context = false;
    let orbit = Orbit {
        focus: Vec3::new(0.0, 0.95, 0.0),
        yaw: options.yaw.unwrap_or(-45.0).to_radians(),
        pitch: -0.12,
        distance: 3.0,
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
        Mesh3d(meshes.add(Cuboid::new(0.3, STEP.y, 0.32))),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::srgb(0.55, 0.42, 0.3),
            perceptual_roughness: 0.8,
            ..default()
        })),
        Transform::from_translation(STEP - Vec3::Y * STEP.y * 0.5),
    ));

    commands.insert_resource(CharacterFile(asset_server.load(CHARACTER)));
    let (graph, node) = AnimationGraph::from_clip(
        asset_server.load(GltfAssetLabel::Animation(0).from_asset(CHARACTER)),
    );
    commands.insert_resource(IdleAnimation {
        graph: graphs.add(graph),
        node,
    });
    commands.insert_resource(CharacterScene(
        asset_server.load(GltfAssetLabel::Scene(0).from_asset(CHARACTER)),
    ));
}

/// The character's glTF scene.
#[derive(Resource)]
struct CharacterScene(Handle<Scene>);

/// Spawns the character, and again when the solver or a full-body setting that is only read at
/// set-up changes ([`IkHumanoid`] sets up once); waits for the mouse button to be released so
/// dragging a slider respawns once.
fn spawn_character(
    mut commands: Commands,
    settings: Res<DemoSettings>,
    scene: Res<CharacterScene>,
    mouse: Res<ButtonInput<MouseButton>>,
    characters: Query<(Entity, &Character)>,
) {
    let wanted = settings.full_body.set_up_only();
    let current = characters.iter().next();
    if let Some((_, c)) = current
        && c.solver == settings.solver
        && (c.solver != SolverUi::FullBody || c.full_body.set_up_only() == wanted)
    {
        return;
    }
    if current.is_some() && mouse.pressed(MouseButton::Left) {
        return;
    }
    for (e, _) in &characters {
        commands.entity(e).despawn();
    }
    commands.remove_resource::<Player>();
    let fb = settings.full_body;
    let humanoid = IkHumanoid {
        solver: match settings.solver {
            SolverUi::FullBody => IkHumanoidSolver::FullBody,
            SolverUi::Rig | SolverUi::Limbs => IkHumanoidSolver::Limbs,
        },
        // The rig mode drives the limbs' targets with an IkRig instead (see `attach_rig`).
        poles: settings.solver == SolverUi::Limbs,
        head: fb.head,
        weight: if settings.solver == SolverUi::FullBody {
            fb.weight
        } else {
            1.0
        },
        full_body_settings: fb.core(),
        balance: fb.balance(),
        ..IkHumanoid::auto()
    };
    commands
        .spawn((
            Name::new("character"),
            Character {
                solver: settings.solver,
                full_body: fb,
            },
            SceneRoot(scene.0.clone()),
            humanoid,
        ))
        .observe(start_animation);
}

/// In the rig mode: once the humanoid is mapped, put an [`IkRig`] on it with a goal per target
/// (the panel's settings are applied by `apply_settings`) and switch its analytic limbs off.
fn attach_rig(
    mut commands: Commands,
    humanoids: Query<
        (Entity, &IkHumanoidTargets, &IkHumanoidBones, &Character),
        Added<IkHumanoidTargets>,
    >,
) {
    for (entity, targets, bones, character) in &humanoids {
        if character.solver != SolverUi::Rig {
            continue;
        }
        let mut goals = Vec::new();
        for role in Role::ALL {
            if let (Some(bone), Some(target)) = (bones.get(role.bone()), role.target(targets)) {
                goals.push(IkGoal::position(bone, target));
            }
        }
        let mut rig = IkRig::new(goals).with_limits(IkJointLimits::Humanoid);
        rig.movable_root = bones.get(HumanoidBone::Hips).map(BoneRef::Entity);
        commands.entity(entity).insert(rig);
        for &limb in &targets.limbs {
            commands.entity(limb).insert(IkDisabled);
        }
    }
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

/// The goals of the character, in the panel's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Role {
    LeftHand,
    RightHand,
    LeftFoot,
    RightFoot,
    Pelvis,
    Head,
}

impl Role {
    const ALL: [Role; 6] = [
        Role::LeftHand,
        Role::RightHand,
        Role::LeftFoot,
        Role::RightFoot,
        Role::Pelvis,
        Role::Head,
    ];

    fn label(self) -> &'static str {
        match self {
            Role::LeftHand => "Left hand",
            Role::RightHand => "Right hand",
            Role::LeftFoot => "Left foot",
            Role::RightFoot => "Right foot",
            Role::Pelvis => "Pelvis",
            Role::Head => "Head",
        }
    }

    /// The analytic limb of this role (index into [`IkHumanoidTargets::limbs`]).
    fn limb(self) -> Option<usize> {
        match self {
            Role::LeftHand => Some(0),
            Role::RightHand => Some(1),
            Role::LeftFoot => Some(2),
            Role::RightFoot => Some(3),
            Role::Pelvis | Role::Head => None,
        }
    }

    fn bone(self) -> HumanoidBone {
        match self {
            Role::LeftHand => HumanoidBone::LeftHand,
            Role::RightHand => HumanoidBone::RightHand,
            Role::LeftFoot => HumanoidBone::LeftFoot,
            Role::RightFoot => HumanoidBone::RightFoot,
            Role::Pelvis => HumanoidBone::Hips,
            Role::Head => HumanoidBone::Head,
        }
    }

    fn target(self, t: &IkHumanoidTargets) -> Option<Entity> {
        match self {
            Role::LeftHand => t.left_hand,
            Role::RightHand => t.right_hand,
            Role::LeftFoot => t.left_foot,
            Role::RightFoot => t.right_foot,
            Role::Pelvis => t.pelvis,
            Role::Head => t.head,
        }
    }

    fn pole(self, t: &IkHumanoidTargets) -> Option<Entity> {
        match self {
            Role::LeftHand => t.left_elbow_pole,
            Role::RightHand => t.right_elbow_pole,
            Role::LeftFoot => t.left_knee_pole,
            Role::RightFoot => t.right_knee_pole,
            Role::Pelvis | Role::Head => None,
        }
    }

    fn index(self) -> usize {
        Role::ALL.iter().position(|&r| r == self).unwrap_or(0)
    }
}

/// A draggable target or pole handle.
#[derive(Component, Clone, Copy, Debug)]
struct TargetHandle {
    role: Role,
    /// An elbow or knee pole rather than the role's target.
    pole: bool,
    /// Where it was put at set-up (restored by "Reset pose").
    home: Transform,
    /// Pick radius.
    radius: f32,
    /// For hands and feet: the direction of the limb's last bone at set-up, used by the scripted
    /// motion to turn the target.
    rest_dir: Vec3,
    base_color: Color,
}

/// The head's aiming axis in its own frame (the character's forward at set-up), for the look-at
/// goal.
#[derive(Resource, Clone, Copy)]
struct HeadAxis(Vec3);

/// Gives the targets and poles that [`IkHumanoid`] spawned a visible, pickable handle; puts the
/// head's target in front of the face for the look-at goal.
fn decorate_targets(
    mut commands: Commands,
    humanoids: Query<
        (
            &IkHumanoidTargets,
            &IkHumanoidBones,
            &GlobalTransform,
            &Character,
        ),
        Added<IkHumanoidTargets>,
    >,
    mut transforms: Query<&mut Transform>,
    globals: Query<&GlobalTransform>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for (targets, bones, root, character) in &humanoids {
        let forward = root.rotation() * Vec3::Z;
        let position = |role: HumanoidBone| bones.get(role).and_then(|e| globals.get(e).ok());
        for role in Role::ALL {
            for pole in [false, true] {
                let entity = if pole {
                    role.pole(targets)
                } else {
                    role.target(targets)
                };
                let Some(entity) = entity else { continue };
                let Ok(mut transform) = transforms.get_mut(entity) else {
                    continue;
                };
                if role == Role::Head
                    && character.solver == SolverUi::Rig
                    && let Some(head) = position(HumanoidBone::Head)
                {
                    // The rig's look-at goal aims the face: its target goes 0.8 m in front of
                    // the head (the full-body humanoid places its own look-at target).
                    let axis = head.rotation().inverse() * forward;
                    commands.insert_resource(HeadAxis(axis));
                    transform.translation +=
                        root.rotation().inverse() * forward * 0.8 + Vec3::Y * 0.08;
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
                .unwrap_or(Vec3::NEG_Y);
                let (mesh, radius, color) = match (role, pole) {
                    (_, true) => (
                        meshes.add(Sphere::new(0.028).mesh().uv(12, 8)),
                        0.045,
                        Color::srgb(0.75, 0.35, 1.0),
                    ),
                    (Role::LeftHand | Role::RightHand, _) => (
                        meshes.add(Sphere::new(0.045)),
                        0.06,
                        Color::srgb(1.0, 0.72, 0.1),
                    ),
                    (Role::LeftFoot | Role::RightFoot, _) => (
                        meshes.add(Cuboid::new(0.08, 0.05, 0.12)),
                        0.07,
                        Color::srgb(1.0, 0.45, 0.15),
                    ),
                    (Role::Pelvis, _) => (
                        meshes.add(Cuboid::new(0.2, 0.03, 0.12)),
                        0.09,
                        Color::srgb(0.2, 0.85, 0.85),
                    ),
                    (Role::Head, _) => (
                        meshes.add(Sphere::new(0.035)),
                        0.055,
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
fn pick_handle(
    camera: &Camera,
    camera_transform: &GlobalTransform,
    cursor: Vec2,
    handles: &Query<(Entity, &GlobalTransform, &TargetHandle, &Visibility)>,
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
    scroll: Res<AccumulatedMouseScroll>,
    window: Single<&Window, With<PrimaryWindow>>,
    mut camera: Single<(&mut Orbit, &mut Transform, &Camera)>,
    mut contexts: EguiContexts,
    mut last_cursor: Local<Option<Vec2>>,
) {
    // Motion from the cursor position rather than raw device motion, which some X servers,
    // remote desktops and VMs do not deliver.
    let cursor = window.cursor_position();
    let delta = match (cursor, *last_cursor) {
        (Some(now), Some(before)) => now - before,
        _ => Vec2::ZERO,
    };
    *last_cursor = cursor;
    if contexts
        .ctx_mut()
        .is_ok_and(|ctx| ctx.is_pointer_over_area())
    {
        return;
    }
    let (orbit, transform, cam) = &mut *camera;
    let inside = cursor.is_some_and(|c| viewport_rect(cam).is_some_and(|r| r.contains(c)));
    let mut changed = false;
    if mouse.pressed(MouseButton::Right) && delta != Vec2::ZERO {
        orbit.yaw -= delta.x * 0.006;
        orbit.pitch = (orbit.pitch - delta.y * 0.006).clamp(-1.45, 1.45);
        changed = true;
    }
    if mouse.pressed(MouseButton::Middle) && delta != Vec2::ZERO {
        let pan = orbit.distance * 0.0016;
        let right = transform.rotation * Vec3::X;
        let up = transform.rotation * Vec3::Y;
        orbit.focus += (-right * delta.x + up * delta.y) * pan;
        changed = true;
    }
    let lines = match scroll.unit {
        MouseScrollUnit::Line => scroll.delta.y,
        MouseScrollUnit::Pixel => scroll.delta.y / 40.0,
    };
    if inside && lines != 0.0 {
        orbit.distance = (orbit.distance * (1.0 - lines * 0.1).max(0.2)).clamp(0.6, 15.0);
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
/// left hand waving and the head watching it, right hand reaching forward, left foot up on the
/// step, the pelvis dropping a little.
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
    let wave_at = Vec3::new(0.34, 1.58, 0.18)
        + Vec3::new(0.06 * (t * 3.0).sin(), 0.03 * (t * 6.0).cos(), 0.0);
    for (handle, mut transform, _) in &mut handles {
        let home = handle.home;
        // World-space goal position and turn (applied to the rest rotation) per handle.
        let (goal, turn) = match (handle.role, handle.pole) {
            (Role::LeftHand, false) => {
                // Waving beside the head: fingers up, palm forward.
                let up = Quat::from_rotation_arc(handle.rest_dir, Vec3::Y);
                let tilt = Quat::from_rotation_z(-0.35 * (t * 3.0).sin());
                (wave_at, tilt * Quat::from_rotation_y(-1.4) * up)
            }
            (Role::RightHand, false) => {
                // Reaching forward.
                let reach = Vec3::new(0.0, 0.04, 0.03) * (t * 1.3).sin();
                let forward = Quat::from_rotation_arc(handle.rest_dir, Vec3::Z);
                (Vec3::new(-0.3, 1.22, 0.42) + reach, forward)
            }
            (Role::LeftFoot, false) => (STEP + Vec3::new(0.0, 0.085, -0.07), Quat::IDENTITY),
            // Poles and the right foot stay where they are.
            (Role::RightFoot, _) | (_, true) => (home.translation, Quat::IDENTITY),
            (Role::Pelvis, _) => (
                home.translation + Vec3::new(0.02, -0.03, 0.02 + 0.01 * (t * 1.3).sin()),
                Quat::IDENTITY,
            ),
            (Role::Head, _) => (wave_at + Vec3::new(0.0, 0.05, 0.15), Quat::IDENTITY),
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

/// Which `bevy_ik` solver drives the character.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum SolverUi {
    /// [`IkHumanoidSolver::FullBody`]: ik-core's hybrid full-body solver (Jacobian over every
    /// humanoid joint, limbs finished analytically), head look-at.
    FullBody,
    /// An [`IkRig`] the demo builds on the mapped bones: the general Jacobian rig, with per-goal
    /// weights, priority levels and blends.
    Rig,
    /// [`IkHumanoidSolver::Limbs`]: four analytic two-bone [`IkLimb`]s with elbow and knee poles.
    Limbs,
}

/// Settings of the hybrid full-body solver. All but `weight` are read when the humanoid is set
/// up, so changing them re-creates the character.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct FullBodyUi {
    /// IK/FK blend (applied live).
    weight: f32,
    /// Jacobian iterations per attempt.
    max_iterations: u32,
    /// Extra attempts from perturbed starts when one does not converge.
    max_restarts: u32,
    /// Position tolerance, millimetres.
    position_tolerance_mm: f32,
    /// Rotation tolerance, degrees.
    rotation_tolerance_deg: f32,
    /// Damping of the least-squares step.
    damping: f32,
    /// Finish the limbs analytically.
    analytic_limbs: bool,
    /// Null-space pull toward the animated pose.
    posture_gain: f32,
    /// Head look-at goal.
    head: bool,
    /// Keep the centre of mass over the feet ([`IkBalance`], applied live).
    center_of_mass: bool,
    /// Support point between the feet: 0 left foot, 0.5 midway, 1 right foot (applied live).
    support_bias: f32,
}

impl Default for FullBodyUi {
    fn default() -> Self {
        let core = FullBodySettings::default();
        Self {
            weight: 1.0,
            max_iterations: core.max_iterations,
            max_restarts: core.max_restarts,
            position_tolerance_mm: core.position_tolerance * 1000.0,
            rotation_tolerance_deg: core.rotation_tolerance.to_degrees(),
            damping: core.damping,
            analytic_limbs: core.analytic_limbs,
            posture_gain: core.posture_gain,
            head: true,
            center_of_mass: false,
            support_bias: IkBalance::default().support_bias,
        }
    }
}

impl FullBodyUi {
    /// The core solver settings.
    fn core(&self) -> FullBodySettings {
        FullBodySettings {
            max_iterations: self.max_iterations.max(1),
            max_restarts: self.max_restarts,
            position_tolerance: self.position_tolerance_mm.max(0.001) / 1000.0,
            rotation_tolerance: self.rotation_tolerance_deg.max(0.001).to_radians(),
            damping: self.damping.max(0.0),
            analytic_limbs: self.analytic_limbs,
            posture_gain: self.posture_gain.max(0.0),
            ..FullBodySettings::default()
        }
    }

    /// The balance goal these settings describe.
    fn balance(&self) -> IkBalance {
        IkBalance {
            enabled: self.center_of_mass,
            support_bias: self.support_bias,
            ..IkBalance::default()
        }
    }

    /// The fields only read at set-up (everything but the live `weight` and balance).
    fn set_up_only(&self) -> Self {
        Self {
            weight: 0.0,
            center_of_mass: false,
            support_bias: 0.0,
            ..*self
        }
    }
}

/// The tunable settings of one analytic limb.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
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
            soft_reach: 0.0,
            flex_limits: true,
        }
    }
}

/// One goal of the full-body rig.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct GoalUi {
    /// The goal follows its target (else it is off).
    enabled: bool,
    /// Weight within its priority level.
    weight: f32,
    /// Priority level, 0 = highest.
    priority: u8,
    /// IK/FK blend of this goal.
    blend: f32,
    /// Also match the target's rotation (hands, feet, pelvis).
    rotation: bool,
}

impl Default for GoalUi {
    fn default() -> Self {
        Self {
            enabled: true,
            weight: 1.0,
            priority: 0,
            blend: 1.0,
            rotation: false,
        }
    }
}

/// The full-body rig's settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct RigUi {
    /// IK/FK blend of the whole rig.
    weight: f32,
    /// Most iterations per frame.
    max_iterations: u32,
    /// Position tolerance, millimetres.
    position_tolerance_mm: f32,
    /// Angle tolerance, degrees.
    angle_tolerance_deg: f32,
    /// Pull toward the animated (reference) pose in the goals' null space.
    posture_gain: f32,
    /// Anatomical joint limits (else free ball joints).
    joint_limits: bool,
    /// The hips may translate (a movable root).
    pelvis_translates: bool,
    /// The head aims its face at its target (else it takes the target's rotation).
    head_look_at: bool,
    /// Per goal, in [`Role::ALL`] order.
    goals: [GoalUi; 6],
}

impl Default for RigUi {
    fn default() -> Self {
        let core = IkRigSettings::default();
        let goal = |priority, rotation| GoalUi {
            priority,
            rotation,
            ..GoalUi::default()
        };
        Self {
            weight: 1.0,
            max_iterations: core.max_iterations,
            position_tolerance_mm: core.position_tolerance * 1000.0,
            angle_tolerance_deg: core.angle_tolerance.to_degrees(),
            posture_gain: core.posture_gain,
            joint_limits: true,
            pelvis_translates: true,
            head_look_at: true,
            goals: [
                // Hands reach, feet stay planted flat, the pelvis keeps upright.
                goal(0, false),
                goal(0, false),
                goal(0, true),
                goal(0, true),
                goal(1, true),
                goal(1, false),
            ],
        }
    }
}

/// What the demo draws (handles, goal lines, skeleton, grid) and what it asks the plugin's
/// debug drawing ([`IkDebugDraw`]) for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct DrawUi {
    handles: bool,
    goal_lines: bool,
    skeleton: bool,
    grid: bool,
    /// Plugin: chains of limbs and rigs.
    ik_chains: bool,
    /// Plugin: joint-limit cones and hinge axes.
    ik_limits: bool,
    /// Plugin: effector-to-target lines, red when missed.
    ik_residuals: bool,
    /// Plugin: centre of mass and support point (while the balance goal is on).
    ik_balance: bool,
}

impl Default for DrawUi {
    fn default() -> Self {
        Self {
            handles: true,
            goal_lines: true,
            skeleton: false,
            grid: true,
            ik_chains: false,
            ik_limits: false,
            ik_residuals: false,
            ik_balance: true,
        }
    }
}

/// Everything the panel controls. Missing fields in a settings file take their defaults.
#[derive(Resource, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct DemoSettings {
    solver: SolverUi,
    full_body: FullBodyUi,
    /// Play the idle clip under the IK.
    animation: bool,
    /// Move the targets along the built-in script.
    scripted_motion: bool,
    rig: RigUi,
    /// Per analytic limb: left arm, right arm, left leg, right leg.
    limbs: [LimbUi; 4],
    draw: DrawUi,
}

impl Default for DemoSettings {
    fn default() -> Self {
        Self {
            solver: SolverUi::FullBody,
            full_body: FullBodyUi::default(),
            animation: true,
            scripted_motion: false,
            rig: RigUi::default(),
            limbs: [LimbUi::default(); 4],
            draw: DrawUi::default(),
        }
    }
}

/// The full-body rig as the panel describes it, starting from the rig the plugin set up.
fn rig_from_ui(
    current: &IkRig,
    ui: &RigUi,
    targets: &IkHumanoidTargets,
    bones: &IkHumanoidBones,
    head_axis: Option<Vec3>,
) -> IkRig {
    let mut rig = current.clone();
    rig.weight = ui.weight;
    rig.settings = IkRigSettings {
        max_iterations: ui.max_iterations.max(1),
        position_tolerance: ui.position_tolerance_mm.max(0.001) / 1000.0,
        angle_tolerance: ui.angle_tolerance_deg.max(0.001).to_radians(),
        posture_gain: ui.posture_gain,
    };
    rig.limits = if ui.joint_limits {
        IkJointLimits::Humanoid
    } else {
        IkJointLimits::Free
    };
    rig.movable_root = ui
        .pelvis_translates
        .then(|| bones.get(HumanoidBone::Hips).map(BoneRef::Entity))
        .flatten();
    for goal in &mut rig.goals {
        let BoneRef::Entity(bone) = goal.bone else {
            continue;
        };
        let Some(role) = Role::ALL
            .into_iter()
            .find(|r| bones.get(r.bone()) == Some(bone))
        else {
            continue;
        };
        let g = ui.goals[role.index()];
        goal.target = role.target(targets).filter(|_| g.enabled);
        goal.weight = g.weight;
        goal.priority = g.priority;
        goal.blend = g.blend;
        goal.kind = match (role, head_axis) {
            (Role::Head, Some(axis)) if ui.head_look_at => IkGoalKind::LookAt { axis },
            (Role::Head, _) => IkGoalKind::Rotation,
            _ if g.rotation => IkGoalKind::PositionRotation,
            _ => IkGoalKind::Position,
        };
    }
    rig
}

/// Pushes changed settings into the rig or limbs, the handles and the animation player.
fn apply_settings(
    settings: Res<DemoSettings>,
    mut humanoids: Query<(
        Entity,
        Ref<IkHumanoidTargets>,
        &IkHumanoidBones,
        &mut IkHumanoid,
    )>,
    mut rigs: Query<&mut IkRig>,
    mut debug_draw: ResMut<IkDebugDraw>,
    mut limbs: Query<(&mut IkLimb, Has<IkDisabled>)>,
    mut handles: Query<(&TargetHandle, &mut Visibility)>,
    mut players: Query<&mut AnimationPlayer>,
    player: Option<Res<Player>>,
    rest: Option<Res<RestPose>>,
    head_axis: Option<Res<HeadAxis>>,
    mut transforms: Query<&mut Transform, Without<TargetHandle>>,
    mut commands: Commands,
    mut was_animated: Local<Option<(bool, Entity)>>,
) {
    if settings.is_changed() {
        let draw = settings.draw;
        let wanted = IkDebugDraw {
            enabled: draw.ik_chains || draw.ik_limits || draw.ik_residuals || draw.ik_balance,
            chains: draw.ik_chains,
            targets: false,
            poles: false,
            limits: draw.ik_limits,
            residuals: draw.ik_residuals,
            center_of_mass: draw.ik_balance,
            ..IkDebugDraw::default()
        };
        if *debug_draw != wanted {
            *debug_draw = wanted;
        }
    }
    let Ok((character, targets, bones, mut humanoid)) = humanoids.single_mut() else {
        return;
    };
    let head_changed = head_axis.as_ref().is_some_and(DetectChanges::is_changed);
    let changed = settings.is_changed() || targets.is_changed() || head_changed;
    if let Ok(mut rig) = rigs.get_mut(character)
        && (changed || rig.is_added())
    {
        let new = rig_from_ui(
            &rig,
            &settings.rig,
            &targets,
            bones,
            head_axis.as_ref().map(|h| h.0),
        );
        if *rig != new {
            *rig = new;
        }
    }
    if !changed {
        return;
    }
    if settings.solver == SolverUi::FullBody && humanoid.weight != settings.full_body.weight {
        humanoid.weight = settings.full_body.weight;
    }
    if settings.solver == SolverUi::FullBody && humanoid.balance != settings.full_body.balance() {
        humanoid.balance = settings.full_body.balance();
    }
    for role in Role::ALL {
        let Some(i) = role.limb() else { continue };
        let Some(&limb_entity) = targets.limbs.get(i) else {
            continue;
        };
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
        new.pole = role.pole(&targets).filter(|_| ui.use_pole);
        new.pole_weight = ui.pole_weight;
        new.soft_reach = ui.soft_reach;
        new.flex_min = flex_min;
        new.flex_max = flex_max;
        if *limb != new {
            *limb = new;
        }
        // In the rig mode the IkRig drives these targets and the limbs stay off.
        match (ui.enabled && settings.solver == SolverUi::Limbs, disabled) {
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
        let shown = settings.draw.handles
            && match (settings.solver, handle.role.limb()) {
                (SolverUi::Limbs, Some(i)) => {
                    settings.limbs[i].enabled && (!handle.pole || settings.limbs[i].use_pole)
                }
                (SolverUi::Limbs, None) => false,
                (SolverUi::Rig, _) => settings.rig.goals[handle.role.index()].enabled,
                (SolverUi::FullBody, _) => handle.role != Role::Head || settings.full_body.head,
            };
        visibility.set_if_neq(if shown {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        });
    }
    if let Some(player) = player
        && *was_animated != Some((settings.animation, player.0))
        && let Ok(mut animation) = players.get_mut(player.0)
    {
        if settings.animation {
            animation.resume_all();
        } else {
            animation.pause_all();
            // Back to the rest pose, so the IK works on the bind pose alone.
            for (e, t) in rest.iter().flat_map(|r| r.0.iter()) {
                if let Ok(mut current) = transforms.get_mut(*e) {
                    current.set_if_neq(*t);
                }
            }
        }
        *was_animated = Some((settings.animation, player.0));
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

/// One goal's readout: its last residual and its history.
#[derive(Default)]
struct GoalReadout {
    /// "3.2 mm", "off", …
    text: String,
    /// Residual per frame (mm, or degrees for rotation-only goals), last [`HISTORY`] frames;
    /// NaN where the goal was off.
    history: Vec<f32>,
    /// Whether `history` is in degrees.
    degrees: bool,
}

/// What the panel shows about the solver.
#[derive(Resource, Default)]
struct Readouts {
    /// Per goal, in [`Role::ALL`] order.
    goals: [GoalReadout; 6],
    /// Solver iterations per frame (full body), last [`HISTORY`] frames.
    iterations: Vec<f32>,
    /// One line about the last solve.
    summary: String,
    /// The full-body balance goal's ground-plane residual ("off" when it is off).
    center_of_mass: String,
    /// The last problem reported, if any.
    error: Option<String>,
    /// Solve set time (µs), smoothed.
    solve_micros: f32,
    /// Frame time (ms), smoothed.
    frame_ms: f32,
}

fn push(history: &mut Vec<f32>, value: f32) {
    if history.len() >= HISTORY {
        history.remove(0);
    }
    history.push(value);
}

fn record_readouts(
    humanoids: Query<(
        &IkHumanoidTargets,
        &IkHumanoidBones,
        &IkStatus,
        Option<&IkRig>,
        &Character,
        Option<&IkCenterOfMass>,
    )>,
    limbs: Query<(&IkStatus, Has<IkDisabled>)>,
    clock: Res<SolveClock>,
    time: Res<Time>,
    mut readouts: ResMut<Readouts>,
) {
    let r = &mut *readouts;
    let smooth = |old: f32, new: f32| {
        if old == 0.0 {
            new
        } else {
            old * 0.95 + new * 0.05
        }
    };
    r.solve_micros = smooth(r.solve_micros, clock.micros);
    r.frame_ms = smooth(r.frame_ms, time.delta_secs() * 1000.0);
    let Ok((targets, bones, status, rig, character, com)) = humanoids.single() else {
        return;
    };
    r.center_of_mass = match com {
        Some(c) if c.active && character.solver == SolverUi::FullBody => {
            format!("{:.1} mm", status.center_of_mass_residual * 1000.0)
        }
        _ => "off".to_owned(),
    };
    let summary = |status: &IkStatus| {
        if status.solved {
            format!(
                "{} iteration{} · {}",
                status.iterations,
                if status.iterations == 1 { "" } else { "s" },
                if status.converged {
                    "converged"
                } else {
                    "best effort (not all goals within tolerance)"
                }
            )
        } else {
            "not solved".to_owned()
        }
    };
    let mut values: [(f32, bool, String); 6] =
        core::array::from_fn(|_| (f32::NAN, false, String::from("—")));
    r.error = None;
    if character.solver == SolverUi::FullBody {
        // Residuals come in `Effector::ALL` order (hands, feet, pelvis; like `Role::ALL`),
        // then the look-at angle.
        for role in Role::ALL {
            let slot = &mut values[role.index()];
            let Some(&v) = status.residuals.get(role.index()) else {
                continue;
            };
            if !status.solved {
                continue;
            }
            slot.1 = role == Role::Head;
            slot.0 = if slot.1 { v.to_degrees() } else { v * 1000.0 };
            slot.2 = if slot.1 {
                format!("{:.2}°", slot.0)
            } else {
                format!("{:.2} mm", slot.0)
            };
        }
        r.summary = summary(status);
        push(&mut r.iterations, status.iterations as f32);
        r.error = status.last_error.as_ref().map(ToString::to_string);
    } else if let Some(rig) = rig {
        for (i, goal) in rig.goals.iter().enumerate() {
            let BoneRef::Entity(bone) = goal.bone else {
                continue;
            };
            let Some(role) = Role::ALL
                .into_iter()
                .find(|r| bones.get(r.bone()) == Some(bone))
            else {
                continue;
            };
            let degrees = matches!(goal.kind, IkGoalKind::Rotation | IkGoalKind::LookAt { .. });
            let slot = &mut values[role.index()];
            slot.1 = degrees;
            match (goal.target, status.residuals.get(i)) {
                (None, _) => slot.2 = "off".to_owned(),
                (Some(_), Some(&v)) if status.solved => {
                    slot.0 = if degrees { v.to_degrees() } else { v * 1000.0 };
                    slot.2 = if degrees {
                        format!("{:.2}°", slot.0)
                    } else {
                        format!("{:.2} mm", slot.0)
                    };
                }
                _ => {}
            }
        }
        r.summary = summary(status);
        push(&mut r.iterations, status.iterations as f32);
        r.error = status.last_error.as_ref().map(ToString::to_string);
    } else {
        let mut reached = 0;
        for role in Role::ALL {
            let Some(i) = role.limb() else { continue };
            let Some((s, disabled)) = targets.limbs.get(i).and_then(|&l| limbs.get(l).ok()) else {
                continue;
            };
            let slot = &mut values[role.index()];
            if disabled {
                slot.2 = "off".to_owned();
            } else if s.solved {
                slot.0 = s.position_residual * 1000.0;
                slot.2 = format!(
                    "{:.2} mm{}",
                    slot.0,
                    if s.converged { "" } else { " (out of reach)" }
                );
                reached += usize::from(s.converged);
            }
            if let Some(e) = &s.last_error {
                r.error = Some(e.to_string());
            }
        }
        r.summary = format!("analytic: {reached} of 4 limbs on target, 1 iteration each");
        r.iterations.clear();
    }
    for (readout, (value, degrees, text)) in r.goals.iter_mut().zip(values) {
        readout.text = text;
        readout.degrees = degrees;
        push(&mut readout.history, value);
    }
}

// ---------------------------------------------------------------------------------------------
// Debug drawing

fn draw_debug(
    settings: Res<DemoSettings>,
    mut gizmos: Gizmos,
    humanoids: Query<(
        &IkHumanoidTargets,
        &IkHumanoidBones,
        Option<&IkRig>,
        &Character,
    )>,
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
    let Ok((targets, bones, rig, mode)) = humanoids.single() else {
        return;
    };
    let pos = |e: Entity| globals.get(e).ok().map(GlobalTransform::translation);
    let bone = |b: &BoneRef| match b {
        BoneRef::Entity(e) => Some(*e),
        BoneRef::Name(_) => None,
    };
    let goal_color = Color::srgb(1.0, 0.85, 0.2);
    let pole_color = Color::srgba(0.75, 0.35, 1.0, 0.6);
    if settings.draw.goal_lines {
        if mode.solver == SolverUi::FullBody {
            // The hybrid humanoid solver's goals: each role's bone to its target.
            for role in Role::ALL {
                let from = bones.get(role.bone()).and_then(pos);
                if let (Some(from), Some(to)) = (from, role.target(targets).and_then(pos)) {
                    gizmos.line(from, to, goal_color);
                }
            }
        }
        for goal in rig.iter().flat_map(|r| r.goals.iter()) {
            if let (Some(from), Some(to)) =
                (bone(&goal.bone).and_then(pos), goal.target.and_then(pos))
            {
                gizmos.line(from, to, goal_color);
            }
        }
        for &limb_entity in &targets.limbs {
            let Ok((limb, disabled)) = limbs.get(limb_entity) else {
                continue;
            };
            if disabled {
                continue;
            }
            if let (Some(tip), Some(target)) =
                (bone(&limb.tip).and_then(pos), limb.target.and_then(pos))
            {
                gizmos.line(tip, target, goal_color);
            }
            if let (Some(mid), Some(pole)) =
                (bone(&limb.mid).and_then(pos), limb.pole.and_then(pos))
            {
                gizmos.line(mid, pole, pole_color);
            }
        }
    }
    if settings.draw.skeleton
        && let Ok(root) = character.single()
    {
        let color = Color::srgb(0.3, 1.0, 0.6);
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
                    gizmos.line(p, q, color);
                }
            }
            gizmos.sphere(Isometry3d::from_translation(p), 0.01, color);
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
                "Humanoid mapped by name{}",
                if s.unmapped.is_empty() {
                    String::new()
                } else {
                    format!(" ({} optional roles absent)", s.unmapped.len())
                }
            ))
            .on_hover_text(s.unmapped.join(", "));
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
    ui.horizontal(|ui| {
        ui.label("Solver:");
        ui.radio_value(&mut settings.solver, SolverUi::FullBody, "Full body")
            .on_hover_text(
                "IkHumanoid full body: ik-core's hybrid solver (Jacobian over the body, limbs finished analytically), head look-at",
            );
        ui.radio_value(&mut settings.solver, SolverUi::Rig, "Jacobian rig")
            .on_hover_text("An IkRig on the mapped bones: per-goal weights, priority levels, blends");
        ui.radio_value(&mut settings.solver, SolverUi::Limbs, "Analytic limbs")
            .on_hover_text("IkHumanoid limbs: four analytic two-bone IkLimbs with elbow and knee poles");
    });
    ui.small(&readouts.summary);
    if let Some(e) = &readouts.error {
        ui.colored_label(egui::Color32::LIGHT_RED, e);
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
        if ui.button("Defaults").clicked() {
            *settings = DemoSettings {
                solver: settings.solver,
                ..DemoSettings::default()
            };
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
    ui.small("Click a handle to select · Esc deselect · L local axes · right drag orbit · middle drag pan · wheel zoom");
    ui.separator();

    egui::ScrollArea::vertical().show(ui, |ui| {
        match settings.solver {
            SolverUi::FullBody => full_body_controls(ui, &mut settings.full_body, readouts),
            SolverUi::Rig => rig_controls(ui, &mut settings.rig, readouts),
            SolverUi::Limbs => limb_controls(ui, &mut settings.limbs, readouts),
        }
        ui.separator();
        ui.label("Draw");
        ui.horizontal_wrapped(|ui| {
            ui.checkbox(&mut settings.draw.handles, "Handles");
            ui.checkbox(&mut settings.draw.goal_lines, "Goal lines");
            ui.checkbox(&mut settings.draw.skeleton, "Skeleton");
            ui.checkbox(&mut settings.draw.grid, "Grid");
        });
        ui.horizontal_wrapped(|ui| {
            ui.label("bevy_ik:");
            ui.checkbox(&mut settings.draw.ik_chains, "Chains");
            ui.checkbox(&mut settings.draw.ik_limits, "Limits");
            ui.checkbox(&mut settings.draw.ik_residuals, "Residuals");
            ui.checkbox(&mut settings.draw.ik_balance, "Centre of mass");
        })
        .response
        .on_hover_text(
            "The plugin's IkDebugDraw (analytic limbs, Jacobian rigs and the full body)",
        );
        ui.separator();
        convergence_plots(ui, readouts);
    });
}

/// The position (mm) and angle (°) tolerance sliders of the Jacobian solvers' panels.
fn tolerance_sliders(ui: &mut egui::Ui, position_mm: &mut f32, angle_deg: &mut f32) {
    ui.add(
        egui::Slider::new(position_mm, 0.01..=10.0)
            .logarithmic(true)
            .text("Tolerance (mm)"),
    );
    ui.add(
        egui::Slider::new(angle_deg, 0.01..=5.0)
            .logarithmic(true)
            .text("Angle tolerance (°)"),
    );
}

fn full_body_controls(ui: &mut egui::Ui, fb: &mut FullBodyUi, readouts: &Readouts) {
    ui.add(egui::Slider::new(&mut fb.weight, 0.0..=1.0).text("IK weight"));
    ui.small("Read at set-up: changing these re-creates the character");
    ui.add(egui::Slider::new(&mut fb.max_iterations, 1..=100).text("Max iterations"));
    ui.add(egui::Slider::new(&mut fb.max_restarts, 0..=8).text("Restarts"));
    tolerance_sliders(
        ui,
        &mut fb.position_tolerance_mm,
        &mut fb.rotation_tolerance_deg,
    );
    ui.add(
        egui::Slider::new(&mut fb.damping, 0.0..=0.5)
            .logarithmic(true)
            .smallest_positive(0.001)
            .text("Damping"),
    );
    ui.add(egui::Slider::new(&mut fb.posture_gain, 0.0..=1.0).text("Reference pose"))
        .on_hover_text("Null-space pull toward the animated pose");
    ui.horizontal_wrapped(|ui| {
        ui.checkbox(&mut fb.analytic_limbs, "Analytic limb finish");
        ui.checkbox(&mut fb.head, "Head look-at");
    });
    ui.checkbox(&mut fb.center_of_mass, "Centre of mass")
        .on_hover_text(
            "IkBalance: keep the centre of mass over a point between the feet targets (live)",
        );
    if fb.center_of_mass {
        ui.add(egui::Slider::new(&mut fb.support_bias, 0.0..=1.0).text("Support (L ↔ R)"));
    }
    ui.label(format!(
        "Centre of mass to support: {}",
        readouts.center_of_mass
    ));
    for role in Role::ALL {
        ui.label(format!(
            "{}: {}",
            role.label(),
            readouts.goals[role.index()].text
        ));
    }
}

fn rig_controls(ui: &mut egui::Ui, rig: &mut RigUi, readouts: &Readouts) {
    ui.add(egui::Slider::new(&mut rig.weight, 0.0..=1.0).text("IK weight"));
    ui.add(egui::Slider::new(&mut rig.max_iterations, 1..=64).text("Max iterations"));
    tolerance_sliders(
        ui,
        &mut rig.position_tolerance_mm,
        &mut rig.angle_tolerance_deg,
    );
    ui.add(egui::Slider::new(&mut rig.posture_gain, 0.0..=1.0).text("Reference pose"))
        .on_hover_text("Pull toward the animated pose in the freedom the goals leave");
    ui.horizontal_wrapped(|ui| {
        ui.checkbox(&mut rig.joint_limits, "Joint limits");
        ui.checkbox(&mut rig.pelvis_translates, "Pelvis moves");
        ui.checkbox(&mut rig.head_look_at, "Head looks at target");
    });
    for role in Role::ALL {
        let g = &mut rig.goals[role.index()];
        let header = format!(
            "{}: {}  (P{})",
            role.label(),
            readouts.goals[role.index()].text,
            g.priority
        );
        egui::CollapsingHeader::new(header)
            .id_salt(role.label())
            .default_open(false)
            .show(ui, |ui| {
                ui.horizontal(|ui| {
                    ui.checkbox(&mut g.enabled, "On");
                    if role != Role::Head {
                        ui.checkbox(&mut g.rotation, "Match rotation");
                    }
                });
                ui.add(
                    egui::Slider::new(&mut g.weight, 0.01..=10.0)
                        .logarithmic(true)
                        .text("Weight"),
                );
                ui.add(egui::Slider::new(&mut g.priority, 0..=3).text("Priority (0 = first)"));
                ui.add(egui::Slider::new(&mut g.blend, 0.0..=1.0).text("Blend"));
            });
    }
}

fn limb_controls(ui: &mut egui::Ui, limbs: &mut [LimbUi; 4], readouts: &Readouts) {
    for role in Role::ALL {
        let Some(i) = role.limb() else { continue };
        let limb = &mut limbs[i];
        let header = format!("{}: {}", role.label(), readouts.goals[role.index()].text);
        egui::CollapsingHeader::new(header)
            .id_salt(role.label())
            .default_open(false)
            .show(ui, |ui| {
                ui.checkbox(&mut limb.enabled, "Solve (analytic two-bone)");
                ui.add(egui::Slider::new(&mut limb.weight, 0.0..=1.0).text("IK weight"));
                ui.add(
                    egui::Slider::new(&mut limb.rotation_weight, 0.0..=1.0).text("Rotation weight"),
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
            });
    }
}

fn convergence_plots(ui: &mut egui::Ui, readouts: &Readouts) {
    let colors = [
        egui::Color32::from_rgb(255, 184, 28),
        egui::Color32::from_rgb(80, 200, 255),
        egui::Color32::from_rgb(255, 110, 60),
        egui::Color32::from_rgb(120, 230, 120),
        egui::Color32::from_rgb(60, 220, 220),
        egui::Color32::from_rgb(230, 120, 255),
    ];
    ui.label("Residual per goal (mm; head in °)");
    Plot::new("residuals")
        .height(130.0)
        .legend(Legend::default())
        .include_y(0.0)
        .include_y(1.0)
        .allow_scroll(false)
        .allow_drag(false)
        .allow_zoom(false)
        .show(ui, |plot| {
            for role in Role::ALL {
                let r = &readouts.goals[role.index()];
                let points: PlotPoints = r
                    .history
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.is_finite())
                    .map(|(x, &y)| [x as f64, f64::from(y)])
                    .collect();
                if points.points().is_empty() {
                    continue;
                }
                plot.line(Line::new(role.label(), points).color(colors[role.index()]));
            }
        });
    if !readouts.iterations.is_empty() {
        ui.label("Solver iterations per frame");
        Plot::new("iterations")
            .height(80.0)
            .include_y(0.0)
            .allow_scroll(false)
            .allow_drag(false)
            .allow_zoom(false)
            .show(ui, |plot| {
                let points: PlotPoints = readouts
                    .iterations
                    .iter()
                    .enumerate()
                    .map(|(x, &y)| [x as f64, f64::from(y)])
                    .collect();
                plot.line(Line::new("iterations", points).color(egui::Color32::LIGHT_GRAY));
            });
    }
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
    humanoids: Query<(&IkHumanoidTargets, &IkStatus, Option<&IkRig>, &Character)>,
    statuses: Query<&IkStatus>,
    handles: Query<(Entity, &GlobalTransform, &TargetHandle, &Visibility)>,
    camera: Single<(&Camera, &GlobalTransform), With<Orbit>>,
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
    if state.frames.is_multiple_of(50) {
        info!(
            "screenshot: frame {}, {:.1} s, {} frames since the character was set up",
            state.frames,
            started.elapsed().as_secs_f32(),
            state.frames_ready
        );
    }
    let ready =
        humanoids
            .single()
            .is_ok_and(|(t, status, rig, character)| match character.solver {
                SolverUi::FullBody => status.ready && status.solved,
                SolverUi::Rig => rig.is_some() && status.ready && status.solved,
                SolverUi::Limbs => {
                    t.limbs.len() == 4
                        && t.limbs
                            .iter()
                            .all(|&l| statuses.get(l).is_ok_and(|s| s.ready && s.solved))
                }
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
                // Drawn: "click" the left hand's handle through the same picking as the mouse
                // (a check of the viewport maths), so its gizmo shows; give that time to draw.
                let (camera, camera_transform) = *camera;
                let left_hand = handles
                    .iter()
                    .find(|(_, _, h, _)| h.role == Role::LeftHand && !h.pole)
                    .map(|(e, t, ..)| (e, t.translation()));
                let picked = left_hand.and_then(|(_, at)| {
                    let cursor = camera.world_to_viewport(camera_transform, at).ok()?;
                    pick_handle(camera, camera_transform, cursor, &handles)
                });
                match (left_hand, picked) {
                    (Some((e, _)), Some(p)) if p == e => {
                        commands.entity(e).insert(GizmoTarget::default());
                    }
                    _ => {
                        if let Ok(mut o) = state.outcome.lock() {
                            *o = Some(Err(format!(
                                "picking the left hand's handle at its projected position gave {picked:?}, expected {:?}",
                                left_hand.map(|l| l.0)
                            )));
                        }
                        return;
                    }
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
        || !state.frames_ready.is_multiple_of(5)
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

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::asset::RenderAssetUsages;
    use bevy::render::render_resource::{Extent3d, TextureDimension};

    fn args(list: &[&str]) -> impl Iterator<Item = String> {
        list.iter()
            .map(|s| (*s).to_owned())
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn settings_round_trip_through_ron() {
        let mut settings = DemoSettings {
            solver: SolverUi::Limbs,
            animation: false,
            ..DemoSettings::default()
        };
        settings.rig.goals[Role::Head.index()].priority = 2;
        settings.rig.posture_gain = 0.35;
        settings.limbs[1].pole_weight = 0.25;
        settings.full_body.center_of_mass = true;
        settings.full_body.support_bias = 0.3;
        let text = ron::ser::to_string_pretty(&settings, ron::ser::PrettyConfig::default())
            .expect("settings serialise");
        let back: DemoSettings = ron::from_str(&text).expect("settings parse back");
        assert_eq!(back, settings);
    }

    #[test]
    fn partial_settings_files_take_defaults_for_the_rest() {
        let loaded: DemoSettings =
            ron::from_str("(solver: Limbs, rig: (posture_gain: 0.5))").expect("partial file");
        assert_eq!(loaded.solver, SolverUi::Limbs);
        assert_eq!(loaded.rig.posture_gain, 0.5);
        assert_eq!(loaded.rig.goals, RigUi::default().goals);
        assert_eq!(loaded.limbs, DemoSettings::default().limbs);
        assert!(ron::from_str::<DemoSettings>("(solver: Fabrik)").is_err());
        // Files saved before the centre-of-mass toggle existed load with it off.
        assert!(!loaded.full_body.center_of_mass);
        let balanced: DemoSettings =
            ron::from_str("(full_body: (center_of_mass: true, damping: 0.05))").expect("balance");
        assert!(balanced.full_body.center_of_mass);
        assert_eq!(balanced.full_body.balance(), IkBalance::on());
        assert_eq!(balanced.full_body.damping, 0.05);
    }

    #[test]
    fn command_line_is_parsed_and_bad_input_rejected() {
        let o = Options::parse(args(&[
            "--screenshot",
            "shot.png",
            "--frames",
            "12",
            "--solver",
            "limbs",
            "--yaw",
            "-30",
        ]))
        .expect("valid arguments");
        assert_eq!(o.screenshot, Some(PathBuf::from("shot.png")));
        assert_eq!(o.frames, 12);
        assert_eq!(o.solver, Some(SolverUi::Limbs));
        assert_eq!(o.yaw, Some(-30.0));
        assert!(Options::parse(args(&["--frames", "many"])).is_err());
        assert!(Options::parse(args(&["--solver", "fabrik"])).is_err());
        assert!(Options::parse(args(&["--screenshot"])).is_err());
        assert!(Options::parse(args(&["--fullscreen"])).is_err());
    }

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
    fn probe_counts_character_handle_and_gizmo_pixels_right_of_the_panel() {
        let shirt = [40, 110, 170, 255];
        let handle = [250, 190, 40, 255];
        let gizmo = [20, 220, 110, 255];
        let clear = [CLEAR[0], CLEAR[1], CLEAR[2], 255];
        // 4 x 2 pixels; column 0 stands for the panel and is ignored.
        let pixels = [
            shirt, shirt, handle, clear, //
            shirt, gizmo, clear, shirt,
        ];
        let image = Image::new(
            Extent3d {
                width: 4,
                height: 2,
                depth_or_array_layers: 1,
            },
            TextureDimension::D2,
            pixels.concat(),
            TextureFormat::Rgba8UnormSrgb,
            RenderAssetUsages::default(),
        );
        let p = probe_image(&image, 1);
        assert_eq!(p.total, 6);
        assert_eq!(p.character, 2);
        assert_eq!(p.handles, 1);
        assert_eq!(p.gizmo, 1);
        assert_eq!(p.drawn, 4);
    }
}
