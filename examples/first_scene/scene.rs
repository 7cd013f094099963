//! The first scene, as a plugin: what a new user writes from the README and the rustdoc, and
//! what `examples/first_scene/main.rs` shows in a window and
//! `crates/bevy_ik/tests/integration/first_scene.rs` runs headless.
//!
//! - The bundled character (`character.glb`, [`IkHumanoid::limbs`]: a two-bone stage per limb) stands
//!   with its left foot on a step and its right foot on a ramp ([`IkGrounding::humanoid`],
//!   ground from the meshes marked [`IkGround`]);
//! - it looks at a ball that circles its head ([`IkLookAt`], a stage after the full body);
//! - its right hand reaches for a cup by role ([`IkReach::by_role`] on the humanoid's own
//!   right-hand target): the cup stands where this character's own arm reaches, in front of
//!   its right shoulder;
//! - a second character, the VRM 0.x avatar (`character_vrm0.vrm`, bones mapped from the
//!   file's humanoid table), is a VR body ([`IkVrBody`]) following three trackers that start
//!   on its head and hands and sway.
//!
//! [`FirstScene::keep_hand_on_cup`] puts [`IkKeepGoals`] on the right arm's stage: the
//! look-at's spine turn then cannot carry the hand off the cup — or the status says it did
//! ([`IkStatus::goals_moved`]). Without it, the arm's [`IkStatus`] says that the look-at moved
//! the hand, and by how much ([`IkStatus::final_position_residual`]).
//!
//! Only `bevy_ik` and Bevy's headless pieces (transforms, assets, glTF scenes, meshes as data):
//! the window, camera and materials are the example's.

use bevy::asset::Handle;
use bevy::gltf::GltfAssetLabel;
use bevy::mesh::{Mesh, Mesh3d, Meshable};
use bevy::prelude::*;
use bevy::world_serialization::{WorldAsset, WorldAssetRoot};
use bevy_ik::ik_core::humanoid::HumanoidBone;
use bevy_ik::prelude::*;

/// The scene's settings, and (once it is set up) its entities.
#[derive(Resource, Clone, Debug)]
pub struct FirstScene {
    /// Put [`IkKeepGoals`] on the full-body stage (see the module docs).
    pub keep_hand_on_cup: bool,
    /// Seconds for the hand to travel to the cup.
    pub reach_time: f32,
    /// The grounded character.
    pub character: Option<Entity>,
    /// The VR-body character.
    pub vr_character: Option<Entity>,
    /// The look-at stage.
    pub look_at: Option<Entity>,
    /// The right arm's stage (whose goal is the hand on the cup).
    pub right_arm: Option<Entity>,
    /// The grounding stage.
    pub grounding: Option<Entity>,
    /// The ball the character looks at.
    pub ball: Option<Entity>,
    /// The cup the right hand reaches for.
    pub cup: Option<Entity>,
    /// The VR trackers: head, left hand, right hand.
    pub trackers: Option<[Entity; 3]>,
    /// The trackers' start poses (they sway around them).
    pub tracker_homes: [Transform; 3],
    /// Where the ball circles: the character's head at set-up, the radius, and the body's
    /// forward and left directions.
    pub ball_orbit: Option<BallOrbit>,
}

impl Default for FirstScene {
    fn default() -> Self {
        Self {
            keep_hand_on_cup: true,
            reach_time: 0.5,
            character: None,
            vr_character: None,
            look_at: None,
            right_arm: None,
            grounding: None,
            ball: None,
            cup: None,
            trackers: None,
            tracker_homes: [Transform::IDENTITY; 3],
            ball_orbit: None,
        }
    }
}

/// Where the ball circles.
#[derive(Clone, Copy, Debug)]
pub struct BallOrbit {
    /// The centre: the head at set-up.
    pub center: Vec3,
    /// The radius.
    pub radius: f32,
    /// The body's forward direction.
    pub forward: Vec3,
    /// The body's left direction.
    pub left: Vec3,
}

/// Where the VR avatar stands beside the grounded character, in units of the grounded
/// character's height (its head's height at set-up): clear of its arms.
const VR_SPACING_HEIGHTS: f32 = 1.0;
/// The step's height under the left foot, as a fraction of the leg (hip to ankle): a stair
/// step for an adult (about 0.17 m on a 0.85 m leg).
const STEP_FRACTION_OF_LEG: f32 = 0.2;
/// The ramp's slope under the right foot (radians): a wheelchair ramp's 1:12 is 4.8°; twice that.
const RAMP_SLOPE: f32 = 0.17;
/// How far in front of the right shoulder the cup stands, as a fraction of the arm's length
/// (shoulder to wrist): comfortably within reach, elbow bent.
const CUP_REACH_FRACTION: f32 = 0.75;
/// The ball circles the head at this many arm lengths.
const BALL_ORBIT_ARMS: f32 = 1.5;
/// The ball swings this far to each side of straight ahead (radians): a head turn the
/// look-at's default yaw limits allow.
const BALL_SWING: f32 = core::f32::consts::FRAC_PI_4;
/// ... and bobs up and down by this fraction of its distance.
const BALL_BOB: f32 = 0.2;
/// One swing of the ball, seconds.
const BALL_PERIOD: f32 = 4.0;
/// The trackers sway this far (in units of the VR avatar's arm length) ...
const SWAY_ARMS: f32 = 0.15;
/// ... with this period, seconds.
const SWAY_PERIOD: f32 = 3.0;

/// Adds the first scene: spawns both characters (from `character.glb` and
/// `character_vrm0.vrm` in the asset folder), then, once each has spawned, the ground, the
/// stages, the ball, the cup and the trackers; moves the ball and the trackers every frame.
pub struct FirstScenePlugin;

impl Plugin for FirstScenePlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<FirstScene>()
            .add_systems(Startup, spawn_characters)
            .add_systems(
                Update,
                (set_up_grounded_character, set_up_vr_character, move_props),
            );
    }
}

fn spawn_characters(
    mut commands: Commands,
    assets: Res<AssetServer>,
    mut scene: ResMut<FirstScene>,
) {
    let load = |file: &str| -> Handle<WorldAsset> {
        assets.load(GltfAssetLabel::Scene(0).from_asset(file.to_owned()))
    };
    let character = commands
        .spawn((
            Name::new("grounded character"),
            WorldAssetRoot(load("character.glb")),
            Transform::default(),
            IkHumanoid::limbs(),
        ))
        .id();
    // No IkHumanoid: the VR body finds its bones by role through the VRM file's own table.
    let vr = commands
        .spawn((
            Name::new("VR avatar"),
            WorldAssetRoot(load("character_vrm0.vrm")),
            Transform::default(),
        ))
        .id();
    scene.character = Some(character);
    scene.vr_character = Some(vr);
}

/// Once the grounded character's humanoid is set up: the ground under its feet, the look-at,
/// the grounding, the ball and the cup, all sized from the character's own proportions.
fn set_up_grounded_character(
    mut commands: Commands,
    mut scene: ResMut<FirstScene>,
    humanoids: Query<(&IkHumanoidBones, &IkHumanoidTargets)>,
    globals: Query<&GlobalTransform>,
    mut meshes: Option<ResMut<Assets<Mesh>>>,
) {
    let Some(character) = scene.character.filter(|_| scene.look_at.is_none()) else {
        return;
    };
    let Ok((bones, targets)) = humanoids.get(character) else {
        return;
    };
    let at = |role| {
        bones
            .get(role)
            .and_then(|e| globals.get(e).ok())
            .map(GlobalTransform::translation)
    };
    let (
        Some(head),
        Some(shoulder),
        Some(elbow),
        Some(wrist),
        Some(hip),
        Some(left_ankle),
        Some(right_ankle),
    ) = (
        at(HumanoidBone::Head),
        at(HumanoidBone::RightUpperArm),
        at(HumanoidBone::RightLowerArm),
        at(HumanoidBone::RightHand),
        at(HumanoidBone::LeftUpperLeg),
        at(HumanoidBone::LeftFoot),
        at(HumanoidBone::RightFoot),
    )
    else {
        return;
    };
    let arm = shoulder.distance(elbow) + elbow.distance(wrist);
    let leg = hip.distance(left_ankle);
    // Forward: the body's, from the rest pose (left × up), never an axis convention.
    let left = (at(HumanoidBone::LeftUpperArm).unwrap_or(shoulder) - shoulder).normalize_or_zero();
    let forward = left.cross(Vec3::Y).normalize_or_zero();

    // Ground: a step under the left foot, a ramp under the right one.
    if let Some(meshes) = meshes.as_deref_mut() {
        let foot = leg * 0.5;
        let step_height = STEP_FRACTION_OF_LEG * leg;
        let step = meshes.add(Cuboid::new(foot, step_height, foot * 1.5).mesh());
        let ramp = meshes.add(Plane3d::default().mesh().size(foot * 2.0, foot * 3.0));
        let floor = meshes.add(Plane3d::default().mesh().size(leg * 8.0, leg * 8.0));
        commands.spawn((
            Name::new("step"),
            Mesh3d(step),
            Transform::from_translation(Vec3::new(left_ankle.x, step_height * 0.5, left_ankle.z)),
            IkGround,
        ));
        commands.spawn((
            Name::new("ramp"),
            Mesh3d(ramp),
            Transform::from_translation(Vec3::new(right_ankle.x, 0.0, right_ankle.z))
                .with_rotation(Quat::from_axis_angle(left, RAMP_SLOPE)),
            IkGround,
        ));
        commands.spawn((
            Name::new("floor"),
            Mesh3d(floor),
            Transform::default(),
            IkGround,
        ));
    }

    let grounding = commands
        .spawn((
            Name::new("grounding"),
            IkGrounding::humanoid(),
            IkStageOf(character),
        ))
        .id();
    let orbit = BallOrbit {
        center: head,
        radius: BALL_ORBIT_ARMS * arm,
        forward,
        left,
    };
    let ball = commands
        .spawn((
            Name::new("ball"),
            Transform::from_translation(head + forward * orbit.radius),
        ))
        .id();
    let look_at = commands
        .spawn((
            Name::new("look-at"),
            IkLookAt::at(ball),
            IkStageOf(character),
        ))
        .id();
    let cup = commands
        .spawn((
            Name::new("cup"),
            Transform::from_translation(shoulder + forward * (CUP_REACH_FRACTION * arm)),
        ))
        .id();
    if let Some(hand_target) = targets.right_hand {
        let mut reach = IkReach::by_role(character, HumanoidBone::RightHand, cup);
        reach.duration = scene.reach_time;
        commands.entity(hand_target).insert(reach);
    }
    // The humanoid's limb stages: left arm, right arm, left leg, right leg.
    let right_arm = targets.limbs.get(1).copied();
    if scene.keep_hand_on_cup
        && let Some(arm) = right_arm
    {
        commands.entity(arm).insert(IkKeepGoals);
    }
    scene.right_arm = right_arm;
    scene.grounding = Some(grounding);
    scene.look_at = Some(look_at);
    scene.ball = Some(ball);
    scene.cup = Some(cup);
    scene.ball_orbit = Some(orbit);
}

/// Once the VRM avatar's scene has spawned (its bones carry the file's role tags): three
/// trackers on its head and hands, and the VR body.
fn set_up_vr_character(
    mut commands: Commands,
    mut scene: ResMut<FirstScene>,
    mut roots: Query<&mut Transform>,
    tags: Query<(Entity, &IkHumanoidBone)>,
    parents: Query<&ChildOf>,
    globals: Query<&GlobalTransform>,
) {
    let (Some(vr), None) = (scene.vr_character, scene.trackers) else {
        return;
    };
    let find = |role: HumanoidBone| {
        tags.iter()
            .filter(|(_, t)| t.role() == Some(role))
            .map(|(e, _)| e)
            .find(|&e| parents.iter_ancestors(e).any(|a| a == vr))
    };
    let roles = [
        HumanoidBone::Head,
        HumanoidBone::LeftHand,
        HumanoidBone::RightHand,
    ];
    let Some(bones) = roles.iter().map(|&r| find(r)).collect::<Option<Vec<_>>>() else {
        return;
    };
    // Beside the grounded character, one of its heights away (its head's height).
    let Some(height) = scene.ball_orbit.map(|o| o.center.y) else {
        return;
    };
    let offset = Vec3::X * (VR_SPACING_HEIGHTS * height);
    if let Ok(mut t) = roots.get_mut(vr) {
        t.translation = offset;
    }
    let mut homes = [Transform::IDENTITY; 3];
    let mut trackers = [Entity::PLACEHOLDER; 3];
    for (i, &bone) in bones.iter().enumerate() {
        let Ok(g) = globals.get(bone) else { return };
        // (The root's move above is not propagated yet: add it.)
        let mut t = g.compute_transform();
        t.translation += offset;
        t.scale = Vec3::ONE;
        homes[i] = t;
        trackers[i] = commands.spawn((Name::new("tracker"), t)).id();
    }
    commands
        .entity(vr)
        .insert(IkVrBody::new(trackers[0], trackers[1], trackers[2]));
    scene.trackers = Some(trackers);
    scene.tracker_homes = homes;
}

/// The ball circles the head; the trackers sway (the VR player breathing and shifting).
fn move_props(scene: Res<FirstScene>, time: Res<Time>, mut transforms: Query<&mut Transform>) {
    let t = time.elapsed_secs();
    if let (Some(ball), Some(o)) = (scene.ball, scene.ball_orbit)
        && let Ok(mut tr) = transforms.get_mut(ball)
    {
        let a = core::f32::consts::TAU * t / BALL_PERIOD;
        // In front of the face, side to side (a quarter turn each way) and a little up and
        // down.
        let side = BALL_SWING * a.sin();
        tr.translation = o.center
            + o.radius
                * (o.forward * side.cos() + o.left * side.sin() + Vec3::Y * BALL_BOB * a.cos());
    }
    if let Some(trackers) = scene.trackers {
        let arm = scene.tracker_homes[1]
            .translation
            .distance(scene.tracker_homes[0].translation);
        let s = (core::f32::consts::TAU * t / SWAY_PERIOD).sin() * SWAY_ARMS * arm;
        for (i, &e) in trackers.iter().enumerate() {
            if let Ok(mut tr) = transforms.get_mut(e) {
                tr.translation = scene.tracker_homes[i].translation + Vec3::new(s, 0.0, s * 0.5);
            }
        }
    }
}
