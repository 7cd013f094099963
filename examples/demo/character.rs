//! The scene and the character: which glTF file is open ([`CharacterChoice`]: the command line,
//! the panel's picker of the characters in the asset folder, or a file dropped on the window),
//! loading it, spawning its scene with an [`IkHumanoid`], its idle clip, measuring its bounds and
//! facing ([`BodyFrame`]) so the camera, handles and props fit it, and the humanoid mapping
//! report the panel shows ([`MappingSummary`]).

use std::path::{Path, PathBuf};

use bevy::animation::AnimatedBy;
use bevy::asset::LoadState;
use bevy::camera::primitives::Aabb;
use bevy::gltf::Gltf;
use bevy::mesh::VertexAttributeValues;
use bevy::mesh::skinning::{SkinnedMesh, SkinnedMeshInverseBindposes};
use bevy::prelude::*;
use bevy::window::FileDragAndDrop;
use bevy::world_serialization::WorldInstanceReady;
use bevy_ik::ik_core::humanoid::HumanoidBone;
use bevy_ik::prelude::*;

use crate::handles::{HeadAxis, STEP, TargetHandle};
use crate::settings::DemoSettings;
use crate::solver::SolverSetup;

/// The bundled character, relative to the asset folder.
pub const DEFAULT_CHARACTER: &str = "character.glb";
/// Height (m) of the bundled character's joints as measured (toes to head end): the unit the
/// handles and the scripted motion are sized in.
const REFERENCE_HEIGHT: f32 = 1.72;
/// File extensions the glTF loader takes (`vrm`: through `bevy_ik`'s `vrm` feature, which maps
/// the avatar from its own humanoid table).
pub const EXTENSIONS: [&str; 3] = ["glb", "gltf", "vrm"];

/// Opens, loads and spawns the character.
pub struct CharacterPlugin {
    /// The character to open first.
    pub initial: CharacterPath,
    /// The asset folder, listed for the picker.
    pub asset_folder: PathBuf,
    /// Hide the ground, step and grid until told otherwise (the screenshot shows them once the
    /// character alone was seen drawn).
    pub hide_props: bool,
}

impl Plugin for CharacterPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(CharacterChoice(self.initial.clone()))
            .insert_resource(BundledCharacters(bundled_characters(&self.asset_folder)))
            .insert_resource(PropsShown(!self.hide_props))
            .init_resource::<CharacterSpawns>()
            .add_systems(Startup, set_up_lights)
            .add_systems(
                Update,
                (
                    open_dropped_file,
                    load_character,
                    prepare_character,
                    spawn_character,
                    measure_character,
                    spawn_props,
                    show_props,
                    restore_rest_pose,
                )
                    .chain(),
            );
    }
}

/// A character file: a path in the asset folder or anywhere on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CharacterPath {
    /// Relative to the asset folder.
    Asset(String),
    /// A file elsewhere (an absolute path: the demo allows paths outside the asset folder).
    File(PathBuf),
}

impl CharacterPath {
    /// A command-line or dropped path: a file that exists is opened from disk, anything else
    /// is looked up in the asset folder.
    pub fn from_argument(arg: &str) -> Self {
        let path = Path::new(arg);
        if path.is_file() {
            Self::File(std::path::absolute(path).unwrap_or_else(|_| path.to_owned()))
        } else {
            Self::Asset(arg.to_owned())
        }
    }

    /// Whether the glTF loader takes this file's extension.
    pub fn is_supported(&self) -> bool {
        let name = match self {
            Self::Asset(p) => Path::new(p),
            Self::File(p) => p.as_path(),
        };
        name.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
    }

    /// What the panel and the summary call it.
    pub fn display(&self) -> String {
        match self {
            Self::Asset(p) => p.clone(),
            Self::File(p) => p.display().to_string(),
        }
    }
}

/// The character to show; changing it loads the new file.
#[derive(Resource, Clone, Debug, PartialEq, Eq)]
pub struct CharacterChoice(pub CharacterPath);

/// The characters in the asset folder, for the panel's picker.
#[derive(Resource, Clone, Debug, Default)]
pub struct BundledCharacters(pub Vec<String>);

/// The `.glb`/`.gltf`/`.vrm` files directly in `folder`, sorted.
pub fn bundled_characters(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| CharacterPath::Asset(name.clone()).is_supported())
        .collect();
    names.sort();
    names
}

/// The loaded (or loading) character file.
#[derive(Resource)]
pub struct CharacterAsset {
    /// What was asked for.
    pub path: CharacterPath,
    /// The glTF.
    pub gltf: Handle<Gltf>,
    /// Its scene, once the glTF has loaded.
    pub scene: Option<Handle<WorldAsset>>,
    /// Its idle clip, if it has one.
    pub idle: Option<IdleAnimation>,
    /// Why it could not be opened.
    pub error: Option<String>,
}

/// The animation graph and clip node of the character's idle animation.
#[derive(Clone)]
pub struct IdleAnimation {
    /// The graph played.
    pub graph: Handle<AnimationGraph>,
    /// The clip's node.
    pub node: AnimationNodeIndex,
    /// The clip's name in the file.
    pub name: String,
}

/// The character's root entity (holds the `WorldAssetRoot`, the [`IkHumanoid`] and the
/// [`SolverSetup`]).
#[derive(Component)]
pub struct Character;

/// On the character's root once its scene has spawned: frames since.
#[derive(Component)]
struct SceneReady(u32);

/// The rest local transforms of the character's animated bones (restored when the animation is
/// off).
#[derive(Resource, Default)]
pub struct RestPose(Vec<(Entity, Transform)>);

/// The entity that plays the character's animation.
#[derive(Resource)]
pub struct Player(pub Entity);

/// Where the character stands, which way it faces and how big it is, measured from its joints
/// and rigid meshes once its scene has spawned.
#[derive(Resource, Clone, Copy, Debug, PartialEq)]
pub struct BodyFrame {
    /// Least corner of the bounds.
    pub min: Vec3,
    /// Greatest corner of the bounds.
    pub max: Vec3,
    /// Ground point under the hips.
    pub origin: Vec3,
    /// The character's up (+Y).
    pub up: Vec3,
    /// The character's forward (from its left and right legs or arms).
    pub forward: Vec3,
    /// The character's left.
    pub left: Vec3,
    /// Size relative to the bundled character.
    pub scale: f32,
}

impl BodyFrame {
    /// Measures a character: its bounds from `points` (joints and mesh vertices), its size from
    /// the height of its `joints` (all points when empty: a stylised head or hat must not make
    /// the reach of the scripted motion longer than the arms), its facing from its
    /// left-to-right direction.
    pub fn measure(
        points: &[Vec3],
        joints: &[Vec3],
        origin: Vec3,
        left: Option<Vec3>,
    ) -> Option<Self> {
        let bounds = |points: &[Vec3]| {
            let finite = points.iter().filter(|p| p.is_finite());
            let min = finite.clone().fold(Vec3::INFINITY, |a, &p| a.min(p));
            let max = finite.fold(Vec3::NEG_INFINITY, |a, &p| a.max(p));
            let height = max.y - min.y.min(origin.y);
            (height.is_finite() && height > 1e-4).then_some((min, max, height))
        };
        let (min, max, height) = bounds(points)?;
        let size = bounds(joints).map_or(height, |(.., h)| h);
        let up = Vec3::Y;
        let left = left
            .map(|l| l.reject_from(up))
            .and_then(Vec3::try_normalize)
            .unwrap_or(Vec3::X);
        Some(Self {
            min,
            max,
            origin: if origin.is_finite() {
                origin
            } else {
                Vec3::ZERO
            },
            up,
            forward: left.cross(up),
            left,
            scale: size / REFERENCE_HEIGHT,
        })
    }

    /// Middle of the bounds.
    pub fn center(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }

    /// Height of the bounds.
    pub fn height(&self) -> f32 {
        self.max.y - self.min.y
    }

    /// A point given in body units: x left, y up, z forward, in metres of the bundled
    /// character, scaled to this one.
    pub fn point(&self, v: Vec3) -> Vec3 {
        self.origin + self.vector(v)
    }

    /// A direction given in body units (see [`BodyFrame::point`]).
    pub fn vector(&self, v: Vec3) -> Vec3 {
        (self.left * v.x + self.up * v.y + self.forward * v.z) * self.scale
    }

    /// The eight corners of the bounds.
    pub fn corners(&self) -> [Vec3; 8] {
        core::array::from_fn(|i| {
            Vec3::new(
                if i & 1 == 0 { self.min.x } else { self.max.x },
                if i & 2 == 0 { self.min.y } else { self.max.y },
                if i & 4 == 0 { self.min.z } else { self.max.z },
            )
        })
    }
}

/// Whether the ground, the step and the grid are shown.
#[derive(Resource)]
pub struct PropsShown(pub bool);

/// The ground and the step, sized to the character.
#[derive(Component)]
struct Prop;

/// How far from the camera shadows are drawn. The orbit camera stays within 15 m of its focus
/// and the scene (character, props, terrain) within a few metres of the origin.
const SHADOW_DISTANCE: f32 = 20.0;
/// Where the first of the two shadow cascades ends: the character seen from the default orbit
/// (3 m) falls in it.
const FIRST_CASCADE_FAR: f32 = 5.0;

fn set_up_lights(mut commands: Commands) {
    commands.spawn((
        DirectionalLight {
            illuminance: 9000.0,
            shadow_maps_enabled: true,
            ..default()
        },
        // Two cascades over the scene's 20 m instead of Bevy's four over 150 m (sized for open
        // worlds): each shadow-map texel covers less of the character, and half the shadow
        // passes are drawn (the CI screenshot runs on software Vulkan).
        bevy::light::CascadeShadowConfigBuilder {
            num_cascades: 2,
            maximum_distance: SHADOW_DISTANCE,
            first_cascade_far_bound: FIRST_CASCADE_FAR,
            ..default()
        }
        .build(),
        Transform::from_xyz(2.0, 4.0, 3.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
}

/// A `.glb`/`.gltf`/`.vrm` dropped on the window replaces the character.
fn open_dropped_file(
    mut drops: MessageReader<FileDragAndDrop>,
    mut choice: ResMut<CharacterChoice>,
) {
    for drop in drops.read() {
        if let FileDragAndDrop::DroppedFile { path_buf, .. } = drop {
            let path = CharacterPath::File(path_buf.clone());
            if path.is_supported() {
                info!("opening the dropped file {}", path.display());
                choice.0 = path;
            } else {
                warn!(
                    "{} is not a {} file",
                    path_buf.display(),
                    EXTENSIONS.join("/")
                );
            }
        }
    }
}

/// Starts loading the chosen file (and removes the previous character).
fn load_character(
    mut commands: Commands,
    choice: Res<CharacterChoice>,
    current: Option<Res<CharacterAsset>>,
    asset_server: Res<AssetServer>,
    characters: Query<Entity, With<Character>>,
) {
    if current.as_ref().is_some_and(|c| c.path == choice.0) {
        return;
    }
    for e in &characters {
        commands.entity(e).despawn();
    }
    commands.remove_resource::<Player>();
    commands.remove_resource::<RestPose>();
    commands.remove_resource::<BodyFrame>();
    commands.remove_resource::<HeadAxis>();
    let gltf = match &choice.0 {
        CharacterPath::Asset(p) => asset_server.load(p.clone()),
        CharacterPath::File(p) => asset_server
            .load_builder()
            .override_unapproved()
            .load(p.clone()),
    };
    commands.insert_resource(CharacterAsset {
        path: choice.0.clone(),
        gltf,
        scene: None,
        idle: None,
        error: None,
    });
}

/// Once the glTF has loaded: picks its scene and idle clip; records a failed load.
fn prepare_character(
    mut asset: Option<ResMut<CharacterAsset>>,
    asset_server: Res<AssetServer>,
    gltfs: Res<Assets<Gltf>>,
    mut graphs: ResMut<Assets<AnimationGraph>>,
) {
    let Some(asset) = asset.as_mut() else { return };
    if asset.scene.is_some() || asset.error.is_some() {
        return;
    }
    if let Some(LoadState::Failed(e)) = asset_server.get_load_state(&asset.gltf) {
        asset.error = Some(format!("cannot load {}: {e}", asset.path.display()));
        warn!("{}", asset.error.as_deref().unwrap_or_default());
        return;
    }
    let Some(gltf) = gltfs.get(&asset.gltf) else {
        return;
    };
    let Some(scene) = gltf
        .default_scene
        .clone()
        .or_else(|| gltf.scenes.first().cloned())
    else {
        asset.error = Some(format!("{} has no scene", asset.path.display()));
        return;
    };
    asset.scene = Some(scene);
    // The clip named like an idle ("Idle", "idle_loop", …): IK over a still pose is easiest to
    // read. Without one the character keeps its rest pose.
    let idle = gltf
        .named_animations
        .iter()
        .filter(|(name, _)| name.to_ascii_lowercase().contains("idle"))
        .min_by_key(|(name, _)| (name.len(), name.to_string()))
        .map(|(name, clip)| (name.to_string(), clip.clone()));
    asset.idle = idle.map(|(name, clip)| {
        let (graph, node) = AnimationGraph::from_clip(clip);
        IdleAnimation {
            graph: graphs.add(graph),
            node,
            name,
        }
    });
}

/// How many times a character was spawned (the run summary reports it: a mode switch spawns
/// none).
#[derive(Resource, Default, Clone, Copy, Debug)]
pub struct CharacterSpawns(pub u32);

/// Spawns the character once its scene is known (a mode switch changes it in place:
/// `solver::switch_setup`).
fn spawn_character(
    mut commands: Commands,
    settings: Res<DemoSettings>,
    asset: Option<Res<CharacterAsset>>,
    characters: Query<(), With<Character>>,
    mut spawns: ResMut<CharacterSpawns>,
) {
    let Some(scene) = asset.as_ref().and_then(|a| a.scene.clone()) else {
        return;
    };
    if !characters.is_empty() {
        return;
    }
    spawns.0 += 1;
    let setup = SolverSetup::from_settings(&settings);
    commands
        .spawn((
            Name::new("character"),
            Character,
            setup,
            WorldAssetRoot(scene),
            setup.humanoid(),
            // The panel's "IK solve" readout: this character's own solve time.
            IkSolveTime::default(),
        ))
        .observe(start_animation);
}

/// Once the glTF scene has spawned: remember the rest pose and start the idle clip.
fn start_animation(
    ready: On<WorldInstanceReady>,
    mut commands: Commands,
    children: Query<&Children>,
    mut players: Query<&mut AnimationPlayer>,
    bones: Query<&Transform, With<AnimatedBy>>,
    asset: Res<CharacterAsset>,
    settings: Res<DemoSettings>,
) {
    commands.entity(ready.entity).insert(SceneReady(0));
    let mut rest = Vec::new();
    for e in children.iter_descendants(ready.entity) {
        if let Ok(t) = bones.get(e) {
            rest.push((e, *t));
        }
        if let Ok(mut player) = players.get_mut(e)
            && let Some(idle) = &asset.idle
        {
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

/// Restarts the idle clip ("Reset pose").
pub fn restart_animation(world: &mut World) {
    let idle = world
        .get_resource::<CharacterAsset>()
        .and_then(|a| a.idle.as_ref().map(|i| i.node));
    let player = world.get_resource::<Player>().map(|p| p.0);
    if let (Some(node), Some(player)) = (idle, player)
        && let Some(mut player) = world.get_mut::<AnimationPlayer>(player)
        && let Some(active) = player.animation_mut(node)
    {
        active.seek_to(0.0);
    }
}

/// Pauses or resumes the clip as the panel asks; back to the rest pose when paused, so the IK
/// works on the bind pose alone.
fn restore_rest_pose(
    settings: Res<DemoSettings>,
    player: Option<Res<Player>>,
    rest: Option<Res<RestPose>>,
    mut players: Query<&mut AnimationPlayer>,
    mut transforms: Query<&mut Transform, Without<TargetHandle>>,
    mut was_animated: Local<Option<(bool, Entity)>>,
) {
    let Some(player) = player else { return };
    if *was_animated == Some((settings.animation, player.0)) {
        return;
    }
    let Ok(mut animation) = players.get_mut(player.0) else {
        return;
    };
    if settings.animation {
        animation.resume_all();
    } else {
        animation.pause_all();
        for (e, t) in rest.iter().flat_map(|r| r.0.iter()) {
            if let Ok(mut current) = transforms.get_mut(*e) {
                current.set_if_neq(*t);
            }
        }
    }
    *was_animated = Some((settings.animation, player.0));
}

/// A few frames after the scene spawned (transforms propagated, the humanoid mapped): measures
/// the character's bounds from its skins' joints and its rigid meshes, and its facing from its
/// legs (or arms).
fn measure_character(
    mut commands: Commands,
    mut roots: Query<(Entity, &mut SceneReady, Option<&IkHumanoidBones>), With<Character>>,
    children: Query<&Children>,
    skins: Query<(&SkinnedMesh, Option<&Mesh3d>)>,
    meshes: Res<Assets<Mesh>>,
    bindposes: Res<Assets<SkinnedMeshInverseBindposes>>,
    rigid: Query<(&GlobalTransform, &Aabb), (Without<SkinnedMesh>, Without<TargetHandle>)>,
    globals: Query<&GlobalTransform>,
    current: Option<Res<BodyFrame>>,
) {
    for (root, mut ready, bones) in &mut roots {
        ready.0 += 1;
        if ready.0 != 3 {
            continue;
        }
        let mut points = Vec::new();
        let mut joint_points = Vec::new();
        for e in children.iter_descendants(root) {
            if let Ok((skin, mesh)) = skins.get(e) {
                let joints: Vec<Mat4> = skin
                    .joints
                    .iter()
                    .map(|&j| globals.get(j).map_or(Mat4::NAN, GlobalTransform::to_matrix))
                    .collect();
                joint_points.extend(joints.iter().map(|m| m.w_axis.truncate()));
                // The skinned vertices themselves: a stylised head or a hat reaches far past
                // the joints.
                if let (Some(mesh), Some(inverse)) = (
                    mesh.and_then(|m| meshes.get(&m.0)),
                    bindposes.get(&skin.inverse_bindposes),
                ) {
                    let skinning: Vec<Mat4> = joints
                        .iter()
                        .zip(inverse.iter())
                        .map(|(g, ib)| *g * *ib)
                        .collect();
                    points.extend(skinned_positions(mesh, &skinning));
                }
            } else if let Ok((t, aabb)) = rigid.get(e) {
                let (c, h) = (Vec3::from(aabb.center), Vec3::from(aabb.half_extents));
                points.extend((0..8).map(|i| {
                    let s = Vec3::new(
                        if i & 1 == 0 { -1.0 } else { 1.0 },
                        if i & 2 == 0 { -1.0 } else { 1.0 },
                        if i & 4 == 0 { -1.0 } else { 1.0 },
                    );
                    t.transform_point(c + h * s)
                }));
            }
        }
        if points.is_empty() && joint_points.is_empty() {
            points.extend(
                children
                    .iter_descendants(root)
                    .filter_map(|e| globals.get(e).ok())
                    .map(GlobalTransform::translation),
            );
        }
        let at = |role: HumanoidBone| {
            bones
                .and_then(|b| b.get(role))
                .and_then(|e| globals.get(e).ok())
                .map(GlobalTransform::translation)
        };
        let pair = |l, r| Some(at(l)? - at(r)?);
        let left = pair(HumanoidBone::LeftUpperLeg, HumanoidBone::RightUpperLeg)
            .or_else(|| pair(HumanoidBone::LeftUpperArm, HumanoidBone::RightUpperArm));
        let ground = globals
            .get(root)
            .map_or(Vec3::ZERO, GlobalTransform::translation);
        let hips = at(HumanoidBone::Hips).unwrap_or(ground);
        let origin = Vec3::new(hips.x, ground.y, hips.z);
        points.extend_from_slice(&joint_points);
        match BodyFrame::measure(&points, &joint_points, origin, left) {
            Some(frame) => {
                info!(
                    "character bounds {:.2?}..{:.2?} (height {:.2} m, scale {:.2}), facing {:.2?}",
                    frame.min,
                    frame.max,
                    frame.height(),
                    frame.scale,
                    frame.forward
                );
                if current.as_deref() != Some(&frame) {
                    commands.insert_resource(frame);
                }
            }
            None => warn!("the character has no measurable extent"),
        }
    }
}

/// Where a skinned mesh's vertices are in the current pose (at most about 4,000 of them, evenly
/// picked), skinned on the CPU like the GPU does: `Σ weight · joint · inverse bind · position`.
/// Empty when the mesh lacks positions, joint indices or weights in the main world.
fn skinned_positions(mesh: &Mesh, skinning: &[Mat4]) -> Vec<Vec3> {
    let (
        Some(VertexAttributeValues::Float32x3(positions)),
        Some(VertexAttributeValues::Uint16x4(indices)),
        Some(VertexAttributeValues::Float32x4(weights)),
    ) = (
        mesh.attribute(Mesh::ATTRIBUTE_POSITION),
        mesh.attribute(Mesh::ATTRIBUTE_JOINT_INDEX),
        mesh.attribute(Mesh::ATTRIBUTE_JOINT_WEIGHT),
    )
    else {
        return Vec::new();
    };
    let step = (positions.len() / 4000).max(1);
    positions
        .iter()
        .zip(indices)
        .zip(weights)
        .step_by(step)
        .filter_map(|((p, j), w)| {
            let p = Vec3::from_array(*p);
            let mut sum = Vec3::ZERO;
            let mut total = 0.0;
            for (&joint, &weight) in j.iter().zip(w) {
                if weight > 0.0 {
                    sum += skinning.get(usize::from(joint))?.transform_point3(p) * weight;
                    total += weight;
                }
            }
            (total > 1e-6).then(|| sum / total)
        })
        .collect()
}

/// Spawns the ground and the step sized to the character (again when it changes).
fn spawn_props(
    mut commands: Commands,
    frame: Option<Res<BodyFrame>>,
    props: Query<Entity, With<Prop>>,
    shown: Res<PropsShown>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let Some(frame) = frame.filter(DetectChanges::is_changed) else {
        return;
    };
    for e in &props {
        commands.entity(e).despawn();
    }
    let s = frame.scale;
    let visibility = if shown.0 {
        Visibility::Inherited
    } else {
        Visibility::Hidden
    };
    commands.spawn((
        Prop,
        Mesh3d(meshes.add(Plane3d::default().mesh().size(8.0 * s, 8.0 * s))),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::srgb(0.36, 0.37, 0.4),
            perceptual_roughness: 0.95,
            ..default()
        })),
        Transform::from_translation(Vec3::new(frame.origin.x, frame.origin.y, frame.origin.z)),
        visibility,
    ));
    // A step to put a foot on.
    commands.spawn((
        Prop,
        Mesh3d(meshes.add(Cuboid::new(0.3 * s, STEP.y * s, 0.32 * s))),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::srgb(0.55, 0.42, 0.3),
            perceptual_roughness: 0.8,
            ..default()
        })),
        Transform::from_translation(frame.point(STEP - Vec3::Y * STEP.y * 0.5))
            .with_rotation(Quat::from_rotation_arc(Vec3::Z, frame.forward)),
        visibility,
    ));
}

fn show_props(shown: Res<PropsShown>, mut props: Query<&mut Visibility, With<Prop>>) {
    if !shown.is_changed() {
        return;
    }
    for mut v in &mut props {
        v.set_if_neq(if shown.0 {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        });
    }
}

/// The humanoid mapping of the character, as the panel and the summary report it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MappingSummary {
    /// How many roles have a bone (also known when set-up failed and `mapped` is empty).
    pub mapped_count: usize,
    /// Roles with a bone: (role, bone name), once set up.
    pub mapped: Vec<(HumanoidBone, String)>,
    /// Required roles without one (nothing is set up while any is missing).
    pub missing_required: Vec<String>,
    /// Optional roles without one.
    pub missing_optional: Vec<String>,
}

impl MappingSummary {
    /// From what [`IkHumanoid`] recorded: the mapped bones, if set up, and the roles it could
    /// not map ([`IkStatus::unmapped`]).
    pub fn new(
        bones: Option<&IkHumanoidBones>,
        status: &IkStatus,
        name: impl Fn(Entity) -> Option<String>,
    ) -> Self {
        let mapped: Vec<(HumanoidBone, String)> = bones
            .into_iter()
            .flat_map(IkHumanoidBones::iter)
            .map(|(role, e)| (role, name(e).unwrap_or_else(|| format!("{e}"))))
            .collect();
        // Without the bones (a required role is missing), every role not listed as unmapped
        // was found.
        let mapped_count = if bones.is_none() && !status.unmapped.is_empty() {
            HumanoidBone::COUNT.saturating_sub(status.unmapped.len())
        } else {
            mapped.len()
        };
        let required = |n: &String| {
            HumanoidBone::ALL
                .iter()
                .find(|r| r.to_string() == *n)
                .is_some_and(|r| r.is_required())
        };
        let (missing_required, missing_optional) =
            status.unmapped.iter().cloned().partition(required);
        Self {
            mapped_count,
            mapped,
            missing_required,
            missing_optional,
        }
    }

    /// Every role the map knows.
    pub fn roles(&self) -> usize {
        HumanoidBone::COUNT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_frame_takes_height_and_facing_from_the_points() {
        let points = [Vec3::new(-0.2, 0.0, 0.0), Vec3::new(0.2, 3.2, 0.1)];
        // Left along -Z: the character faces +X (left × up).
        let frame = BodyFrame::measure(&points, &[], Vec3::ZERO, Some(Vec3::new(0.0, 0.3, -2.0)))
            .expect("measurable");
        assert!((frame.scale - 3.2 / REFERENCE_HEIGHT).abs() < 1e-5);
        assert!(frame.left.abs_diff_eq(Vec3::NEG_Z, 1e-6));
        assert!(frame.forward.abs_diff_eq(Vec3::NEG_Z.cross(Vec3::Y), 1e-6));
        let p = frame.point(Vec3::new(1.0, 0.0, 0.0));
        assert!(p.abs_diff_eq(Vec3::NEG_Z * frame.scale, 1e-5), "{p}");
        assert!(BodyFrame::measure(&[Vec3::ONE], &[], Vec3::ONE, None).is_none());
        assert!(BodyFrame::measure(&[Vec3::NAN], &[], Vec3::ZERO, None).is_none());
        let default = BodyFrame::measure(&points, &[], Vec3::NAN, None).expect("measurable");
        assert_eq!((default.left, default.forward), (Vec3::X, Vec3::Z));
        assert_eq!(default.origin, Vec3::ZERO);
        // A big head above the joints widens the bounds, not the size.
        let joints = [Vec3::ZERO, Vec3::Y * 1.72];
        let big_head = [Vec3::ZERO, Vec3::Y * 3.0];
        let f = BodyFrame::measure(&big_head, &joints, Vec3::ZERO, None).expect("measurable");
        assert!((f.scale - 1.0).abs() < 1e-5 && f.max.y == 3.0);
    }

    #[test]
    fn mapping_summary_splits_required_from_optional_and_counts_a_failed_map() {
        let status = IkStatus {
            unmapped: vec![
                HumanoidBone::LeftFoot.to_string(),
                HumanoidBone::LeftToes.to_string(),
            ],
            ..IkStatus::default()
        };
        let m = MappingSummary::new(None, &status, |_| None);
        assert_eq!(m.missing_required, vec![HumanoidBone::LeftFoot.to_string()]);
        assert_eq!(m.missing_optional, vec![HumanoidBone::LeftToes.to_string()]);
        assert_eq!(m.mapped_count, HumanoidBone::COUNT - 2);
        assert!(m.mapped.is_empty());
        // Nothing spawned yet: nothing mapped, nothing reported missing.
        let waiting = MappingSummary::new(None, &IkStatus::default(), |_| None);
        assert_eq!(waiting.mapped_count, 0);
    }

    #[test]
    fn a_dropped_gltf_replaces_the_character_and_other_files_are_ignored() {
        let mut app = App::new();
        app.add_message::<FileDragAndDrop>()
            .insert_resource(CharacterChoice(CharacterPath::Asset(
                DEFAULT_CHARACTER.to_owned(),
            )))
            .add_systems(Update, open_dropped_file);
        let window = Entity::PLACEHOLDER;
        let drop = |path: &str| FileDragAndDrop::DroppedFile {
            window,
            path_buf: PathBuf::from(path),
        };
        app.world_mut().write_message(drop("/models/notes.txt"));
        app.update();
        assert_eq!(
            app.world().resource::<CharacterChoice>().0,
            CharacterPath::Asset(DEFAULT_CHARACTER.to_owned())
        );
        app.world_mut().write_message(drop("/models/hero.glb"));
        app.update();
        assert_eq!(
            app.world().resource::<CharacterChoice>().0,
            CharacterPath::File(PathBuf::from("/models/hero.glb"))
        );
    }

    #[test]
    fn character_paths_know_their_loader_and_existing_files_open_from_disk() {
        assert!(CharacterPath::Asset("a/b.GLB".into()).is_supported());
        assert!(CharacterPath::Asset("b.gltf".into()).is_supported());
        assert!(CharacterPath::Asset("avatar.vrm".into()).is_supported());
        assert!(!CharacterPath::Asset("b.fbx".into()).is_supported());
        assert!(!CharacterPath::Asset("glb".into()).is_supported());
        let here = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/character.glb");
        assert!(
            matches!(CharacterPath::from_argument(here), CharacterPath::File(p) if p.is_absolute())
        );
        assert_eq!(
            CharacterPath::from_argument("no_such_dir/x.glb"),
            CharacterPath::Asset("no_such_dir/x.glb".into())
        );
        let listed = bundled_characters(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/assets")));
        assert!(listed.contains(&DEFAULT_CHARACTER.to_owned()), "{listed:?}");
        assert!(
            listed
                .iter()
                .all(|n| [".glb", ".gltf", ".vrm"].iter().any(|e| n.ends_with(e)))
        );
    }
}
