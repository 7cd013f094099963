//! Terrain mode: a floor, a stair under the left foot's side and a ramp under the right's
//! (all marked [`IkGround`]) slide slowly under the character while an [`IkGrounding`] stage,
//! after the solver's stages, keeps its feet on them — the lower foot reached by lowering the
//! pelvis, each foot turned to its ground. A small "Terrain" window switches the terrain,
//! grounding, the sliding and the drawing (ankle goals, ground normals, pelvis offset); the
//! demo's own floor and step are hidden while the terrain is shown.
//!
//! **Walk** (`--walk`): the character plays its walk clip (the bundled character's `Walk`, or
//! the clip of another character's file whose name says walk) while a course — a stair of three
//! steps up, a landing, a ramp down, a platform that rises and sinks, uneven slabs — scrolls
//! under it at the speed its planted feet move back in the clip (measured on the feet as the
//! clip plays), and is lifted as a character controller would carry the character (the mean
//! ground height under its stride). The clip plays on the character's own `AnimationPlayer`;
//! the IK stages, grounding last, run after the animation, as the plugin orders them. Switch
//! grounding off to see the in-place clip's feet float over and sink into the course.
//!
//! `--terrain` starts with it on; `--walk` starts walking.

use bevy::gltf::Gltf;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use bevy_ik::ik_core::humanoid::HumanoidBone;
use bevy_ik::prelude::*;

use crate::character::{BodyFrame, Character, CharacterAsset, Player, PropsShown};

/// The terrain mode.
pub struct GroundingDemoPlugin {
    /// Start with the terrain on.
    pub initial: bool,
    /// Start walking across the course.
    pub walk: bool,
}

impl Plugin for GroundingDemoPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(TerrainDemo {
            terrain: self.initial || self.walk,
            walk: self.walk,
            ..TerrainDemo::default()
        })
        .init_resource::<Course>()
        .add_systems(EguiPrimaryContextPass, terrain_window)
        .add_systems(
            Update,
            (
                find_walk_clip,
                play_walk_clip,
                measure_walk_speed,
                spawn_terrain,
                sync_grounding,
                slide_terrain,
                scroll_course,
                draw_grounding,
            )
                .chain(),
        )
        .add_systems(
            PostUpdate,
            follow_walk_clip
                .after(bevy::app::AnimationSystems)
                .before(IkSystems::Prepare),
        );
    }
}

/// What the terrain window switches.
#[derive(Resource, Clone, Copy, Debug, PartialEq)]
pub struct TerrainDemo {
    /// Terrain shown (and the demo's floor and step hidden).
    pub terrain: bool,
    /// The grounding stage runs.
    pub grounding: bool,
    /// The terrain slides back and forth under the character.
    pub slide: bool,
    /// Ankle goals, normals and the pelvis offset drawn.
    pub draw: bool,
    /// Walk across the course (the walk clip plays; the course scrolls under the character).
    pub walk: bool,
}

impl Default for TerrainDemo {
    fn default() -> Self {
        Self {
            terrain: false,
            grounding: true,
            slide: true,
            draw: true,
            walk: false,
        }
    }
}

/// The terrain's root (its pieces are children).
#[derive(Component)]
struct Terrain;

/// The grounding stage entity the mode spawned.
#[derive(Component)]
struct DemoGrounding;

fn terrain_window(
    mut contexts: EguiContexts,
    mut demo: ResMut<TerrainDemo>,
    clip: Option<Res<WalkClip>>,
    course: Res<Course>,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let mut edited = *demo;
    let open = crate::panel::floating_windows_open(ctx);
    egui::Window::new("Terrain")
        .default_pos([1040.0, 10.0])
        .default_open(open)
        .resizable(false)
        .show(ctx, |ui| {
            ui.checkbox(&mut edited.terrain, "Slopes and stair");
            ui.add_enabled_ui(edited.terrain, |ui| {
                ui.checkbox(&mut edited.grounding, "Foot grounding");
                ui.checkbox(&mut edited.walk, "Walk across (walk clip)")
                    .on_hover_text("The character's walk clip plays and a course scrolls under it");
                ui.add_enabled_ui(!edited.walk, |ui| {
                    ui.checkbox(&mut edited.slide, "Slide the ground");
                });
                ui.checkbox(&mut edited.draw, "Draw offsets");
                if edited.walk {
                    ui.label(match &clip {
                        Some(c) => format!(
                            "clip `{}` · {:.2} m/s (measured on the feet)",
                            c.name, course.speed
                        ),
                        None => "this character has no walk clip".to_owned(),
                    });
                }
            });
        });
    if edited != *demo {
        *demo = edited;
    }
    Ok(())
}

/// Spawns (or removes) the terrain, sized to the character.
fn spawn_terrain(
    mut commands: Commands,
    demo: Res<TerrainDemo>,
    frame: Option<Res<BodyFrame>>,
    terrain: Query<Entity, With<Terrain>>,
    mut shown: ResMut<PropsShown>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut course: ResMut<Course>,
) {
    let Some(frame) = frame else { return };
    if !(demo.is_changed() || frame.is_changed()) {
        return;
    }
    for e in &terrain {
        commands.entity(e).despawn();
    }
    if shown.0 == demo.terrain {
        shown.0 = !demo.terrain;
    }
    if !demo.terrain {
        return;
    }
    let s = frame.scale;
    let turn = Quat::from_rotation_arc(Vec3::Z, frame.forward);
    let stone = materials.add(StandardMaterial {
        base_color: Color::srgb(0.45, 0.46, 0.5),
        perceptual_roughness: 0.9,
        ..default()
    });
    let wood = materials.add(StandardMaterial {
        base_color: Color::srgb(0.55, 0.42, 0.3),
        perceptual_roughness: 0.8,
        ..default()
    });
    let root = commands
        .spawn((
            Name::new("terrain"),
            Terrain,
            Transform::from_translation(frame.origin).with_rotation(turn),
            Visibility::default(),
        ))
        .id();
    let mut piece = |mesh: Mesh,
                     material: &Handle<StandardMaterial>,
                     at: Transform,
                     platform: Option<Platform>| {
        let mut e = commands.spawn((
            Mesh3d(meshes.add(mesh)),
            MeshMaterial3d(material.clone()),
            at,
            IkGround,
            ChildOf(root),
        ));
        if let Some(p) = platform {
            e.insert(p);
        }
    };
    // Body units in the terrain's frame: +X left, +Y up, +Z forward (the root is turned to the
    // character's forward).
    if demo.walk {
        course.distance = 0.0;
        piece(
            Plane3d::default()
                .mesh()
                .size(4.0 * s, 3.0 * COURSE_LENGTH * s)
                .into(),
            &stone,
            Transform::from_xyz(0.0, 0.0, 0.5 * COURSE_LENGTH * s),
            None,
        );
        // The course three times (behind, under and ahead of the character), so it scrolls
        // without a seam.
        for copy in [-1.0, 0.0, 1.0] {
            for p in course_pieces() {
                let at =
                    Transform::from_translation((p.center + Vec3::Z * copy * COURSE_LENGTH) * s)
                        .with_rotation(p.rotation);
                let material = if p.wood { &wood } else { &stone };
                piece(
                    Cuboid::from_size(p.size * s).into(),
                    material,
                    at,
                    p.platform.then_some(Platform(at)),
                );
            }
        }
        return;
    }
    piece(
        Plane3d::default().mesh().size(8.0 * s, 8.0 * s).into(),
        &stone,
        Transform::IDENTITY,
        None,
    );
    // A stair of three 8 cm steps on the left, running along the slide (left-right).
    for k in 1..=3 {
        let h = 0.08 * k as f32 * s;
        piece(
            Cuboid::new(0.12 * s, h, 0.6 * s).into(),
            &wood,
            Transform::from_xyz((0.04 + 0.12 * k as f32) * s, h / 2.0, 0.0),
            None,
        );
    }
    // A 14° ramp on the right, rising away from the character.
    piece(
        Cuboid::new(0.5 * s, 0.04 * s, 0.6 * s).into(),
        &stone,
        Transform::from_xyz(-0.35 * s, 0.05 * s, 0.0)
            .with_rotation(Quat::from_rotation_z(14f32.to_radians())),
        None,
    );
}

// ---------------------------------------------------------------------------------------------
// Walking across the course

/// Length of the course, body units (it repeats).
const COURSE_LENGTH: f32 = 9.0;
/// The ramp's slope.
const RAMP_DEGREES: f32 = 14.0;
/// The moving platform: where it is along the course, its length, how high it rises and its
/// period (seconds).
const PLATFORM: (f32, f32, f32, f32) = (5.3, 0.8, 0.1, 4.0);

/// One box of the course, body units (terrain frame, the course starting under the character).
struct CoursePiece {
    center: Vec3,
    size: Vec3,
    rotation: Quat,
    wood: bool,
    /// The moving platform.
    platform: bool,
}

/// The course: flat; a stair of three 10 cm steps up (40 cm treads); a landing; a 14° ramp
/// down; the platform that rises and sinks; four uneven slabs (3–6 cm, rolled ±4°); flat.
fn course_pieces() -> Vec<CoursePiece> {
    let slab = |z0: f32, z1: f32, top: f32, wood: bool| CoursePiece {
        center: Vec3::new(0.0, top / 2.0, (z0 + z1) / 2.0),
        size: Vec3::new(1.2, top, z1 - z0),
        rotation: Quat::IDENTITY,
        wood,
        platform: false,
    };
    let mut pieces: Vec<CoursePiece> = (1..=3)
        .map(|k| {
            let z0 = 1.0 + 0.4 * (k - 1) as f32;
            slab(z0, z0 + 0.4, 0.1 * k as f32, true)
        })
        .collect();
    pieces.push(slab(2.2, 3.2, 0.3, true));
    // The ramp: a 4 cm slab whose top runs from the landing's edge down to the floor.
    let slope = RAMP_DEGREES.to_radians();
    let run = 0.3 / slope.tan();
    let rotation = Quat::from_rotation_x(slope);
    let top_center = Vec3::new(0.0, 0.15, 3.2 + run / 2.0);
    pieces.push(CoursePiece {
        center: top_center - rotation * Vec3::Y * 0.02,
        size: Vec3::new(1.2, 0.04, (run * run + 0.09).sqrt()),
        rotation,
        wood: false,
        platform: false,
    });
    let (at, length, rise, _) = PLATFORM;
    pieces.push(CoursePiece {
        platform: true,
        ..slab(at, at + length, rise + 0.02, true)
    });
    for (i, (top, roll)) in [(0.03, 4.0), (0.06, -3.0), (0.02, 2.0), (0.05, -4.0)]
        .into_iter()
        .enumerate()
    {
        let z0 = 6.6 + 0.5 * i as f32;
        pieces.push(CoursePiece {
            rotation: Quat::from_rotation_z(f32::to_radians(roll)),
            ..slab(z0, z0 + 0.5, top, false)
        });
    }
    pieces
}

/// How far the platform has sunk below its top (body units) at `time`.
fn platform_sink(time: f32) -> f32 {
    let (.., rise, period) = PLATFORM;
    rise * 0.5 * (1.0 + (time * core::f32::consts::TAU / period).cos())
}

/// The course's height along its centre line at `z` (body units), the platform at `time`.
fn course_height(z: f32, time: f32) -> f32 {
    let z = z.rem_euclid(COURSE_LENGTH);
    let run = 0.3 / RAMP_DEGREES.to_radians().tan();
    let (at, length, rise, _) = PLATFORM;
    match z {
        z if (1.0..2.2).contains(&z) => 0.1 * (((z - 1.0) / 0.4).floor() + 1.0),
        z if (2.2..3.2).contains(&z) => 0.3,
        z if (3.2..3.2 + run).contains(&z) => 0.3 * (1.0 - (z - 3.2) / run),
        z if (at..at + length).contains(&z) => rise + 0.02 - platform_sink(time),
        z if (6.6..8.6).contains(&z) => {
            [0.03, 0.06, 0.02, 0.05][(((z - 6.6) / 0.5) as usize).min(3)]
        }
        _ => 0.0,
    }
}

/// The course's scroll: how far the character has walked, and the speed its walk clip's
/// planted feet move back (measured as it plays, world units per second).
#[derive(Resource, Default)]
struct Course {
    distance: f32,
    speed: f32,
}

/// The moving platform, with its highest local transform.
#[derive(Component)]
struct Platform(Transform);

/// The character's walk clip and the graph that plays it.
#[derive(Resource)]
struct WalkClip {
    /// The file it came from.
    gltf: AssetId<Gltf>,
    graph: Handle<AnimationGraph>,
    node: AnimationNodeIndex,
    name: String,
}

/// Finds the loaded character's walk clip: the shortest clip name that contains "walk"
/// (`Walk`, `Walking`, `walk_loop`…).
fn find_walk_clip(
    mut commands: Commands,
    asset: Option<Res<CharacterAsset>>,
    gltfs: Res<Assets<Gltf>>,
    clip: Option<Res<WalkClip>>,
    mut graphs: ResMut<Assets<AnimationGraph>>,
) {
    let Some(asset) = asset else { return };
    if clip.is_some_and(|c| c.gltf == asset.gltf.id()) {
        return;
    }
    let Some(gltf) = gltfs.get(&asset.gltf) else {
        commands.remove_resource::<WalkClip>();
        return;
    };
    let walk = gltf
        .named_animations
        .iter()
        .filter(|(name, _)| name.to_ascii_lowercase().contains("walk"))
        .min_by_key(|(name, _)| (name.len(), name.to_string()));
    let Some((name, handle)) = walk else {
        commands.remove_resource::<WalkClip>();
        return;
    };
    let (graph, node) = AnimationGraph::from_clip(handle.clone());
    commands.insert_resource(WalkClip {
        gltf: asset.gltf.id(),
        graph: graphs.add(graph),
        node,
        name: name.to_string(),
    });
}

/// Plays the walk clip on the character's player while walking; back to its idle clip after.
fn play_walk_clip(
    mut commands: Commands,
    demo: Res<TerrainDemo>,
    clip: Option<Res<WalkClip>>,
    asset: Option<Res<CharacterAsset>>,
    player: Option<Res<Player>>,
    settings: Res<crate::settings::DemoSettings>,
    mut players: Query<&mut AnimationPlayer>,
    mut playing: Local<Option<(Entity, bool)>>,
) {
    let Some(player) = player else { return };
    let walk = demo.terrain && demo.walk && clip.is_some();
    let walking = *playing == Some((player.0, true));
    if walk == walking {
        return;
    }
    let Ok(mut animation) = players.get_mut(player.0) else {
        return;
    };
    let idle = asset.as_ref().and_then(|a| a.idle.as_ref());
    let (graph, node) = match (&clip, idle) {
        (Some(c), _) if walk => (c.graph.clone(), c.node),
        (_, Some(i)) => (i.graph.clone(), i.node),
        _ => {
            animation.stop_all();
            *playing = None;
            return;
        }
    };
    animation.stop_all();
    animation.play(node).repeat();
    if !settings.animation {
        animation.pause_all();
    }
    commands
        .entity(player.0)
        .insert(AnimationGraphHandle(graph));
    *playing = walk.then_some((player.0, true));
}

/// Measures the walk clip's speed on the feet as it plays: the foot moving back the fastest
/// relative to the character's root is the planted one (in double support both move back
/// together), and the speed is the median of its backward speed over the last 31 frames (a
/// frame across a heel strike or toe-off reads low, most frames read the planted foot).
fn measure_walk_speed(
    time: Res<Time>,
    demo: Res<TerrainDemo>,
    frame: Option<Res<BodyFrame>>,
    mut course: ResMut<Course>,
    characters: Query<(&GlobalTransform, &IkHumanoidBones), With<Character>>,
    feet: Query<&GlobalTransform>,
    mut last: Local<Option<[f32; 2]>>,
    mut samples: Local<(Vec<f32>, usize, Vec<f32>)>,
) {
    const WINDOW: usize = 31;
    let dt = time.delta_secs();
    let (Some(frame), true) = (frame, demo.terrain && demo.walk) else {
        *last = None;
        return;
    };
    let Ok((root, bones)) = characters.single() else {
        return;
    };
    let along = |role| {
        let foot = bones.get(role).and_then(|e| feet.get(e).ok())?;
        Some((foot.translation() - root.translation()).dot(frame.forward))
    };
    let (Some(l), Some(r)) = (
        along(HumanoidBone::LeftFoot),
        along(HumanoidBone::RightFoot),
    ) else {
        return;
    };
    if let Some([pl, pr]) = *last
        && dt > 0.0
    {
        let back = -((l - pl).min(r - pr)) / dt;
        if back.is_finite() && back > 0.0 && back < 4.0 * frame.scale {
            let (ring, next, sorted) = &mut *samples;
            if ring.len() < WINDOW {
                ring.push(back);
            } else {
                ring[*next % WINDOW] = back;
            }
            *next += 1;
            sorted.clear();
            sorted.extend_from_slice(ring);
            sorted.sort_by(f32::total_cmp);
            course.speed = sorted[sorted.len() / 2];
        }
    }
    *last = Some([l, r]);
}

/// Moves the course back under the walking character at the clip's speed, lifted as a
/// character controller carries the character (the mean height under its stride), and moves
/// the platform.
fn scroll_course(
    time: Res<Time>,
    demo: Res<TerrainDemo>,
    frame: Option<Res<BodyFrame>>,
    mut course: ResMut<Course>,
    mut terrain: Query<&mut Transform, With<Terrain>>,
    mut platforms: Query<(&Platform, &mut Transform), Without<Terrain>>,
) {
    let (Some(frame), true) = (frame, demo.terrain && demo.walk) else {
        return;
    };
    let s = frame.scale;
    let t = time.elapsed_secs();
    course.distance =
        (course.distance + course.speed * time.delta_secs()).rem_euclid(COURSE_LENGTH * s);
    let z = course.distance / s;
    let lift = (-6..=6)
        .map(|i| course_height(z + i as f32 * 0.05, t))
        .sum::<f32>()
        / 13.0;
    for mut tr in &mut terrain {
        tr.translation = frame.origin - frame.forward * course.distance - frame.up * lift * s;
    }
    for (platform, mut tr) in &mut platforms {
        tr.translation = platform.0.translation - Vec3::Y * platform_sink(t) * s;
    }
}

/// While walking, the character's hand, foot and pelvis targets follow its animated bones
/// (after the animation, before the IK), so the solver's stages keep the clip's motion and the
/// grounding stage puts the feet on the course.
fn follow_walk_clip(
    demo: Res<TerrainDemo>,
    clip: Option<Res<WalkClip>>,
    characters: Query<(Entity, &IkHumanoidTargets, &IkHumanoidBones), With<Character>>,
    mut set: ParamSet<(TransformHelper, Query<&mut Transform>)>,
    mut moves: Local<Vec<(Entity, Transform)>>,
) {
    if !(demo.terrain && demo.walk && clip.is_some()) {
        return;
    }
    let Ok((character, targets, bones)) = characters.single() else {
        return;
    };
    moves.clear();
    {
        let helper = set.p0();
        let Ok(root) = helper.compute_global_transform(character) else {
            return;
        };
        let to_root = root.affine().inverse();
        for (target, role) in [
            (targets.left_hand, HumanoidBone::LeftHand),
            (targets.right_hand, HumanoidBone::RightHand),
            (targets.left_foot, HumanoidBone::LeftFoot),
            (targets.right_foot, HumanoidBone::RightFoot),
            (targets.pelvis, HumanoidBone::Hips),
        ] {
            let (Some(target), Some(bone)) = (target, bones.get(role)) else {
                continue;
            };
            if let Ok(g) = helper.compute_global_transform(bone) {
                let local = Transform::from_matrix((to_root * g.affine()).into());
                moves.push((target, local));
            }
        }
    }
    let mut transforms = set.p1();
    for (e, t) in moves.drain(..) {
        if let Ok(mut current) = transforms.get_mut(e) {
            current.translation = t.translation;
            current.rotation = t.rotation;
        }
    }
}

/// Adds the grounding stage to the character (after its other stages) while the terrain is
/// on; `IkDisabled` on it when grounding is switched off.
fn sync_grounding(
    mut commands: Commands,
    demo: Res<TerrainDemo>,
    characters: Query<Entity, With<Character>>,
    stages: Query<(Entity, &IkStageOf, Has<IkDisabled>), With<DemoGrounding>>,
) {
    let Some(character) = characters.iter().next() else {
        return;
    };
    let mut found = false;
    for (e, of, disabled) in &stages {
        if of.0 != character || !demo.terrain {
            commands.entity(e).despawn();
            continue;
        }
        found = true;
        if disabled == demo.grounding {
            if demo.grounding {
                commands.entity(e).remove::<IkDisabled>();
            } else {
                commands.entity(e).insert(IkDisabled);
            }
        }
    }
    if demo.terrain && !found {
        commands.spawn((
            Name::new("foot grounding"),
            DemoGrounding,
            // The ground slides under the feet, so they are not locked in the world.
            IkGrounding {
                lock_feet: false,
                ..IkGrounding::humanoid()
            },
            IkStageOf(character),
        ));
    }
}

/// Slides the terrain left and right under the character (a 10 s cycle).
fn slide_terrain(
    time: Res<Time>,
    demo: Res<TerrainDemo>,
    frame: Option<Res<BodyFrame>>,
    mut terrain: Query<&mut Transform, With<Terrain>>,
) {
    let (Some(frame), true) = (frame, demo.slide && !demo.walk) else {
        return;
    };
    let x = (time.elapsed_secs() * core::f32::consts::TAU / 10.0).sin() * 0.35;
    for mut t in &mut terrain {
        t.translation = frame.origin + frame.left * x * frame.scale;
    }
}

/// Ankle goals (green on the ground, red lifted), ground normals and the pelvis offset.
fn draw_grounding(
    demo: Res<TerrainDemo>,
    mut gizmos: Gizmos,
    states: Query<(&IkGroundingState, Has<IkDisabled>), With<DemoGrounding>>,
    frame: Option<Res<BodyFrame>>,
) {
    if !(demo.terrain && demo.draw) {
        return;
    }
    let s = frame.map_or(1.0, |f| f.scale);
    for (state, disabled) in &states {
        if disabled {
            continue;
        }
        for f in state.feet.iter().filter(|f| f.grounded) {
            let color = Color::srgb(1.0 - f.weight, 0.3 + 0.7 * f.weight, 0.25);
            gizmos.sphere(Isometry3d::from_translation(f.goal), 0.025 * s, color);
            gizmos.arrow(f.goal, f.goal + f.normal * 0.15 * s, color);
        }
        let feet = state.feet.iter().map(|f| f.goal);
        let n = state.feet.len().max(1) as f32;
        let top = feet.sum::<Vec3>() / n + state.up * 0.95 * s;
        gizmos.arrow(top, top + state.pelvis_offset, Color::srgb(0.25, 0.55, 1.0));
        gizmos.line(
            top - state.up.any_orthonormal_vector() * 0.05 * s,
            top + state.up.any_orthonormal_vector() * 0.05 * s,
            Color::srgb(0.25, 0.55, 1.0),
        );
    }
}
