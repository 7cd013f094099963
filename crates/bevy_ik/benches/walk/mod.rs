//! The crowd benches' walk cycle (shared by `crowd.rs` and `grounding_crowd.rs`): the 21-bone
//! bench humanoid as an ik-core skeleton, its walk-cycle targets computed once by forward
//! kinematics of in-limit joint angles, and the system that moves every character's targets
//! along the cycle each frame.

use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy_ik::ik_core::humanoid::{FullBodySolver, HumanoidBone, HumanoidMap};
use bevy_ik::ik_core::limits::JointLimit;
use bevy_ik::ik_core::skeleton::Bone;
use bevy_ik::ik_core::{BoneTransform, Skeleton};
use bevy_ik::prelude::IkHumanoidTargets;

use super::common::{MIXAMO_NAMES as NAMES, POSITIONS};

/// Frames in one walk cycle (one second at 60 fps).
pub const CYCLE: usize = 60;

/// Target transforms (character frame) for every frame of the walk cycle: left hand, right
/// hand, left foot, right foot, pelvis, look-at point; and where the walk pose has the left and
/// right upper arms and the head (character frame), for goals made relative to them.
#[derive(Resource)]
pub struct WalkCycle(Vec<[Transform; 6]>, Vec<[Vec3; 3]>);

impl WalkCycle {
    /// The left upper arm's, the right upper arm's and the head's positions in the walk pose
    /// of frame `f` of the cycle.
    #[allow(dead_code, reason = "used by the crowd bench, not the grounding one")]
    pub fn anchors(&self, f: usize) -> [Vec3; 3] {
        self.1[f % CYCLE]
    }
}

/// Which of a character's six targets this is (index into a [`WalkCycle`] frame) and the
/// character's phase in the cycle.
#[derive(Component)]
pub struct Track {
    pub slot: usize,
    pub phase: usize,
}

#[derive(Resource, Default)]
pub struct Frame(pub usize);

/// Moves every character's targets one frame along the cycle (`IK_STILL`: they stay).
pub fn move_targets(
    mut frame: ResMut<Frame>,
    cycle: Res<WalkCycle>,
    mut targets: Query<(&Track, &mut Transform)>,
) {
    if std::env::var("IK_STILL").is_ok() {
        return;
    }
    frame.0 += 1;
    let f = frame.0;
    targets.par_iter_mut().for_each(|(track, mut tr)| {
        *tr = cycle.0[(f + track.phase) % CYCLE][track.slot];
    });
}

/// The bench humanoid as an ik-core skeleton (model space = the character's frame).
pub fn bench_skeleton() -> Skeleton {
    let bones = POSITIONS
        .iter()
        .zip(NAMES)
        .map(|(&(parent, p), name)| {
            let parent_pos = parent.map_or(Vec3::ZERO, |j| Vec3::from(POSITIONS[j].1));
            Bone::new(
                name,
                parent,
                BoneTransform::from_translation(Vec3::from(p) - parent_pos),
            )
        })
        .collect();
    Skeleton::try_new(bones).expect("the bench rig is valid")
}

/// The walk cycle's targets (see the module docs), each frame's pose checked against the
/// solver's limits.
pub fn walk_cycle() -> WalkCycle {
    let skeleton = bench_skeleton();
    let (map, _) = HumanoidMap::from_skeleton(&skeleton);
    let mut solver = FullBodySolver::new(&skeleton, &map).expect("the bench rig maps");
    let rest = skeleton.rest_pose();
    let deg = f32::to_radians;
    // Flexion about the elbow's and knee's own hinge axes (positive = anatomical).
    let limits = solver.limits().clone();
    let hinge = |role: HumanoidBone, degrees: f32| match limits.get(role) {
        JointLimit::Hinge { axis, .. } => Quat::from_axis_angle(axis, deg(degrees)),
        other => panic!("{role:?} is a hinge, not {other:?}"),
    };
    let [l_elbow, r_elbow, l_knee, r_knee] = [
        HumanoidBone::LeftLowerArm,
        HumanoidBone::RightLowerArm,
        HumanoidBone::LeftLowerLeg,
        HumanoidBone::RightLowerLeg,
    ];
    let mut anchors = Vec::with_capacity(CYCLE);
    let frames = (0..CYCLE)
        .map(|f| {
            let a = f as f32 / CYCLE as f32 * std::f32::consts::TAU;
            let (s, c) = a.sin_cos();
            let mut pose = rest.clone();
            let r = &mut pose.rotations;
            pose.translations[0] += Vec3::new(0.02 * s, 0.01 * (2.0 * a).cos() - 0.02, 0.0);
            r[0] = Quat::from_rotation_y(deg(5.0) * s);
            r[2] = Quat::from_rotation_y(deg(-8.0) * s);
            r[4] = Quat::from_rotation_y(deg(10.0) * c);
            // Arms hang (about the body's forward axis) and swing against the legs.
            r[6] = Quat::from_rotation_x(deg(25.0) * s) * Quat::from_rotation_z(deg(-70.0));
            r[10] = Quat::from_rotation_x(deg(-25.0) * s) * Quat::from_rotation_z(deg(70.0));
            r[7] = hinge(l_elbow, 30.0 - 15.0 * s);
            r[11] = hinge(r_elbow, 30.0 + 15.0 * s);
            // Legs: hip flexion, knee bend in the swing phase, a little ankle.
            r[13] = Quat::from_rotation_x(deg(-25.0) * s);
            r[17] = Quat::from_rotation_x(deg(25.0) * s);
            r[14] = hinge(l_knee, 5.0 + 40.0 * c.max(0.0));
            r[18] = hinge(r_knee, 5.0 + 40.0 * (-c).max(0.0));
            r[15] = Quat::from_rotation_x(deg(-10.0) * c);
            r[19] = Quat::from_rotation_x(deg(10.0) * c);
            assert!(
                solver.pose_within_limits(&skeleton, &pose, 1e-4),
                "walk-cycle frame {f} is within the limits"
            );
            let model = skeleton.model_transforms(&pose);
            anchors.push([6, 10, 4].map(|b| model[b].translation));
            let goals = solver.goals_at_pose(&skeleton, &pose);
            let t = |g: usize| {
                let e = &goals.effectors[g];
                Transform::from_translation(e.position).with_rotation(e.rotation)
            };
            [
                t(0),
                t(1),
                t(2),
                t(3),
                t(4),
                Transform::from_translation(goals.look_at.target),
            ]
        })
        .collect();
    WalkCycle(frames, anchors)
}

/// The bench humanoid's bones under `root`, unrotated and named as Mixamo's, parents first.
pub fn spawn_bones(world: &mut World, root: Entity) {
    let mut bones: Vec<Entity> = Vec::new();
    for (i, &(parent, p)) in POSITIONS.iter().enumerate() {
        let parent_pos = parent.map_or(Vec3::ZERO, |j| Vec3::from(POSITIONS[j].1));
        let parent_entity = parent.map_or(root, |j| bones[j]);
        bones.push(
            world
                .spawn((
                    Name::new(NAMES[i]),
                    Transform::from_translation(Vec3::from(p) - parent_pos),
                    ChildOf(parent_entity),
                ))
                .id(),
        );
    }
}

/// Task pools that give compute every core (Bevy's defaults give IO and async compute one
/// thread each first: on a 2-core machine compute would get one).
pub fn compute_on_every_core() -> TaskPoolOptions {
    let mut pools = TaskPoolOptions::default();
    pools.compute.min_threads =
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    pools
}

/// A character's walk targets, in the order of a [`WalkCycle`] frame (the slot of its
/// [`Track`]), those it has.
pub fn walk_targets(t: &IkHumanoidTargets) -> impl Iterator<Item = (usize, Entity)> {
    [
        t.left_hand,
        t.right_hand,
        t.left_foot,
        t.right_foot,
        t.pelvis,
        t.head,
    ]
    .into_iter()
    .enumerate()
    .filter_map(|(slot, e)| Some((slot, e?)))
}

/// Median wall time of one frame over `frames` frames.
pub fn median_frame(app: &mut App, frames: usize) -> Duration {
    let mut times: Vec<Duration> = (0..frames)
        .map(|_| {
            let start = Instant::now();
            app.update();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}
